// The bigquery destination's rules that need no server: staging names, deterministic job ids,
// table names, the partition-field checks of spec 8.1.6, and the rule on a streams block.
#include "connectors/destinations/bigquery/bigquery_destination.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "bizon/clock.h"
#include "connectors/destinations/bigquery_common/bigquery_config_fields.h"
#include "connectors/destinations/destination_record.h"
#include "google/google_test_support.h"

namespace bizon {
namespace {

TEST(BigqueryDestinationTest, StagingNamesPerSyncMode) {
  EXPECT_EQ(StagingTableName("t", SyncMode::kFullRefresh), "t_temp");
  EXPECT_EQ(StagingTableName("t", SyncMode::kIncremental), "t_incremental");
  EXPECT_EQ(StagingTableName("t", SyncMode::kStream), "t");
}

TEST(BigqueryDestinationTest, JobIdsAreDeterministicAndValid) {
  std::string id = BigqueryJobId("load", "ab12", "events", 7);
  EXPECT_EQ(id, BigqueryJobId("load", "ab12", "events", 7));
  EXPECT_NE(id, BigqueryJobId("load", "ab12", "events", 8));
  EXPECT_NE(id, BigqueryJobId("load", "ab12", "other", 7));
  EXPECT_NE(id, BigqueryJobId("load", "ab13", "events", 7));
  EXPECT_EQ(id.rfind("bizon_load_ab12_", 0), 0U) << id;
  EXPECT_EQ(id.substr(id.size() - 2), "_7");
  EXPECT_TRUE(BigQueryClient::IsValidJobId(id));
  // Any table name (quotes, dots, Unicode) and an odd job id still give a valid id.
  EXPECT_TRUE(BigQueryClient::IsValidJobId(BigqueryJobId("publish", "a.b c/é", "données `x`", 0)));
}

// A resumed run whose flush n holds other rows than the dead run's flush n (a flush cut by time,
// a stream source's batches) must not take the dead run's landed load for its own: that would
// skip the rows only the resumed flush holds.
TEST(BigqueryDestinationTest, LoadJobIdsNameTheRowsTheyLoad) {
  RecordBatch dead;
  dead.Add("1", R"({"a":1})", 10);
  dead.Add("2", R"({"a":2})", 20);
  RecordBatch resumed = dead;
  resumed.Add("3", R"({"a":3})", 30);
  std::vector<size_t> two = {0, 1};
  std::vector<size_t> three = {0, 1, 2};

  std::string id = BigqueryLoadJobId("ab12", "events", 4, dead, two);
  EXPECT_EQ(id, BigqueryLoadJobId("ab12", "events", 4, resumed, two));  // The same rows.
  EXPECT_NE(id, BigqueryLoadJobId("ab12", "events", 4, resumed, three));
  EXPECT_NE(id, BigqueryLoadJobId("ab12", "events", 5, dead, two));
  EXPECT_EQ(id.rfind(BigqueryJobId("load", "ab12", "events", 4) + "_", 0), 0U) << id;
  EXPECT_TRUE(BigQueryClient::IsValidJobId(id));

  RecordBatch other_payload;
  other_payload.Add("1", R"({"a":1})", 10);
  other_payload.Add("2", R"({"a":9})", 20);
  EXPECT_NE(id, BigqueryLoadJobId("ab12", "events", 4, other_payload, two));
  RecordBatch other_time;
  other_time.Add("1", R"({"a":1})", 10);
  other_time.Add("2", R"({"a":2})", 21);
  // A re-fetch stamps the same rows with another time: still the same load.
  EXPECT_EQ(id, BigqueryLoadJobId("ab12", "events", 4, other_time, two));
}

TEST(BigqueryDestinationTest, TableNamesRefuseDotsBackticksAndControlCharacters) {
  EXPECT_TRUE(CheckBigqueryTableName("events", SyncMode::kFullRefresh).ok());
  EXPECT_TRUE(CheckBigqueryTableName("données 日本", SyncMode::kFullRefresh).ok());
  EXPECT_FALSE(CheckBigqueryTableName("", SyncMode::kFullRefresh).ok());
  EXPECT_FALSE(CheckBigqueryTableName("ds.events", SyncMode::kFullRefresh).ok());
  EXPECT_FALSE(CheckBigqueryTableName("a`b", SyncMode::kFullRefresh).ok());
  EXPECT_FALSE(CheckBigqueryTableName("a\nb", SyncMode::kFullRefresh).ok());
  EXPECT_TRUE(CheckBigqueryTableName("with space-and_dash", SyncMode::kFullRefresh).ok());
  for (std::string_view hostile : {"quote\"double", "quote'single", "semi;colon",
                                   "x; DROP TABLE x; --", "a/b", "a\\b", "a$b", "(x)"}) {
    EXPECT_FALSE(CheckBigqueryTableName(hostile, SyncMode::kStream).ok()) << hostile;
  }
  EXPECT_TRUE(CheckBigqueryTableName(std::string(1024, 'a'), SyncMode::kStream).ok());
  EXPECT_FALSE(CheckBigqueryTableName(std::string(1020, 'a'), SyncMode::kFullRefresh).ok());
}

using Schemas = std::map<std::string, std::vector<BqColumn>, std::less<>>;

Value Block(std::string type, std::optional<Value> field) {
  Value block(Value::Map{{"type", std::move(type)}});
  if (field) block.Set("field", *field);
  return block;
}

TEST(BigqueryDestinationTest, RawPartitioningDefaultsToLoadedAtAndAcceptsOnlyTimestamps) {
  auto fallback = ResolveBigqueryPartitioning(nullptr, false, {});
  ASSERT_TRUE(fallback && *fallback);
  EXPECT_EQ((*fallback)->type, "DAY");
  EXPECT_EQ((*fallback)->field, "_bizon_loaded_at");
  Value bare("HOUR");
  auto hour = ResolveBigqueryPartitioning(&bare, false, {});
  EXPECT_EQ((*hour)->type, "HOUR");
  EXPECT_EQ((*hour)->field, "_bizon_loaded_at");
  Value ingestion = Block("MONTH", Value());
  EXPECT_EQ((*ResolveBigqueryPartitioning(&ingestion, false, {}))->field, "");
  Value source_time = Block("DAY", Value("_source_timestamp"));
  EXPECT_EQ((*ResolveBigqueryPartitioning(&source_time, false, {}))->field, "_source_timestamp");
  Value bad = Block("DAY", Value("_source_data"));
  auto refused = ResolveBigqueryPartitioning(&bad, false, {});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("destination.config.time_partitioning.field: "
                                           "'_source_data' is not a TIMESTAMP column"),
            std::string::npos);
}

TEST(BigqueryDestinationTest, UnnestPartitioningNeedsATimeColumnInEverySchema) {
  Schemas schemas = {
      {"a",
       {{"id", BqColumnType::kInteger, BqColumnMode::kRequired, ""},
        {"day", BqColumnType::kDate, BqColumnMode::kNullable, ""},
        {"at", BqColumnType::kTimestamp, BqColumnMode::kNullable, ""}}},
      {"b", {{"at", BqColumnType::kTimestamp, BqColumnMode::kNullable, ""}}},
  };
  // The declared default names _bizon_loaded_at, which no schema has: ingestion time.
  Value fallback = Block("DAY", Value("_bizon_loaded_at"));
  EXPECT_EQ((*ResolveBigqueryPartitioning(&fallback, true, schemas))->field, "");
  Value unwritten = Block("DAY", std::nullopt);
  EXPECT_EQ((*ResolveBigqueryPartitioning(&unwritten, true, schemas))->field, "");
  Value at = Block("HOUR", Value("at"));
  EXPECT_EQ((*ResolveBigqueryPartitioning(&at, true, schemas))->field, "at");
  Value day = Block("DAY", Value("day"));  // Missing from schema b.
  auto missing = ResolveBigqueryPartitioning(&day, true, schemas);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("destination_id 'b' (its partitionable columns: at)"),
            std::string::npos)
      << missing.error().message();
  Schemas dates = {{"a", {{"day", BqColumnType::kDate, BqColumnMode::kNullable, ""}}}};
  Value hourly = Block("HOUR", Value("day"));
  auto hour_on_date = ResolveBigqueryPartitioning(&hourly, true, dates);
  ASSERT_FALSE(hour_on_date);
  EXPECT_NE(hour_on_date.error().message().find("HOUR cannot partition the DATE column 'day'"),
            std::string::npos);
  Value not_time = Block("DAY", Value("id"));
  EXPECT_FALSE(ResolveBigqueryPartitioning(&not_time, true, schemas));
}

