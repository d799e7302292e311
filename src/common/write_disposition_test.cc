#include "common/write_disposition.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

Value Config(Value::Map entries) { return Value(std::move(entries)); }

Value StringList(std::initializer_list<const char*> items) {
  Value::List list;
  for (const char* item : items) list.push_back(Value(item));
  return Value(std::move(list));
}

TEST(TablePoliciesTest, UnsetOptionsAppendWithTheExactContract) {
  auto policies = ReadTablePolicies(Value::EmptyMap());
  ASSERT_TRUE(policies.has_value());
  const TablePolicy& policy = policies->For("anything");
  EXPECT_EQ(policy.disposition, WriteDisposition::kAppend);
  EXPECT_EQ(policy.contract, SchemaContract::kExact);
  EXPECT_FALSE(policies->AnyMerge());
  EXPECT_FALSE(policies->AnyContract());
}

TEST(TablePoliciesTest, AnEntryOverridesTheDestinationWideOptions) {
  Value entry = Config({{"destination_id", Value("audit")},
                        {"write_disposition", Value("append")},
                        {"schema_contract", Value("freeze")}});
  Value config =
      Config({{"write_disposition", Value("merge")},
              {"primary_key", StringList({"id", "region"})},
              {"merge_strategy", Value("upsert")},
              {"hard_delete", Value("$.meta.deleted")},
              {"dedup_sort", Config({{"column", Value("version")}, {"order", Value("asc")}})},
              {"record_schemas", Value(Value::List{entry})}});
  auto policies = ReadTablePolicies(config);
  ASSERT_TRUE(policies.has_value()) << policies.error().message();
  const TablePolicy& users = policies->For("users");
  EXPECT_TRUE(users.merges());
  EXPECT_EQ(users.primary_key, (std::vector<std::string>{"id", "region"}));
  EXPECT_EQ(users.strategy, MergeStrategy::kUpsert);
  EXPECT_EQ(users.hard_delete, (std::vector<std::string>{"meta", "deleted"}));
  ASSERT_TRUE(users.dedup_sort.has_value());
  EXPECT_EQ(users.dedup_sort->column, "version");
  EXPECT_FALSE(users.dedup_sort->descending);

  const TablePolicy& audit = policies->For("audit");
  EXPECT_EQ(audit.disposition, WriteDisposition::kAppend);
  EXPECT_EQ(audit.contract, SchemaContract::kFreeze);
  EXPECT_EQ(audit.primary_key, users.primary_key);  // Inherited, unused by an append.
  EXPECT_TRUE(policies->AnyMerge());
  EXPECT_TRUE(policies->AnyContract());
}

TEST(TablePoliciesTest, AMergeWithoutAKeyIsRefusedWithItsPath) {
  auto policies = ReadTablePolicies(Config({{"write_disposition", Value("merge")}}));
  ASSERT_FALSE(policies.has_value());
  EXPECT_EQ(policies.error().failure_class(), FailureClass::kConfig);
  EXPECT_NE(policies.error().message().find("destination.config.write_disposition"),
            std::string::npos);
  EXPECT_NE(policies.error().message().find("needs a primary_key"), std::string::npos);
}

TEST(TablePoliciesTest, TheKeyRuleIsReportedAtTheEntryThatLacksIt) {
  Value keyed = Config({{"destination_id", Value("a")}, {"primary_key", StringList({"id"})}});
  Value keyless = Config({{"destination_id", Value("b")}});
  Value config = Config({{"write_disposition", Value("merge")},
                         {"record_schemas", Value(Value::List{keyed, keyless})}});
  std::vector<ConfigRuleViolation> violations = CheckTablePolicies(config, SyncMode::kIncremental);
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].path, "record_schemas[1].write_disposition");
}

TEST(TablePoliciesTest, AStreamCannotBeReplacedNorDeleteWithoutMerge) {
  std::vector<ConfigRuleViolation> replace =
      CheckTablePolicies(Config({{"write_disposition", Value("replace")}}), SyncMode::kStream);
  ASSERT_EQ(replace.size(), 1u);
  EXPECT_NE(replace[0].message.find("never ends"), std::string::npos);
  EXPECT_TRUE(
      CheckTablePolicies(Config({{"write_disposition", Value("replace")}}), SyncMode::kIncremental)
          .empty());

  std::vector<ConfigRuleViolation> deletes =
      CheckTablePolicies(Config({{"hard_delete", Value("deleted")}}), SyncMode::kIncremental);
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].path, "hard_delete");
}

TEST(TablePoliciesTest, DeleteMarksAreTrueOrTheStringTrue) {
  EXPECT_TRUE(IsDeleteMark("true"));
  EXPECT_TRUE(IsDeleteMark("true \n"));
  EXPECT_TRUE(IsDeleteMark("\"true\""));
  EXPECT_TRUE(IsDeleteMark("\"TRUE\""));
  EXPECT_FALSE(IsDeleteMark("false"));
  EXPECT_FALSE(IsDeleteMark("\"false\""));
  EXPECT_FALSE(IsDeleteMark("1"));
  EXPECT_FALSE(IsDeleteMark("\"truer\""));
  EXPECT_FALSE(IsDeleteMark(""));
}

TEST(TablePoliciesTest, FieldPathsSplitOnDots) {
  EXPECT_EQ(SplitFieldPath("deleted"), (std::vector<std::string>{"deleted"}));
  EXPECT_EQ(SplitFieldPath("$.a.b"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(SplitFieldPath("a..b"), (std::vector<std::string>{"a", "", "b"}));
}

}  // namespace
}  // namespace bizon
