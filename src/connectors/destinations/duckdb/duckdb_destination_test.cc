// DuckdbDestination against a DuckDB file in a temporary directory: each sync mode, typed
// columns, and the exactly-once protocol. A "crash" is a destination dropped after a Write()
// whose state the engine never recorded; the next instance of the same job opens with the last
// recorded state.
#include "connectors/destinations/duckdb/duckdb_destination.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "bizon/clock.h"
#include "bizon/record_batch.h"
#include "connectors/registration.h"
#include "duckdb/duckdb_client.h"
#include "engine/backend/backend_test_support.h"

namespace bizon {
namespace {

using testing_support::ValueOrDie;

TEST(DuckColumnTypeTest, MapsTheRecordSchemaTypes) {
  EXPECT_EQ(ParseDuckColumnType("string"), DuckColumnType::kVarchar);
  EXPECT_EQ(ParseDuckColumnType("INT64"), DuckColumnType::kBigint);
  EXPECT_EQ(ParseDuckColumnType("number"), DuckColumnType::kDouble);
  EXPECT_EQ(ParseDuckColumnType("NUMERIC"), DuckColumnType::kDecimal);
  EXPECT_EQ(ParseDuckColumnType("bool"), DuckColumnType::kBoolean);
  EXPECT_EQ(ParseDuckColumnType("DATETIME"), DuckColumnType::kTimestamptz);
  EXPECT_EQ(ParseDuckColumnType("date"), DuckColumnType::kDate);
  EXPECT_EQ(ParseDuckColumnType("JSON"), DuckColumnType::kJson);
  EXPECT_EQ(ParseDuckColumnType("geography"), std::nullopt);
  EXPECT_EQ(DuckTypeName(DuckColumnType::kDecimal), "DECIMAL(38, 9)");
}

TEST(DuckInstantTest, AppliesOffsetsToTimestampStrings) {
  EXPECT_EQ(ParseDuckInstant("2024-05-06T07:08:09Z"), 1714979289000000);
  EXPECT_EQ(ParseDuckInstant("2024-05-06 07:08:09.25"), 1714979289250000);
  EXPECT_EQ(ParseDuckInstant("2024-05-06T09:08:09+02:00"), 1714979289000000);
  EXPECT_EQ(ParseDuckInstant("2024-05-06T05:38:09-0130"), 1714979289000000);
  EXPECT_EQ(ParseDuckInstant("2024-05-06"), std::nullopt);  // Left to DuckDB's cast.
  EXPECT_EQ(ParseDuckInstant("2024-05-06T07:08:09+2"), std::nullopt);
}

TEST(DuckTableNameTest, RefusesBookkeepingNamesInAnyCaseAndControlCharacters) {
  EXPECT_TRUE(CheckDuckTableName("x\"; DROP TABLE y; --", SyncMode::kFullRefresh).ok());
  EXPECT_FALSE(CheckDuckTableName("_BIZON_LOADS", SyncMode::kStream).ok());
  EXPECT_FALSE(CheckDuckTableName("_bizon_load_id_seq", SyncMode::kStream).ok());
  EXPECT_FALSE(CheckDuckTableName("a\nb", SyncMode::kStream).ok());
  EXPECT_FALSE(CheckDuckTableName("", SyncMode::kStream).ok());
}

class DuckdbDestinationTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = testing::TempDir() + "/duckdb_destination_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
    path_ = directory_ + "/warehouse.duckdb";
  }
  void TearDown() override {
    reader_.reset();
    std::error_code ignored;  // Leftover temporary files are harmless.
    std::filesystem::remove_all(directory_, ignored);
  }

  std::unique_ptr<DuckdbDestination> Make(SyncMode mode, const std::string& job_id,
                                          Value extra = Value::EmptyMap()) {
    Value config(Value::Map{{"database", Value(path_)}, {"destination_id", Value("Out Table")}});
    for (const auto& [key, value] : extra.AsMap()) config.Set(key, value);
    DestinationContext context{.sync = {.name = "p",
                                        .job_id = job_id,
                                        .source_name = "generator",
                                        .stream_name = "records",
                                        .sync_mode = mode,
                                        .destination_name = "duckdb"},
                               .config = std::move(config)};
    return ValueOrDie(DuckdbDestination::Create(context));
  }

