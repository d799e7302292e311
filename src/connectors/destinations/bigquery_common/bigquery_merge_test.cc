// Change rows (plain records, Debezium events in every shape the kafka source and converters
// give, hard deletes) and the MERGE statements: their text, and what they do to a table in the
// BigQuery emulator (both strategies, a composite key, dedup_sort both ways, deletes).
#include "connectors/destinations/bigquery_common/bigquery_merge.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "bizon/clock.h"
#include "google/google_test_support.h"

namespace bizon {
namespace {

TablePolicy Merge(std::vector<std::string> key, MergeStrategy strategy = MergeStrategy::kUpsert) {
  TablePolicy policy;
  policy.disposition = WriteDisposition::kMerge;
  policy.primary_key = std::move(key);
  policy.strategy = strategy;
  return policy;
}

TablePolicy Debezium() {
  TablePolicy policy = Merge({"id"});
  policy.change_format = ChangeFormat::kDebezium;
  return policy;
}

ChangeRow Read(std::string_view payload, const TablePolicy& policy) {
  auto read = ReadChangeRow(payload, "r1", policy);
  EXPECT_TRUE(read) << read.error().ToString();
  EXPECT_TRUE(read && read->has_value()) << payload;
  return read && *read ? **read : ChangeRow{};
}

TEST(ReadChangeRowTest, APlainRecordIsItsRow) {
  ChangeRow row = Read(R"({"id":1,"name":"a"})", Merge({"id"}));
  EXPECT_EQ(row.row.ToJson(), R"({"id":1,"name":"a"})");
  EXPECT_FALSE(row.deleted);
  EXPECT_FALSE(row.kafka_position);
}

TEST(ReadChangeRowTest, HardDeleteMarksTheKeyDeleted) {
  TablePolicy policy = Merge({"id"});
  policy.hard_delete = {"deleted"};
  EXPECT_TRUE(Read(R"({"id":1,"deleted":true})", policy).deleted);
  EXPECT_TRUE(Read(R"({"id":1,"deleted":"TRUE"})", policy).deleted);
  EXPECT_FALSE(Read(R"({"id":1,"deleted":false})", policy).deleted);
  EXPECT_FALSE(Read(R"({"id":1,"deleted":1})", policy).deleted);
  EXPECT_FALSE(Read(R"({"id":1})", policy).deleted);
  policy.hard_delete = {"meta", "deleted"};
  EXPECT_TRUE(Read(R"({"id":1,"meta":{"deleted":true}})", policy).deleted);
  EXPECT_FALSE(Read(R"({"id":1,"meta":"deleted"})", policy).deleted);
}

TEST(ReadChangeRowTest, DebeziumEventsFromTheKafkaSource) {
  std::string kafka = R"({"topic":"db.users","offset":41,"partition":2,"timestamp":1,"keys":{},
      "headers":{},"value":{"op":"u","before":{"id":7,"name":"a"},"after":{"id":7,"name":"b"},
      "source":{"lsn":1}},"schema":{}})";
  ChangeRow update = Read(kafka, Debezium());
  EXPECT_EQ(update.row.ToJson(), R"({"id":7,"name":"b"})");
  EXPECT_FALSE(update.deleted);
  ASSERT_TRUE(update.kafka_position);
  EXPECT_EQ(update.kafka_position->first, 2);
  EXPECT_EQ(update.kafka_position->second, 41);

