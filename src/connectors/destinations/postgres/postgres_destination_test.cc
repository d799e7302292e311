// PostgresDestination: COPY text and type mapping, then the exactly-once protocol against the
// test server (BIZON_PG_* from `scripts/test-servers.sh start postgres`; skipped without it). A
// "crash" is a destination dropped after a Write() whose state the engine never recorded; the
// next instance of the same job opens with the last recorded state.
#include "connectors/destinations/postgres/postgres_destination.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bizon/clock.h"
#include "bizon/record_batch.h"
#include "connectors/destinations/destination_record.h"
#include "engine/backend/backend_test_support.h"
#include "postgres/postgres_client.h"
#include "testing/test_servers.h"

namespace bizon {
namespace {

using testing_support::ValueOrDie;

TEST(PostgresCopyTextTest, EscapesBackslashTabNewlineAndCarriageReturnOnly) {
  std::string out;
  AppendCopyText(out, "plain \"quoted\" \\ tab\tline\nreturn\r end");
  EXPECT_EQ(out, "plain \"quoted\" \\\\ tab\\tline\\nreturn\\r end");
  out.clear();
  AppendCopyText(out, R"({"a":"x\"y\\z"})");
  EXPECT_EQ(out, R"({"a":"x\\"y\\\\z"})");
}

TEST(PostgresColumnTypeTest, MapsTheRecordSchemaTypes) {
  EXPECT_EQ(ParsePgColumnType("string"), PgColumnType::kText);
  EXPECT_EQ(ParsePgColumnType("STRING"), PgColumnType::kText);
  EXPECT_EQ(ParsePgColumnType("integer"), PgColumnType::kBigint);
  EXPECT_EQ(ParsePgColumnType("INT64"), PgColumnType::kBigint);
  EXPECT_EQ(ParsePgColumnType("number"), PgColumnType::kDouble);
  EXPECT_EQ(ParsePgColumnType("FLOAT64"), PgColumnType::kDouble);
  EXPECT_EQ(ParsePgColumnType("NUMERIC"), PgColumnType::kNumeric);
  EXPECT_EQ(ParsePgColumnType("boolean"), PgColumnType::kBoolean);
  EXPECT_EQ(ParsePgColumnType("TIMESTAMP"), PgColumnType::kTimestamptz);
  EXPECT_EQ(ParsePgColumnType("date"), PgColumnType::kDate);
  EXPECT_EQ(ParsePgColumnType("JSON"), PgColumnType::kJsonb);
  EXPECT_EQ(ParsePgColumnType("geography"), std::nullopt);
  EXPECT_EQ(PgTypeName(PgColumnType::kDouble), "double precision");
}

class PostgresDestinationTest : public testing::Test {
 protected:
  void SetUp() override {
    std::optional<PgConnectionSettings> server = testing_support::PostgresTestServer();
    if (!server) {
      BIZON_SKIP_OR_FAIL(
          "no PostgreSQL test server: run `eval \"$(scripts/test-servers.sh start postgres)\"` "
          "first");
    }
    settings_ = *server;
    schema_ = "dest_test_" + NewUuidHex().substr(0, 12);
    admin_ = ValueOrDie(PgConnection::Connect(settings_, FailureClass::kDestination));
  }

  void TearDown() override {
    if (admin_ != nullptr) {
      // Ignored: a leftover schema only costs space on the test server.
      admin_->Run("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE", "drop the test schema")
          .IgnoreError();
    }
  }

  Value Config(Value extra = Value::EmptyMap()) const {
    Value config(Value::Map{{"host", Value(settings_.host)},
                            {"port", Value(settings_.port)},
                            {"database", Value(settings_.database)},
                            {"username", Value(settings_.user)},
                            {"password", Value(settings_.password)},
                            {"schema", Value(schema_)},
                            {"destination_id", Value("Out Table")}});
    if (extra.is_map()) {
      for (const auto& [key, value] : extra.AsMap()) config.Set(key, value);
    }
    return config;
  }