  static RecordBatch Batch(int begin, int end) {
    RecordBatch batch;
    for (int i = begin; i < end; ++i) {
      batch.Add(std::to_string(i), R"({"id":)" + std::to_string(i) + R"(,"note":"tab\there"})",
                1'700'000'000'000'000 + i);
    }
    batch.SetExtractedAt(1'700'000'001'000'000);
    return batch;
  }

  DuckConnection& Reader() {
    if (!reader_) {
      auto database = ValueOrDie(DuckDatabase::Open(path_, FailureClass::kDestination));
      reader_.emplace(ValueOrDie(DuckConnection::Connect(database)));
    }
    return *reader_;
  }

  std::string Text(const std::string& sql) {
    return ValueOrDie(Reader().QueryValue(sql)).value_or("<null>");
  }

  /// The record ids in `table`, sorted, comma-separated.
  std::string Ids(const std::string& table = "Out Table") {
    return Text("SELECT string_agg(_source_record_id, ',' ORDER BY _source_record_id::INT) FROM " +
                DuckQuoteIdentifier(table));
  }

  std::string directory_;
  std::string path_;
  std::optional<DuckConnection> reader_;
};

TEST_F(DuckdbDestinationTest, FullRefreshStagesThenSwapsInAtomically) {
  auto first = Make(SyncMode::kFullRefresh, "job1");
  ASSERT_OK(first->Open(Value()));
  ValueOrDie(first->Write(Batch(0, 3), 1'700'000'002'000'000));
  ASSERT_OK(first->Finalize());
  ASSERT_OK(first->OnJobSucceeded());
  EXPECT_EQ(Ids(), "0,1,2");

  auto second = Make(SyncMode::kFullRefresh, "job2");
  ASSERT_OK(second->Open(Value()));
  ValueOrDie(second->Write(Batch(10, 12), 1'700'000'002'000'000));
  EXPECT_EQ(Ids(), "0,1,2");  // Staged rows stay invisible until the swap.
  EXPECT_EQ(Text("SELECT count(*) FROM \"Out Table_temp\""), "2");
  ASSERT_OK(second->Finalize());
  EXPECT_EQ(Ids(), "10,11");
  EXPECT_EQ(Text("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'Out Table_temp'"), "0");
  EXPECT_EQ(Text("SELECT count(*) FROM duckdb_columns() WHERE table_name = 'Out Table'"
                 " AND column_name = '_bizon_load_id'"),
            "0");
  EXPECT_EQ(Text("SELECT _source_data->>'note' FROM \"Out Table\" WHERE _source_record_id = '10'"),
            "tab\there");
  EXPECT_EQ(Text("SELECT epoch_us(_source_timestamp) FROM \"Out Table\""
                 " WHERE _source_record_id = '11'"),
            "1700000000000011");
  EXPECT_EQ(Text("SELECT epoch_us(_bizon_loaded_at) FROM \"Out Table\" LIMIT 1"),
            "1700000002000000");
  EXPECT_EQ(Text("SELECT length(_bizon_id) FROM \"Out Table\" LIMIT 1"), "32");
}

TEST_F(DuckdbDestinationTest, AnEmptyFullRefreshPublishesAnEmptyTable) {
  auto destination = Make(SyncMode::kFullRefresh, "job1");
  ASSERT_OK(destination->Open(Value()));
  ASSERT_OK(destination->Finalize());
  EXPECT_EQ(Text("SELECT count(*) FROM \"Out Table\""), "0");
}

TEST_F(DuckdbDestinationTest, AResumedJobDropsRowsWrittenAfterItsLastRecordedLoad) {
  Value recorded;
  {
    auto destination = Make(SyncMode::kFullRefresh, "job1");
    ASSERT_OK(destination->Open(Value()));
    recorded = ValueOrDie(destination->Write(Batch(0, 3), 1));
    ValueOrDie(destination->Write(Batch(3, 5), 1));  // Committed here, never recorded: a crash.
  }
  auto resumed = Make(SyncMode::kFullRefresh, "job1");
  ASSERT_OK(resumed->Open(recorded));
  EXPECT_EQ(Text("SELECT count(*) FROM \"Out Table_temp\""), "3");
  ValueOrDie(resumed->Write(Batch(3, 5), 1));
  ASSERT_OK(resumed->Finalize());
  EXPECT_EQ(Ids(), "0,1,2,3,4");

  // Finalize() again after a crash before the job was marked succeeded publishes nothing twice.
  auto again = Make(SyncMode::kFullRefresh, "job1");
  ASSERT_OK(again->Open(ValueOrDie(resumed->Sync())));
  ASSERT_OK(again->Finalize());
  EXPECT_EQ(Ids(), "0,1,2,3,4");
}

TEST_F(DuckdbDestinationTest, AnAppendedLoadIsInvisibleUntilSyncAndGoneWhenAbandoned) {
  auto destination = Make(SyncMode::kStream, "job1");
  ASSERT_OK(destination->Open(Value()));
  ASSERT_OK(destination->Append(Batch(0, 2), 1));
  ASSERT_OK(destination->Append(Batch(2, 4), 1));
  EXPECT_EQ(Ids(), "<null>");  // Another connection sees nothing of the open transaction.
  Value state = ValueOrDie(destination->Sync());
  EXPECT_TRUE(state.Find("load_id") != nullptr);
  EXPECT_EQ(Ids(), "0,1,2,3");
  ASSERT_OK(destination->Append(Batch(4, 6), 1));
  destination.reset();  // Killed with a load open: it rolls back.
  EXPECT_EQ(Ids(), "0,1,2,3");
}

TEST_F(DuckdbDestinationTest, StreamWritesInPlaceAndAResumeRemovesUnrecordedLoads) {
  Value recorded;
  {
    auto destination = Make(SyncMode::kStream, "job1");
    ASSERT_OK(destination->Open(Value()));
    recorded = ValueOrDie(destination->Write(Batch(0, 2), 1));
    ValueOrDie(destination->Write(Batch(2, 4), 1));
  }
  EXPECT_EQ(Ids(), "0,1,2,3");
  auto resumed = Make(SyncMode::kStream, "job1");
  ASSERT_OK(resumed->Open(recorded));
  EXPECT_EQ(Ids(), "0,1");
  ValueOrDie(resumed->Write(Batch(2, 5), 1));
  ASSERT_OK(resumed->Finalize());
  EXPECT_EQ(Ids(), "0,1,2,3,4");
}

TEST_F(DuckdbDestinationTest, IncrementalAppendsItsStagingAtFinalize) {
  for (auto [job, begin, end] : {std::tuple{"job1", 0, 2}, std::tuple{"job2", 2, 5}}) {
    auto destination = Make(SyncMode::kIncremental, job);
    ASSERT_OK(destination->Open(Value()));
    ValueOrDie(destination->Write(Batch(begin, end), 1));
    ASSERT_OK(destination->Finalize());
    ASSERT_OK(destination->OnJobSucceeded());
  }
  EXPECT_EQ(Ids(), "0,1,2,3,4");
  EXPECT_EQ(Text("SELECT count(*) FROM _bizon_loads WHERE kind <> 'publish'"), "0");
}

TEST_F(DuckdbDestinationTest, RecordsRouteToTheirOwnTables) {
  auto destination = Make(SyncMode::kFullRefresh, "job1");
  ASSERT_OK(destination->Open(Value()));
  RecordBatch batch;
  batch.Add("1", R"({"a":1})", 1, "left");
  batch.Add("2", R"({"a":2})", 1, "it's \"right\"");
  batch.Add("3", R"({"a":3})", 1);
  ValueOrDie(destination->Write(batch, 1));
  ASSERT_OK(destination->Finalize());
  EXPECT_EQ(Ids("left"), "1");
  EXPECT_EQ(Ids("it's \"right\""), "2");
  EXPECT_EQ(Ids(), "3");
}

TEST_F(DuckdbDestinationTest, UnnestWritesTypedColumns) {
  Value schema = ValueOrDie(Value::FromJson(R"([{"destination_id": "typed", "record_schema": [
      {"name": "id", "type": "INTEGER"}, {"name": "name", "type": "string"},
      {"name": "price", "type": "NUMERIC"}, {"name": "ratio", "type": "FLOAT64"},
      {"name": "ok", "type": "BOOLEAN"}, {"name": "at", "type": "TIMESTAMP"},
      {"name": "day", "type": "DATE"}, {"name": "extra", "type": "JSON"}]}])"));
  auto destination = Make(SyncMode::kFullRefresh, "job1",
                          Value(Value::Map{{"unnest", Value(true)},
                                           {"record_schemas", schema},
                                           {"destination_id", Value("typed")}}));
  ASSERT_OK(destination->Open(Value()));
  RecordBatch batch;
  batch.Add("1",
            R"({"id": 7, "name": "é\"x", "price": 12345678901234.123456789, "ratio": 0.5,
                "ok": true, "at": "2024-05-06T07:08:09.5Z", "day": "2024-05-06",
                "extra": {"k": [1, 2]}})",
            1);
  batch.Add("2",
            R"({"id": "8", "name": null, "price": "1.5", "ratio": 2, "ok": "false",
                "at": "2024-05-06T09:08:09+02:00", "day": null, "extra": "text"})",
            1);
  ValueOrDie(destination->Write(batch, 1));
  ASSERT_OK(destination->Finalize());
  EXPECT_EQ(Text("SELECT string_agg(typeof(id) || typeof(price) || typeof(\"at\"), ',')"
                 " FROM (SELECT * FROM typed LIMIT 1)"),
            "BIGINTDECIMAL(38,9)TIMESTAMP WITH TIME ZONE");
  EXPECT_EQ(
      Text("SELECT name || '|' || price || '|' || ratio || '|' || ok || '|' || epoch_us(\"at\")"
           " || '|' || day || '|' || extra FROM typed WHERE id = 7"),
      "é\"x|12345678901234.123456789|0.5|true|1714979289500000|2024-05-06|{\"k\": [1, 2]}");
  EXPECT_EQ(Text("SELECT coalesce(name, 'NULL') || '|' || price || '|' || ratio || '|' || ok ||"
                 " '|' || epoch_us(\"at\") || '|' || coalesce(day::VARCHAR, 'NULL') || '|' || extra"
                 " FROM typed WHERE id = 8"),
            "NULL|1.500000000|2.0|false|1714979289000000|NULL|\"text\"");
}