  ChangeRow removed = Read(
      R"({"topic":"t","offset":42,"partition":2,"value":{"op":"d","before":{"id":7},"after":null}})",
      Debezium());
  EXPECT_EQ(removed.row.ToJson(), R"({"id":7})");
  EXPECT_TRUE(removed.deleted);
  for (std::string_view op : {"c", "r"}) {
    ChangeRow created =
        Read(fmt::format(R"({{"op":"{}","before":null,"after":{{"id":1}},"source":{{}}}})", op),
             Debezium());
    EXPECT_EQ(created.row.ToJson(), R"({"id":1})");
    EXPECT_FALSE(created.deleted);
  }
  // A JSON converter with schemas on.
  ChangeRow wrapped =
      Read(R"({"schema":{"type":"struct"},"payload":{"op":"c","after":{"id":3}}})", Debezium());
  EXPECT_EQ(wrapped.row.ToJson(), R"({"id":3})");
  // The kafka record of a converter with schemas on.
  ChangeRow both = Read(
      R"({"topic":"t","offset":1,"partition":0,"value":{"schema":{},"payload":{"op":"d","before":{"id":4}}}})",
      Debezium());
  EXPECT_TRUE(both.deleted);
  EXPECT_EQ(both.row.ToJson(), R"({"id":4})");
}

TEST(ReadChangeRowTest, TombstonesWriteNothingAndOtherEventsAreRefused) {
  auto tombstone =
      ReadChangeRow(R"({"topic":"t","offset":3,"partition":0,"value":null})", "r9", Debezium());
  ASSERT_TRUE(tombstone) << tombstone.error().ToString();
  EXPECT_FALSE(tombstone->has_value());

  auto truncate = ReadChangeRow(R"({"op":"t","source":{}})", "r9", Debezium());
  ASSERT_FALSE(truncate);
  EXPECT_EQ(truncate.error().failure_class(), FailureClass::kDestination);
  EXPECT_NE(truncate.error().message().find("record 'r9'"), std::string::npos)
      << truncate.error().message();
  EXPECT_NE(truncate.error().message().find("op c, r, u or d, this one 't'"), std::string::npos);

  auto no_image = ReadChangeRow(R"({"op":"d","before":null})", "r9", Debezium());
  ASSERT_FALSE(no_image);
  EXPECT_NE(no_image.error().message().find("no before image"), std::string::npos);
  auto not_object = ReadChangeRow("[1]", "r9", Merge({"id"}));
  ASSERT_FALSE(not_object);
  EXPECT_NE(not_object.error().message().find("not a JSON object"), std::string::npos);
}

std::vector<BqColumn> MergeColumns() {
  return {{"id", BqColumnType::kInteger, BqColumnMode::kRequired, ""},
          {"name", BqColumnType::kString, BqColumnMode::kNullable, ""},
          {"version", BqColumnType::kInteger, BqColumnMode::kNullable, ""}};
}

TEST(MergeStatementTest, StagingColumnsAddTheOrdinalAndTheDeleteFlagAndTakeKeyOnlyDeletes) {
  std::vector<BqColumn> staging = MergeStagingColumns(MergeColumns());
  ASSERT_EQ(staging.size(), 5u);
  EXPECT_EQ(staging[3].name, "_bizon_ordinal");
  EXPECT_EQ(staging[3].type, BqColumnType::kInteger);
  EXPECT_EQ(staging[4].name, "_bizon_deleted");
  EXPECT_EQ(staging[4].type, BqColumnType::kBoolean);
  // A delete's image may hold its key only (a Debezium before image under REPLICA IDENTITY
  // DEFAULT): the staging table takes it; the MERGE inserts no delete.
  EXPECT_EQ(staging[0].mode, BqColumnMode::kNullable);
  EXPECT_EQ(staging[3].mode, BqColumnMode::kRequired);
}