TEST(BigqueryDestinationTest, StreamTableIdsMustNameProjectDatasetAndTable) {
  auto stream = [](std::string table, int line) {
    Value destination(Value::Map{{"table_id", Value(std::move(table))}});
    destination.set_mark({.line = line, .column = 5});
    return Value(Value::Map{{"name", Value("s")}, {"destination", std::move(destination)}});
  };
  Value config(Value::Map{{"streams", Value(Value::List{stream("p.d.ok", 3), stream("d.t", 7),
                                                        stream("a.b.c.d", 9)})}});
  std::vector<ConfigRuleViolation> violations = CheckStreamTableIds(config);
  ASSERT_EQ(violations.size(), 2u);
  EXPECT_EQ(violations[0].path, "streams[1].destination.table_id");
  EXPECT_EQ(violations[0].message,
            "table_id must look like 'project.dataset.table', got 'd.t' (2 parts)");
  EXPECT_EQ(violations[0].mark.line, 7);
  EXPECT_EQ(violations[1].path, "streams[2].destination.table_id");
  EXPECT_EQ(violations[1].message,
            "table_id must look like 'project.dataset.table', got 'a.b.c.d' (4 parts)");
  EXPECT_TRUE(CheckStreamTableIds(Value::EmptyMap()).empty());
}