TEST_F(DuckdbDestinationTest, AValueTheColumnCannotHoldFailsTheWholeLoad) {
  Value schema = ValueOrDie(Value::FromJson(
      R"([{"destination_id": "typed", "record_schema": [{"name": "id", "type": "INTEGER"}]}])"));
  auto destination = Make(SyncMode::kStream, "job1",
                          Value(Value::Map{{"unnest", Value(true)},
                                           {"record_schemas", schema},
                                           {"destination_id", Value("typed")}}));
  ASSERT_OK(destination->Open(Value()));
  RecordBatch batch;
  batch.Add("1", R"({"id": 1})", 1);
  batch.Add("2", R"({"id": 1.5})", 1);
  Status refused = destination->Append(batch, 1);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("record 2 key 'id'"), std::string::npos) << refused.ToString();
  EXPECT_EQ(refused.failure_class(), FailureClass::kDestination);
  EXPECT_EQ(Text("SELECT count(*) FROM typed"), "0");

  RecordBatch unknown;
  unknown.Add("3", R"({"id": 1, "other": 2})", 1);
  Status undeclared = destination->Append(unknown, 1);
  EXPECT_NE(undeclared.message().find("does not declare"), std::string::npos);
}

TEST_F(DuckdbDestinationTest, ReplaceDispositionMakesAStreamTableAFullRefresh) {
  Value extra(Value::Map{{"write_disposition", Value("replace")}});
  for (auto [job, begin, end] : {std::tuple{"job1", 0, 2}, std::tuple{"job2", 5, 7}}) {
    auto destination = Make(SyncMode::kIncremental, job, extra);
    ASSERT_OK(destination->Open(Value()));
    ValueOrDie(destination->Write(Batch(begin, end), 1));
    ASSERT_OK(destination->Finalize());
  }
  EXPECT_EQ(Ids(), "5,6");
}