TEST(MergeStatementTest, UpsertAndDeleteInsertText) {
  BigQueryTableRef target{.project = "p", .dataset = "d", .table = "t"};
  BigQueryTableRef staging{.project = "p", .dataset = "d", .table = "t__m"};
  TablePolicy upsert = Merge({"id"});
  upsert.dedup_sort = DedupSort{.column = "version", .descending = true};
  auto sql = MergeStatement(target, staging, MergeColumns(), upsert);
  ASSERT_TRUE(sql) << sql.error().ToString();
  EXPECT_EQ(*sql,
            "MERGE `p.d.t` AS target USING (SELECT * FROM `p.d.t__m` WHERE TRUE QUALIFY "
            "ROW_NUMBER() OVER (PARTITION BY `id` ORDER BY `version` DESC NULLS LAST, "
            "`_bizon_ordinal` DESC) = 1) AS source ON target.`id` = source.`id` WHEN MATCHED AND "
            "source.`_bizon_deleted` THEN DELETE WHEN MATCHED THEN UPDATE SET `name` = "
            "source.`name`, `version` = source.`version` WHEN NOT MATCHED AND NOT "
            "source.`_bizon_deleted` THEN INSERT (`id`, `name`, `version`) VALUES (source.`id`, "
            "source.`name`, source.`version`)");

  auto composite = MergeStatement(target, staging, MergeColumns(),
                                  Merge({"id", "name"}, MergeStrategy::kDeleteInsert));
  ASSERT_TRUE(composite) << composite.error().ToString();
  EXPECT_NE(composite->find("PARTITION BY `id`, `name` ORDER BY `_bizon_ordinal` DESC"),
            std::string::npos)
      << *composite;
  EXPECT_NE(composite->find("ON target.`id` = source.`_bizon_key_0` AND target.`name` = "
                            "source.`_bizon_key_1` WHEN MATCHED THEN DELETE"),
            std::string::npos)
      << *composite;
  EXPECT_NE(composite->find("CAST(NULL AS INT64), CAST(NULL AS STRING)"), std::string::npos);

  auto unknown = MergeStatement(target, staging, MergeColumns(), Merge({"key"}));
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message().find("primary_key: 'key' is not a column"),
            std::string::npos);
}

// ---- against the BigQuery emulator ---------------------------------------------------------

class MergeEmulatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv("BIGQUERY_EMULATOR_HOST") == nullptr) return;
    auto client = BigQueryClient::Make({.project = "test-project"});
    ASSERT_TRUE(client) << client.error().ToString();
    client_ = std::move(*client);
    static std::atomic<int> counter{0};
    dataset_ = fmt::format("merge_{}_{}_{}", getpid(), NowMicros() % 1000000000, ++counter);
    ASSERT_TRUE(client_->InsertDataset({.dataset = dataset_}));
  }
  void TearDown() override {
    if (client_) (void)client_->DeleteDataset("test-project", dataset_, true, true);
  }

  BigQueryTableRef Ref(std::string table) const {
    return {.project = "test-project", .dataset = dataset_, .table = std::move(table)};
  }

  void Run(const std::string& sql) {
    auto done =
        client_->RunQuery({.job_id = BigQueryClient::RandomJobId("merge_test")}, {.query = sql});
    ASSERT_TRUE(done) << done.error().ToString() << "\n" << sql;
  }

  /// id:name:version of every row, ordered.
  std::vector<std::string> Rows() {
    auto found = client_->RunQuery(
        {.job_id = BigQueryClient::RandomJobId("merge_test")},
        {.query = fmt::format("SELECT id, name, version FROM `{}` ORDER BY id, name",
                              Ref("t").ToString())});
    EXPECT_TRUE(found) << found.error().ToString();
    std::vector<std::string> out;
    for (const BigQueryRow& row : found ? found->rows : std::vector<BigQueryRow>{}) {
      out.push_back(fmt::format("{}:{}:{}", row[0].ToDisplayString(), row[1].ToDisplayString(),
                                row[2].ToDisplayString()));
    }
    return out;
  }

  /// A target holding 1, 2, 3 (twice), and a staging table with the given rows
  /// (id, name, version, ordinal, deleted).
  void Tables(const std::string& staged) {
    Run(fmt::format("CREATE TABLE `{}` (id INT64, name STRING, version INT64)",
                    Ref("t").ToString()));
    Run(
        fmt::format("INSERT INTO `{}` VALUES (1, 'one', 1), (2, 'two', 1), (3, 'three', 1), "
                    "(3, 'three-again', 1)",
                    Ref("t").ToString()));
    Run(
        fmt::format("CREATE TABLE `{}` (id INT64, name STRING, version INT64, _bizon_ordinal "
                    "INT64, _bizon_deleted BOOL)",
                    Ref("s").ToString()));
    Run(fmt::format("INSERT INTO `{}` VALUES {}", Ref("s").ToString(), staged));
  }

  void Merge(const TablePolicy& policy) {
    auto sql = MergeStatement(Ref("t"), Ref("s"), MergeColumns(), policy);
    ASSERT_TRUE(sql) << sql.error().ToString();
    Run(*sql);
  }

  std::unique_ptr<BigQueryClient> client_;
  std::string dataset_;
};