Value MergeConfig() {
  Value column_id(Value::Map{{"name", "id"}, {"type", "INTEGER"}, {"mode", "REQUIRED"}});
  Value column_name(Value::Map{{"name", "name"}, {"type", "STRING"}, {"mode", "NULLABLE"}});
  Value entry(Value::Map{{"destination_id", "users"},
                         {"record_schema", Value(Value::List{column_id, column_name})}});
  return Value(Value::Map{{"project_id", "p"},
                          {"dataset_id", "d"},
                          {"gcs_buffer_bucket", "b"},
                          {"unnest", true},
                          {"record_schemas", Value(Value::List{entry})},
                          {"write_disposition", "merge"},
                          {"primary_key", Value(Value::List{Value("id")})}});
}

std::string CreateError(const Value& config, SyncMode sync_mode = SyncMode::kStream) {
  DestinationContext context;
  context.sync.sync_mode = sync_mode;
  context.config = config;
  auto created = BigqueryDestination::Create(context);
  return created ? std::string() : created.error().message();
}

TEST(BigqueryDestinationTest, MergeAndContractsNeedUnnestTheKeyColumnsAndSynchronousLoads) {
  EXPECT_EQ(CreateError(MergeConfig()), "");
  Value raw = MergeConfig();
  raw.Set("unnest", false);
  EXPECT_EQ(CreateError(raw),
            "destination.config.write_disposition: needs unnest: true: the record's keys are the "
            "columns it reads (the primary_key, the schema, the change's row)");
  Value contract = MergeConfig();
  contract.Set("write_disposition", "append");
  contract.Erase("primary_key");
  contract.Set("schema_contract", "freeze");
  EXPECT_EQ(CreateError(contract), "");
  contract.Set("unnest", false);
  EXPECT_NE(CreateError(contract).find("destination.config.schema_contract: needs unnest"),
            std::string::npos);
  Value unknown_key = MergeConfig();
  unknown_key.Set("primary_key", Value(Value::List{Value("email")}));
  EXPECT_EQ(CreateError(unknown_key),
            "destination.config.record_schemas[0].primary_key: 'email' is not a column of the "
            "table's record_schema");
  Value sorted = MergeConfig();
  sorted.Set("dedup_sort", Value(Value::Map{{"column", "updated_at"}, {"order", "desc"}}));
  EXPECT_NE(CreateError(sorted).find("record_schemas[0].dedup_sort: 'updated_at' is not a column"),
            std::string::npos);
  Value async = MergeConfig();
  async.Set("async_load", true);
  EXPECT_NE(CreateError(async).find("destination.config.async_load: a merge loads and applies"),
            std::string::npos);
  Value keyless = MergeConfig();
  keyless.Erase("primary_key");
  EXPECT_NE(CreateError(keyless).find("merge needs a primary_key"), std::string::npos);
}