/// Records {"id": key, "v": value, "deleted": flag} with ids "<record id>".
RecordBatch Changes(std::initializer_list<std::tuple<int, int, int, bool>> changes) {
  RecordBatch batch;
  for (auto [record, key, value, deleted] : changes) {
    batch.Add(std::to_string(record),
              fmt::format(R"({{"id":{},"v":{},"deleted":{}}})", key, value, deleted), 1);
  }
  return batch;
}

Value DuckdbMergeConfig(std::string_view extra = "") {
  return ValueOrDie(Value::FromJson(fmt::format(
      R"({{"unnest": true, "destination_id": "m", "write_disposition": "merge",
          "primary_key": ["id"], "hard_delete": "deleted"{},
          "record_schemas": [{{"destination_id": "m", "record_schema": [
            {{"name": "id", "type": "INTEGER"}}, {{"name": "v", "type": "INTEGER"}},
            {{"name": "deleted", "type": "BOOLEAN"}}]}}]}})",
      extra)));
}

TEST_F(DuckdbDestinationTest, IncrementalMergeKeepsTheLastVersionOfEachKeyAndDeletes) {
  auto first = Make(SyncMode::kIncremental, "job1", DuckdbMergeConfig());
  ASSERT_OK(first->Open(Value()));
  ValueOrDie(first->Write(Changes({{1, 1, 10, false}, {2, 2, 20, false}, {3, 3, 30, false}}), 1));
  ASSERT_OK(first->Finalize());
  EXPECT_EQ(Text("SELECT string_agg(id || '=' || v, ',' ORDER BY id) FROM m"), "1=10,2=20,3=30");

  auto second = Make(SyncMode::kIncremental, "job2", DuckdbMergeConfig());
  ASSERT_OK(second->Open(Value()));
  // Key 1 twice in one load (the last wins), key 2 deleted, key 4 new; key 3 untouched.
  ValueOrDie(second->Write(Changes({{4, 1, 11, false}, {5, 2, 0, true}}), 1));
  ValueOrDie(second->Write(Changes({{6, 1, 12, false}, {7, 4, 40, false}}), 1));
  ASSERT_OK(second->Finalize());
  EXPECT_EQ(Text("SELECT string_agg(id || '=' || v, ',' ORDER BY id) FROM m"), "1=12,3=30,4=40");
  EXPECT_EQ(Text("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'm_incremental'"), "0");
}