  std::unique_ptr<PostgresDestination> Make(SyncMode mode, const std::string& job_id,
                                            Value extra = Value::EmptyMap()) {
    DestinationContext context{.sync = {.name = "p",
                                        .job_id = job_id,
                                        .source_name = "generator",
                                        .stream_name = "records",
                                        .sync_mode = mode,
                                        .destination_name = "postgres"},
                               .config = Config(std::move(extra))};
    return ValueOrDie(PostgresDestination::Create(context));
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

  /// The record ids in `table`, sorted, comma-separated.
  std::string Ids(const std::string& table) {
    auto result = admin_->Execute(
        "SELECT string_agg(_source_record_id, ',' ORDER BY _source_record_id::int) FROM " +
            schema_ + "." + admin_->QuoteIdentifier(table),
        "read the ids");
    EXPECT_TRUE(result.has_value()) << result.error().ToString();
    if (!result || result->rows() == 0) return "<none>";
    return result->OptionalText(0, 0).value_or("");
  }

  bool Exists(const std::string& table) {
    auto result = admin_->Query("SELECT to_regclass($1) IS NOT NULL", "look up a table",
                                schema_ + "." + admin_->QuoteIdentifier(table));
    return result.has_value() && result->Bool(0, 0);
  }

  PgConnectionSettings settings_;
  std::string schema_;
  std::unique_ptr<PgConnection> admin_;
};

TEST_F(PostgresDestinationTest, FullRefreshStagesThenSwapsAndDropsTheLoadColumn) {
  auto destination = Make(SyncMode::kFullRefresh, "job1");
  ASSERT_OK(destination->Open(Value()));
  ASSERT_TRUE(ValueOrDie(destination->Write(Batch(0, 3), NowMicros())).Find("load_id"));
  EXPECT_EQ(Ids("Out Table_temp"), "0,1,2");
  EXPECT_FALSE(Exists("Out Table"));
  ASSERT_OK(destination->Finalize());
  ASSERT_OK(destination->OnJobSucceeded());
  EXPECT_EQ(Ids("Out Table"), "0,1,2");
  EXPECT_FALSE(Exists("Out Table_temp"));
  auto columns = ValueOrDie(admin_->Query(
      "SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position)"
      " FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'Out Table'",
      "read the columns", schema_));
  EXPECT_EQ(columns.Text(0, 0),
            "_bizon_id text, _bizon_extracted_at timestamp with time zone, _bizon_loaded_at "
            "timestamp with time zone, _source_record_id text, _source_timestamp timestamp with "
            "time zone, _source_data jsonb");
  auto row = ValueOrDie(
      admin_->Execute("SELECT _source_data->>'note', _source_timestamp = to_timestamp(1700000000),"
                      " length(_bizon_id), _bizon_extracted_at = to_timestamp(1700000001) FROM " +
                          schema_ + ".\"Out Table\" WHERE _source_record_id = '0'",
                      "read a row"));
  EXPECT_EQ(row.Text(0, 0), "tab\there");
  EXPECT_TRUE(row.Bool(0, 1));
  EXPECT_EQ(row.Text(0, 2), "32");
  EXPECT_TRUE(row.Bool(0, 3));

  // The next full refresh replaces the table.
  auto second = Make(SyncMode::kFullRefresh, "job2");
  ASSERT_OK(second->Open(Value()));
  ASSERT_TRUE(second->Write(Batch(10, 12), NowMicros()).has_value());
  EXPECT_EQ(Ids("Out Table"), "0,1,2");  // Readers still see the old rows while it stages.
  ASSERT_OK(second->Finalize());
  EXPECT_EQ(Ids("Out Table"), "10,11");
}

TEST_F(PostgresDestinationTest, ResumeDiscardsRowsWrittenAfterTheRecordedState) {
  auto destination = Make(SyncMode::kIncremental, "job1");
  ASSERT_OK(destination->Open(Value()));
  Value committed = ValueOrDie(destination->Write(Batch(0, 3), NowMicros()));
  // Durable here, but the engine dies before recording this state with a cursor.
  ASSERT_TRUE(destination->Write(Batch(3, 6), NowMicros()).has_value());
  // And a first write to another table after the last recorded state.
  RecordBatch routed;
  routed.Add("6", R"({"id":6})", 0);
  routed.Add("100", R"({"id":100})", 0, "Side Table");
  ASSERT_TRUE(destination->Write(routed, NowMicros()).has_value());
  destination.reset();
  EXPECT_EQ(Ids("Out Table_incremental"), "0,1,2,3,4,5,6");
  EXPECT_EQ(Ids("Side Table_incremental"), "100");

  auto resumed = Make(SyncMode::kIncremental, "job1");
  ASSERT_OK(resumed->Open(committed));
  EXPECT_EQ(Ids("Out Table_incremental"), "0,1,2");
  EXPECT_EQ(Ids("Side Table_incremental"), "");
  Value state = ValueOrDie(resumed->Write(Batch(3, 6), NowMicros()));
  ASSERT_OK(resumed->Finalize());
  EXPECT_EQ(Ids("Out Table"), "0,1,2,3,4,5");
  EXPECT_FALSE(Exists("Out Table_incremental"));

  // A crash after the publish committed, before the job was marked succeeded: the resumed job
  // must not append again.
  auto again = Make(SyncMode::kIncremental, "job1");
  ASSERT_OK(again->Open(state));
  ASSERT_OK(again->Finalize());
  ASSERT_OK(again->OnJobSucceeded());
  EXPECT_EQ(Ids("Out Table"), "0,1,2,3,4,5");

  // The next incremental job appends.
  auto next = Make(SyncMode::kIncremental, "job2");
  ASSERT_OK(next->Open(Value()));
  ASSERT_TRUE(next->Write(Batch(6, 8), NowMicros()).has_value());
  ASSERT_OK(next->Finalize());
  EXPECT_EQ(Ids("Out Table"), "0,1,2,3,4,5,6,7");
}

TEST_F(PostgresDestinationTest, AFreshJobEmptiesTheStagingOfAnAbandonedOne) {
  auto abandoned = Make(SyncMode::kIncremental, "job1");
  ASSERT_OK(abandoned->Open(Value()));
  ASSERT_TRUE(abandoned->Write(Batch(0, 3), NowMicros()).has_value());
  abandoned.reset();
  auto fresh = Make(SyncMode::kIncremental, "job2");
  ASSERT_OK(fresh->Open(Value()));
  EXPECT_EQ(Ids("Out Table_incremental"), "");
}

TEST_F(PostgresDestinationTest, StreamWritesInPlaceAndResumeRollsBackOnlyItsOwnLoads) {
  auto other = Make(SyncMode::kStream, "other-job");
  ASSERT_OK(other->Open(Value()));
  auto destination = Make(SyncMode::kStream, "job1");
  ASSERT_OK(destination->Open(Value()));
  Value committed = ValueOrDie(destination->Write(Batch(0, 2), NowMicros()));
  ASSERT_TRUE(other->Write(Batch(50, 52), NowMicros()).has_value());  // Another pipeline.
  ASSERT_TRUE(destination->Write(Batch(2, 4), NowMicros()).has_value());
  EXPECT_EQ(Ids("Out Table"), "0,1,2,3,50,51");
  destination.reset();

  auto resumed = Make(SyncMode::kStream, "job1");
  ASSERT_OK(resumed->Open(committed));
  EXPECT_EQ(Ids("Out Table"), "0,1,50,51");
  ASSERT_OK(resumed->Finalize());  // A no-op for a stream.
  EXPECT_FALSE(Exists("Out Table_temp"));
}

TEST_F(PostgresDestinationTest, UnnestWritesTypedColumns) {
  Value schema = ValueOrDie(Value::FromJson(R"([{"destination_id": "typed", "record_schema": [
      {"name": "id", "type": "INTEGER"}, {"name": "name", "type": "string"},
      {"name": "score", "type": "FLOAT64"}, {"name": "amount", "type": "NUMERIC"},
      {"name": "active", "type": "boolean"}, {"name": "seen_at", "type": "TIMESTAMP"},
      {"name": "day", "type": "date"}, {"name": "extra", "type": "JSON"}]}])"));
  auto destination = Make(SyncMode::kFullRefresh, "job1",
                          Value(Value::Map{{"unnest", Value(true)},
                                           {"destination_id", Value("typed")},
                                           {"record_schemas", schema}}));
  ASSERT_OK(destination->Open(Value()));
  RecordBatch batch;
  batch.Add("1",
            R"({"id": 1, "name": "a\tb \"q\" \\", "score": 1.5, "amount": 12345678901234567890.123,
                "active": true, "seen_at": "2024-01-02T03:04:05.123456Z", "day": "2024-01-02",
                "extra": {"k": [1, "x"]}})",
            0);
  batch.Add("2",
            R"({"extra": "text", "day": null, "seen_at": null, "active": false, "amount": 0,
                "score": -2e3, "name": null, "id": 2})",
            0);
  ASSERT_TRUE(destination->Write(batch, NowMicros()).has_value());
  ASSERT_OK(destination->Finalize());
  auto rows = ValueOrDie(admin_->Execute(
      "SELECT id, name, score, amount::text, active, seen_at = '2024-01-02 03:04:05.123456+00',"
      " day::text, extra::text, pg_typeof(id)::text, pg_typeof(score)::text,"
      " pg_typeof(seen_at)::text, pg_typeof(extra)::text FROM " +
          schema_ + ".typed ORDER BY id",
      "read the typed rows"));
  ASSERT_EQ(rows.rows(), 2);
  EXPECT_EQ(rows.Text(0, 0), "1");
  EXPECT_EQ(rows.Text(0, 1), "a\tb \"q\" \\");
  EXPECT_EQ(rows.Text(0, 2), "1.5");
  EXPECT_EQ(rows.Text(0, 3), "12345678901234567890.123");  // Numeric keeps every digit.
  EXPECT_EQ(rows.Text(0, 4), "t");
  EXPECT_EQ(rows.Text(0, 5), "t");
  EXPECT_EQ(rows.Text(0, 6), "2024-01-02");
  EXPECT_EQ(rows.Text(0, 7), R"({"k": [1, "x"]})");
  EXPECT_EQ(rows.Text(0, 8), "bigint");
  EXPECT_EQ(rows.Text(0, 9), "double precision");
  EXPECT_EQ(rows.Text(0, 10), "timestamp with time zone");
  EXPECT_EQ(rows.Text(0, 11), "jsonb");
  EXPECT_TRUE(rows.IsNull(1, 1));
  EXPECT_EQ(rows.Text(1, 2), "-2000");
  EXPECT_EQ(rows.Text(1, 4), "f");
  EXPECT_TRUE(rows.IsNull(1, 5));
  EXPECT_TRUE(rows.IsNull(1, 6));
  EXPECT_EQ(rows.Text(1, 7), R"("text")");
}