TEST(BigqueryDestinationTest, MergeRowsJobIdsDifferFromTheLoadsOfTheSameRows) {
  RecordBatch rows;
  rows.Add("1", R"({"id":1})", 10);
  std::string load = BigqueryLoadJobId("job", "users", 3, rows, {0});
  std::string merge = BigqueryRowsJobId("merge", "job", "users", 3, rows, {0});
  EXPECT_EQ(merge.rfind("bizon_merge_job_", 0), 0U) << merge;
  EXPECT_EQ(load.substr(load.rfind('_')), merge.substr(merge.rfind('_')));
  EXPECT_TRUE(BigQueryClient::IsValidJobId(merge));
}

// A run that died after its MERGE ran and before its cursor was recorded: the resumed run loads
// the same rows as its same n-th load, finds the MERGE's job id DONE and does not run it again
// (the emulator would run a repeated job id a second time, as a new job).
TEST(BigqueryDestinationEmulatorTest, AMergeThatRanBeforeItsCursorWasRecordedIsNotRunAgain) {
  BIZON_REQUIRE_BIGQUERY_EMULATOR();
  if (std::getenv("STORAGE_EMULATOR_HOST") == nullptr) {
    BIZON_SKIP_OR_FAIL("STORAGE_EMULATOR_HOST is unset (scripts/test-servers.sh start gcs)");
  }
  auto client = BigQueryClient::Make({.project = "test-project"});
  ASSERT_TRUE(client) << client.error().ToString();
  // Job ids outlive datasets in the emulator: this run's own pipeline job.
  std::string job = fmt::format("job_merge_once_{}_{}", getpid(), NowMicros() % 1000000000);
  std::string dataset = "d" + job;
  ASSERT_TRUE((*client)->InsertDataset({.dataset = dataset}));
  Value config = MergeConfig();
  config.Set("project_id", "test-project");
  config.Set("dataset_id", dataset);
  config.Set("gcs_buffer_bucket", std::getenv("BIZON_GCS_BUCKET") != nullptr
                                      ? std::getenv("BIZON_GCS_BUCKET")
                                      : "bizon-buffer");
  config.Set("destination_id", "users");
  DestinationContext context;
  context.sync = {.name = "merge-once",
                  .job_id = job,
                  .source_name = "src",
                  .stream_name = "users",
                  .sync_mode = SyncMode::kStream,
                  .destination_name = "bigquery"};
  context.config = config;
  RecordBatch records;
  records.Add("a", R"({"id":1,"name":"one"})", 10);
  records.Add("b", R"({"id":2,"name":"two"})", 10);
  records.Add("c", R"({"id":1,"name":"one again"})", 10);
  std::string merge_id = BigqueryRowsJobId("merge", job, "users", 1, records, {0, 1, 2});
  BigQueryJobRef ref{.project = "test-project", .job_id = merge_id};
  std::string created;
  for (int run = 0; run < 2; ++run) {
    auto destination = BigqueryDestination::Create(context);
    ASSERT_TRUE(destination) << destination.error().ToString();
    ASSERT_TRUE((*destination)->Open(Value()).ok());  // No cursor was recorded.
    auto written = (*destination)->Write(records, 20);
    ASSERT_TRUE(written) << written.error().ToString();
    auto merge = (*client)->GetJob(ref);
    ASSERT_TRUE(merge) << merge.error().ToString();
    std::string time = merge->resource.FindPath("statistics.creationTime")->ToDisplayString();
    if (run == 0) created = time;
    EXPECT_EQ(time, created) << "the MERGE ran again";
  }
  auto rows = (*client)->RunQuery(
      {.job_id = BigQueryClient::RandomJobId("test")},
      {.query = fmt::format("SELECT id, name FROM `test-project.{}.users` ORDER BY id", dataset)});
  ASSERT_TRUE(rows) << rows.error().ToString();
  ASSERT_EQ(rows->rows.size(), 2u);
  EXPECT_EQ(rows->rows[0][1].ToDisplayString(), "one again");
  EXPECT_EQ(rows->rows[1][1].ToDisplayString(), "two");
  EXPECT_TRUE((*client)->DeleteDataset("test-project", dataset, true).ok());
}

}  // namespace
}  // namespace bizon