TEST_F(DuckdbDestinationTest, StreamMergeAppliesOnlyLoadsWhoseCursorIsRecorded) {
  Value recorded;
  {
    auto destination = Make(SyncMode::kStream, "job1", DuckdbMergeConfig());
    ASSERT_OK(destination->Open(Value()));
    recorded = ValueOrDie(destination->Write(Changes({{1, 1, 10, false}, {2, 2, 20, false}}), 1));
    EXPECT_EQ(Text("SELECT count(*) FROM m"), "0");  // Staged until its cursor is recorded.
    ASSERT_OK(destination->OnCursorRecorded(recorded));
    ASSERT_OK(destination->OnCursorRecorded(recorded));  // Idempotent.
    EXPECT_EQ(Text("SELECT string_agg(id || '=' || v, ',' ORDER BY id) FROM m"), "1=10,2=20");
    // Committed, never recorded: a kill. It must never reach the table.
    ValueOrDie(destination->Write(Changes({{3, 1, 99, false}, {4, 2, 0, true}}), 1));
  }
  auto resumed = Make(SyncMode::kStream, "job1", DuckdbMergeConfig());
  ASSERT_OK(resumed->Open(recorded));
  EXPECT_EQ(Text("SELECT string_agg(id || '=' || v, ',' ORDER BY id) FROM m"), "1=10,2=20");
  EXPECT_EQ(Text("SELECT count(*) FROM m_merge"), "0");
  Value next = ValueOrDie(resumed->Write(Changes({{3, 1, 11, false}, {4, 2, 0, true}}), 1));
  ASSERT_OK(resumed->OnCursorRecorded(next));
  EXPECT_EQ(Text("SELECT string_agg(id || '=' || v, ',' ORDER BY id) FROM m"), "1=11");
}