TEST_F(PostgresDestinationTest, UnnestRejectsARecordWhoseKeysDifferFromTheSchema) {
  Value schema = ValueOrDie(Value::FromJson(
      R"([{"destination_id": "typed", "record_schema": [{"name": "id", "type": "integer"}]}])"));
  auto destination = Make(SyncMode::kFullRefresh, "job1",
                          Value(Value::Map{{"unnest", Value(true)},
                                           {"destination_id", Value("typed")},
                                           {"record_schemas", schema}}));
  ASSERT_OK(destination->Open(Value()));
  RecordBatch extra;
  extra.Add("1", R"({"id": 1, "cookies": 2})", 0);
  auto failed = destination->Write(extra, NowMicros());
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(failed.error().message().find("cookies"), std::string::npos);
  // The connection is still usable: the failed COPY was rolled back.
  RecordBatch good;
  good.Add("2", R"({"id": 2})", 0);
  ASSERT_TRUE(destination->Write(good, NowMicros()).has_value());
  RecordBatch bad_type;
  bad_type.Add("3", R"({"id": "three"})", 0);
  auto rejected = destination->Write(bad_type, NowMicros());
  ASSERT_FALSE(rejected.has_value());
  EXPECT_EQ(rejected.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rejected.error().failure_class(), FailureClass::kDestination);
}

