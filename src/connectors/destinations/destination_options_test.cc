#include "connectors/destinations/destination_options.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

FieldSpec TableDeclaration() {
  return Option::Object("config", {Option::String("schema", "Schema.").Default("main"),
                                   Option::String("table", "Table.")});
}

TEST(DestinationOptionsTest, CommonKeysOfAnUnvalidatedBlockAreTheDeclaredDefaults) {
  CommonDestinationOptions options = ReadCommonDestinationOptions(Value::EmptyMap());
  EXPECT_EQ(options.destination_id, "");
  EXPECT_FALSE(options.unnest);
  EXPECT_EQ(options.max_concurrent_threads, 10);
}

TEST(DestinationOptionsTest, CommonKeysAreReadFromTheBlock) {
  Value block(Value::Map{{"destination_id", "users"},
                         {"unnest", true},
                         {"max_concurrent_threads", Value(int64_t{3})}});
  CommonDestinationOptions options = ReadCommonDestinationOptions(block);
  EXPECT_EQ(options.destination_id, "users");
  EXPECT_TRUE(options.unnest);
  EXPECT_EQ(options.max_concurrent_threads, 3);
}

TEST(DestinationOptionsTest, AnEmptySchemaIsTheDeclaredDefaultAndTableFallsBackToDestinationId) {
  Value block(Value::Map{{"schema", ""}, {"destination_id", "users"}});
  Result<TableOptions> options = ReadTableOptions(TableDeclaration(), block);
  ASSERT_TRUE(options.has_value()) << options.error().message();
  EXPECT_EQ(options->schema, "main");
  EXPECT_EQ(options->table, "users");
  EXPECT_FALSE(options->unnest);
}

TEST(DestinationOptionsTest, TableWinsOverDestinationId) {
  Value block(Value::Map{{"schema", "raw"}, {"table", "events"}, {"destination_id", "users"}});
  Result<TableOptions> options = ReadTableOptions(TableDeclaration(), block);
  ASSERT_TRUE(options.has_value()) << options.error().message();
  EXPECT_EQ(options->schema, "raw");
  EXPECT_EQ(options->table, "events");
}

TEST(DestinationOptionsTest, ADeclarationWithoutSchemaIsAReaderBug) {
  Result<TableOptions> options =
      ReadTableOptions(Option::Object("config", {Option::String("table")}), Value::EmptyMap());
  ASSERT_FALSE(options.has_value());
  EXPECT_EQ(options.error().code(), StatusCode::kInternal);
  EXPECT_NE(options.error().message().find("schema"), std::string::npos);
}

TEST(DestinationOptionsTest, StringOrEmptyReadsAnOptionWithoutADefault) {
  OptionReader unset(TableDeclaration(), Value::EmptyMap());
  EXPECT_EQ(StringOrEmpty(unset, "table"), "");
  EXPECT_TRUE(unset.status().ok());
  OptionReader set(TableDeclaration(), Value(Value::Map{{"table", "events"}}));
  EXPECT_EQ(StringOrEmpty(set, "table"), "events");
}

}  // namespace
}  // namespace bizon