TEST_F(DuckdbDestinationTest, FullRefreshMergePublishesOneRowPerKeyByDedupSort) {
  auto destination = Make(SyncMode::kFullRefresh, "job1",
                          DuckdbMergeConfig(R"(, "dedup_sort": {"column": "v", "order": "asc"})"));
  ASSERT_OK(destination->Open(Value()));
  ValueOrDie(destination->Write(
      Changes({{1, 1, 30, false}, {2, 1, 10, false}, {3, 1, 20, false}, {4, 2, 5, true}}), 1));
  ASSERT_OK(destination->Finalize());
  EXPECT_EQ(Text("SELECT string_agg(id || '=' || v, ',' ORDER BY id) FROM m"), "1=10");
  EXPECT_EQ(Text("SELECT count(*) FROM duckdb_columns() WHERE table_name = 'm'"), "3");
}

TEST_F(DuckdbDestinationTest, RawMergeKeysOnAFieldOfThePayload) {
  Value extra = ValueOrDie(Value::FromJson(
      R"({"write_disposition": "merge", "primary_key": ["id"], "hard_delete": "deleted"})"));
  for (const auto& [job, batch] :
       {std::pair{"job1", Changes({{1, 1, 10, false}, {2, 2, 20, false}})},
        std::pair{"job2", Changes({{3, 1, 11, false}, {4, 2, 0, true}})}}) {
    auto destination = Make(SyncMode::kIncremental, job, extra);
    ASSERT_OK(destination->Open(Value()));
    ValueOrDie(destination->Write(batch, 1));
    ASSERT_OK(destination->Finalize());
  }
  EXPECT_EQ(Text("SELECT string_agg(_source_data->>'v', ',') FROM \"Out Table\""), "11");
}

TEST(DuckdbDestinationRegistrationTest, RefusesChangeFormatsAndSchemaContractsWithTheirPath) {
  ConnectorRegistry registry;
  ASSERT_OK(RegisterDuckdbDestination(registry));
  const DestinationDescriptor* descriptor = registry.FindDestination("duckdb");
  ASSERT_NE(descriptor, nullptr);
  Value config = ValueOrDie(Value::FromJson(
      R"({"database": "x.duckdb", "write_disposition": "merge", "primary_key": ["id"],
          "change_format": "debezium",
          "record_schemas": [{"destination_id": "t", "record_schema": [],
                              "schema_contract": "freeze"}]})"));
  std::vector<ConfigRuleViolation> violations =
      descriptor->check_config(config, SyncMode::kIncremental);
  std::vector<std::string> paths;
  paths.reserve(violations.size());
  for (const ConfigRuleViolation& violation : violations) paths.push_back(violation.path);
  EXPECT_EQ(std::find(paths.begin(), paths.end(), "write_disposition"), paths.end());
  EXPECT_NE(std::find(paths.begin(), paths.end(), "change_format"), paths.end());
  EXPECT_NE(std::find(paths.begin(), paths.end(), "record_schemas[0].schema_contract"),
            paths.end());
}

TEST_F(DuckdbDestinationTest, BoundsDuckDBsThreadsAndMemory) {
  auto bounded = Make(SyncMode::kStream, "job1");
  ASSERT_OK(bounded->Open(Value()));
  EXPECT_EQ(Text("SELECT current_setting('threads')"), "1");
  EXPECT_EQ(Text("SELECT current_setting('memory_limit')"), "244.1 MiB");  // 256 MB.
  auto wider = Make(SyncMode::kStream, "job2",
                    Value(Value::Map{{"threads", Value(2)}, {"memory_limit_mb", Value(1000)}}));
  ASSERT_OK(wider->Open(Value()));
  EXPECT_EQ(Text("SELECT current_setting('threads')"), "2");
  EXPECT_EQ(Text("SELECT current_setting('memory_limit')"), "953.6 MiB");  // 1000 MB.
}

TEST_F(DuckdbDestinationTest, AFileThatCannotBeOpenedIsAnErrorNamingIt) {
  auto destination = Make(SyncMode::kStream, "job1");
  std::filesystem::create_directories(path_);  // A directory where the file should be.
  Status opened = destination->Open(Value());
  EXPECT_FALSE(opened.ok());
  EXPECT_NE(opened.message().find(path_), std::string::npos) << opened.ToString();
  EXPECT_EQ(opened.failure_class(), FailureClass::kDestination);
}

}  // namespace
}  // namespace bizon