TEST_F(PostgresDestinationTest, ConfigErrorsAreCaughtBeforeConnecting) {
  DestinationContext context{
      .sync = {.job_id = "j", .sync_mode = SyncMode::kIncremental},
      .config = Config(Value(Value::Map{{"destination_id", Value(std::string(60, 'x'))}}))};
  auto too_long = PostgresDestination::Create(context);
  ASSERT_FALSE(too_long.has_value());
  EXPECT_EQ(too_long.error().code(), StatusCode::kInvalidArgument);

  context.config = Config(Value(
      Value::Map{{"unnest", Value(true)},
                 {"record_schemas", ValueOrDie(Value::FromJson(R"([{"destination_id": "Out Table",
          "record_schema": [{"name": "g", "type": "GEOGRAPHY"}]}])"))}}));
  auto bad_type = PostgresDestination::Create(context);
  ASSERT_FALSE(bad_type.has_value());
  EXPECT_NE(bad_type.error().message().find("GEOGRAPHY"), std::string::npos);
}

TEST(PostgresTableNameTest, QuotesAnythingPrintableAndRefusesWhatCannotBeATable) {
  for (std::string_view id : {"x\"; DROP TABLE x; --", "it's", "données_日本", "with space", "a.b",
                              "/abs", "..", "semi;colon"}) {
    EXPECT_TRUE(CheckPostgresTableName(id, SyncMode::kFullRefresh).ok()) << id;
  }
  for (std::string_view id :
       {std::string_view(""), std::string_view("a\0b", 3), std::string_view("a\nb"),
        std::string_view("_bizon_loads"), std::string_view("_bizon_load_id_seq")}) {
    Status checked = CheckPostgresTableName(id, SyncMode::kStream);
    EXPECT_EQ(checked.code(), StatusCode::kInvalidArgument) << id;
    EXPECT_EQ(checked.failure_class(), FailureClass::kDestination) << id;
  }
  EXPECT_NE(CheckPostgresTableName(std::string_view("a\0b", 3), SyncMode::kStream)
                .message()
                .find(R"('a\x00b')"),
            std::string::npos);
}

TEST(PostgresTableNameTest, TheStagingNameMustFitPostgresIdentifierLimit) {
  // 63 bytes is what PostgreSQL keeps; the staging suffix counts.
  EXPECT_TRUE(CheckPostgresTableName(std::string(63, 'x'), SyncMode::kStream).ok());
  EXPECT_FALSE(CheckPostgresTableName(std::string(64, 'x'), SyncMode::kStream).ok());
  EXPECT_TRUE(CheckPostgresTableName(std::string(58, 'x'), SyncMode::kFullRefresh).ok());
  EXPECT_FALSE(CheckPostgresTableName(std::string(59, 'x'), SyncMode::kFullRefresh).ok());
  EXPECT_TRUE(CheckPostgresTableName(std::string(51, 'x'), SyncMode::kIncremental).ok());
  Status too_long = CheckPostgresTableName(std::string(52, 'x'), SyncMode::kIncremental);
  EXPECT_EQ(too_long.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_long.message().find("63 bytes"), std::string::npos) << too_long.message();
  EXPECT_NE(too_long.message().find("needs 64 bytes"), std::string::npos) << too_long.message();
  // Bytes, not characters: 21 three-byte characters are 63 bytes.
  std::string wide;
  for (int i = 0; i < 21; ++i) wide += "日";
  EXPECT_TRUE(CheckPostgresTableName(wide, SyncMode::kStream).ok());
  EXPECT_FALSE(CheckPostgresTableName(wide + "x", SyncMode::kStream).ok());
  EXPECT_EQ(StagingTableName("t", SyncMode::kFullRefresh), "t_temp");
  EXPECT_EQ(StagingTableName("t", SyncMode::kIncremental), "t_incremental");
  EXPECT_EQ(StagingTableName("t", SyncMode::kStream), "t");
}

TEST_F(PostgresDestinationTest, HostileIdsNameExactlyTheirOwnTables) {
  const std::string injected = "x\"; DROP TABLE victim; --";
  ASSERT_OK(admin_->Run("CREATE SCHEMA " + schema_, "create the schema"));
  ASSERT_OK(admin_->Run("CREATE TABLE " + schema_ + ".victim (id int)", "create a bystander"));
  const std::vector<std::string> routed = {"données_日本", "it's", "with space", "a.b",
                                           "/abs",         "..",   "semi;colon"};
  for (SyncMode mode : {SyncMode::kFullRefresh, SyncMode::kIncremental, SyncMode::kStream}) {
    std::string job = "job-" + std::string(ToString(mode));
    auto destination = Make(mode, job, Value(Value::Map{{"destination_id", Value(injected)}}));
    ASSERT_OK(destination->Open(Value()));
    RecordBatch batch;
    batch.Add("0", R"({"id":0})", 0);
    for (size_t i = 0; i < routed.size(); ++i) {
      batch.Add(std::to_string(i + 1), R"({"id":1})", 0, routed[i]);
    }
    ASSERT_TRUE(ValueOrDie(destination->Write(batch, NowMicros())).Find("load_id"));
    ASSERT_OK(destination->Finalize());
    ASSERT_OK(destination->OnJobSucceeded());
    // One row per run and mode; full refresh replaced, incremental and stream appended.
    std::string expected = mode == SyncMode::kFullRefresh   ? "0"
                           : mode == SyncMode::kIncremental ? "0,0"
                                                            : "0,0,0";
    EXPECT_EQ(Ids(injected), expected) << ToString(mode);
    for (size_t i = 0; i < routed.size(); ++i) {
      std::string id = std::to_string(i + 1);
      expected = mode == SyncMode::kFullRefresh   ? id
                 : mode == SyncMode::kIncremental ? id + "," + id
                                                  : id + "," + id + "," + id;
      EXPECT_EQ(Ids(routed[i]), expected) << routed[i] << " " << ToString(mode);
    }
  }
  EXPECT_TRUE(Exists("victim"));
  // Exactly the bystander, the bookkeeping and the eight tables: no staging left, nothing else.
  auto tables = ValueOrDie(
      admin_->Query("SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                    " WHERE n.nspname = $1 AND c.relkind = 'r'",
                    "count the tables", schema_));
  EXPECT_EQ(tables.Text(0, 0), "10");
  // The dot is part of the name, not a schema separator.
  auto dotted = ValueOrDie(
      admin_->Query("SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                    " WHERE n.nspname = $1 AND c.relname = 'a.b'",
                    "look up the dotted table", schema_));
  EXPECT_EQ(dotted.Text(0, 0), "1");
}

TEST_F(PostgresDestinationTest, ARefusedRecordIdFailsTheWriteAndPublishesNothing) {
  auto previous = Make(SyncMode::kFullRefresh, "job1");
  ASSERT_OK(previous->Open(Value()));
  ASSERT_TRUE(previous->Write(Batch(0, 2), NowMicros()).has_value());
  ASSERT_OK(previous->Finalize());
  ASSERT_OK(previous->OnJobSucceeded());

  const std::vector<std::string> refused = {std::string(59, 'l'), std::string("nul\0x", 5),
                                            "line\nbreak", "_bizon_loads", "Out Table_temp"};
  for (const std::string& id : refused) {
    auto destination = Make(SyncMode::kFullRefresh, "job-" + NewUuidHex());
    ASSERT_OK(destination->Open(Value()));
    RecordBatch batch = Batch(10, 12);
    batch.Add("20", R"({"id":20})", 0, "fine");
    batch.Add("21", R"({"id":21})", 0, id);
    auto written = destination->Write(batch, NowMicros());
    ASSERT_FALSE(written.has_value()) << QuoteDestinationId(id);
    EXPECT_EQ(written.error().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(written.error().failure_class(), FailureClass::kDestination);
    EXPECT_NE(written.error().message().find(QuoteDestinationId(id)), std::string::npos)
        << written.error().ToString();
    // The engine fails the run: no Finalize(). The published table is untouched.
    EXPECT_EQ(Ids("Out Table"), "0,1");
    EXPECT_FALSE(Exists("fine"));
  }
  EXPECT_FALSE(Exists(std::string(59, 'l')));
  EXPECT_FALSE(Exists(std::string(59, 'l') + "_tem"));  // What a silent truncation would make.
}

TEST_F(PostgresDestinationTest, AppendedBatchesCommitAsOneLoadAtSync) {
  auto destination = Make(SyncMode::kIncremental, "job1");
  ASSERT_TRUE(destination->CanAppend());
  ASSERT_OK(destination->Open(Value()));
  // Nothing appended yet: Sync() hands back the state it was opened with.
  EXPECT_TRUE(ValueOrDie(destination->Sync()).is_null());

  ASSERT_OK(destination->Append(Batch(0, 2), NowMicros()));
  RecordBatch routed;
  routed.Add("2", R"({"id":2})", 0);
  routed.Add("100", R"({"id":100})", 0, "Side Table");
  routed.Add("3", R"({"id":3})", 0);
  ASSERT_OK(destination->Append(routed, NowMicros()));
  ASSERT_OK(destination->Append(Batch(4, 6), NowMicros()));
  // The load is one open transaction: another session sees none of it yet.
  EXPECT_EQ(Ids("Out Table_incremental"), "");
  EXPECT_FALSE(Exists("Side Table_incremental"));

  Value state = ValueOrDie(destination->Sync());
  ASSERT_TRUE(state.Find("load_id") != nullptr);
  EXPECT_EQ(Ids("Out Table_incremental"), "0,1,2,3,4,5");
  EXPECT_EQ(Ids("Side Table_incremental"), "100");
  // One log row per table of the load, with the rows of every COPY into it summed.
  auto logged = ValueOrDie(
      admin_->Query("SELECT string_agg(table_name || '=' || rows, ',' ORDER BY table_name) FROM " +
                        schema_ + "._bizon_loads WHERE load_id = $1 AND kind = 'write'",
                    "read the load log", state.Find("load_id")->AsInteger()));
  EXPECT_EQ(logged.Text(0, 0), "Out Table=6,Side Table=1");
  // A second Sync() with nothing appended since returns the same state and logs nothing.
  EXPECT_EQ(ValueOrDie(destination->Sync()).ToJson(), state.ToJson());

  // Appended after the last recorded state, then a crash: the resumed job sees none of it.
  ASSERT_OK(destination->Append(Batch(6, 9), NowMicros()));
  destination.reset();
  auto resumed = Make(SyncMode::kIncremental, "job1");
  ASSERT_OK(resumed->Open(state));
  EXPECT_EQ(Ids("Out Table_incremental"), "0,1,2,3,4,5");
  ASSERT_OK(resumed->Append(Batch(6, 8), NowMicros()));
  ASSERT_TRUE(ValueOrDie(resumed->Sync()).Find("load_id") != nullptr);
  ASSERT_OK(resumed->Finalize());
  EXPECT_EQ(Ids("Out Table"), "0,1,2,3,4,5,6,7");
  EXPECT_EQ(Ids("Side Table"), "100");
}

TEST_F(PostgresDestinationTest, AFailedAppendRollsTheOpenLoadBack) {
  auto destination = Make(SyncMode::kStream, "job1");
  ASSERT_OK(destination->Open(Value()));
  Value state = ValueOrDie(destination->Write(Batch(0, 2), NowMicros()));
  ASSERT_OK(destination->Append(Batch(2, 4), NowMicros()));
  RecordBatch refused = Batch(4, 5);
  refused.Add("5", R"({"id":5})", 0, "_bizon_loads");
  Status appended = destination->Append(refused, NowMicros());
  ASSERT_FALSE(appended.ok());
  EXPECT_EQ(appended.failure_class(), FailureClass::kDestination);
  // The rows appended before the failure went with it; the committed load stayed.
  EXPECT_EQ(Ids("Out Table"), "0,1");
  EXPECT_EQ(ValueOrDie(destination->Sync()).ToJson(), state.ToJson());
}

}  // namespace
}  // namespace bizon