// Key 1 updated twice in the load (the last wins), 2 deleted, 3 updated (its two rows), 4
// inserted, 5 inserted then deleted in the same load.
constexpr std::string_view kLoad =
    "(1, 'one-a', 5, 0, false), (1, 'one-b', 2, 1, false), (2, NULL, NULL, 2, true), "
    "(3, 'three-b', 2, 3, false), (4, 'four', 1, 4, false), (5, 'five', 1, 5, false), "
    "(5, NULL, NULL, 6, true)";

TEST_F(MergeEmulatorTest, UpsertKeepsTheLastRowOfAKeyAndAppliesDeletes) {
  BIZON_REQUIRE_BIGQUERY_EMULATOR();
  Tables(std::string(kLoad));
  Merge(bizon::Merge({"id"}, MergeStrategy::kUpsert));
  // Upsert updates both rows of key 3.
  EXPECT_EQ(Rows(),
            (std::vector<std::string>{"1:one-b:2", "3:three-b:2", "3:three-b:2", "4:four:1"}));
}

TEST_F(MergeEmulatorTest, DeleteInsertReplacesEveryRowOfAKey) {
  BIZON_REQUIRE_BIGQUERY_EMULATOR();
  Tables(std::string(kLoad));
  Merge(bizon::Merge({"id"}, MergeStrategy::kDeleteInsert));
  EXPECT_EQ(Rows(), (std::vector<std::string>{"1:one-b:2", "3:three-b:2", "4:four:1"}));
}

TEST_F(MergeEmulatorTest, DedupSortPicksTheWinnerBothWays) {
  BIZON_REQUIRE_BIGQUERY_EMULATOR();
  Tables(std::string(kLoad));
  TablePolicy policy = bizon::Merge({"id"}, MergeStrategy::kDeleteInsert);
  policy.dedup_sort = DedupSort{.column = "version", .descending = true};
  Merge(policy);
  // Key 1: version 5 beats the later version 2. Key 5: the delete (version NULL) sorts last,
  // so the insert wins.
  EXPECT_EQ(Rows(), (std::vector<std::string>{"1:one-a:5", "3:three-b:2", "4:four:1", "5:five:1"}));
  policy.dedup_sort->descending = false;
  Run(fmt::format("DELETE FROM `{}` WHERE TRUE", Ref("t").ToString()));
  Merge(policy);
  EXPECT_EQ(Rows(), (std::vector<std::string>{"1:one-b:2", "3:three-b:2", "4:four:1", "5:five:1"}));
}

TEST_F(MergeEmulatorTest, ACompositeKeyMatchesOnEveryColumn) {
  BIZON_REQUIRE_BIGQUERY_EMULATOR();
  Tables("(3, 'three', 7, 0, false), (1, 'uno', 7, 1, false)");
  Merge(bizon::Merge({"id", "name"}, MergeStrategy::kDeleteInsert));
  EXPECT_EQ(Rows(), (std::vector<std::string>{"1:one:1", "1:uno:7", "2:two:1", "3:three:7",
                                              "3:three-again:1"}));
}

}  // namespace
}  // namespace bizon
