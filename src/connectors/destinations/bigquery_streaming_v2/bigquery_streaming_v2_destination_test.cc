// The bigquery_streaming_v2 destination against the in-process Storage Write fake
// (tests/fakes/fake_bigquery_write.h) and the REST fake (tests/fakes/fake_bigquery.py): committed
// streams with offsets, a resume from the recorded offset, refused rows, oversized rows, the
// default-stream option and the SQL publish; then a round trip through the emulator.
#include "connectors/destinations/bigquery_streaming_v2/bigquery_streaming_v2_destination.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/clock.h"
#include "fakes/fake_bigquery_write.h"
#include "google/google_test_support.h"
#include "google/proto_rows.h"
#include "testing/test_servers.h"

namespace bizon {
namespace {

using testing_support::FakeBigQueryWrite;
using Fault = FakeBigQueryWrite::Fault;

constexpr int64_t kLoadedAt = 1733400000000000;  // 2024-12-05 12:00:00 UTC.

Value UnnestSchemas(const std::string& destination_id) {
  return Value(Value::List{Value(
      Value::Map{{"destination_id", destination_id},
                 {"record_schema",
                  Value(Value::List{
                      Value(Value::Map{{"name", "id"}, {"type", "INTEGER"}, {"mode", "REQUIRED"}}),
                      Value(Value::Map{{"name", "name"}, {"type", "STRING"}, {"mode", "NULLABLE"}}),
                  })}})});
}

RecordBatch Records(int from, int count, const std::string& padding = "") {
  RecordBatch batch;
  for (int i = from; i < from + count; ++i) {
    batch.Add(fmt::format("r{}", i), fmt::format(R"({{"id":{},"name":"n{}{}"}})", i, i, padding),
              kLoadedAt - 1000000);
  }
  batch.SetExtractedAt(kLoadedAt - 500000);
  return batch;
}

class BigqueryStreamingV2FakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_ = FakeBigQueryWrite::Start({});
    ASSERT_NE(write_, nullptr);
    ASSERT_FALSE(rest_.url().empty()) << "tests/fakes/fake_bigquery.py did not start";
  }

  void TearDown() override {
    if (write_) {
      EXPECT_EQ(write_->violations(), std::vector<std::string>{});
    }
    EXPECT_EQ(rest_.Violations(), "[]");
  }

  /// A destination on the fakes for `sync_mode`, with `config` over project p, dataset d.
  std::unique_ptr<BigqueryStreamingV2Destination> Make(
      SyncMode sync_mode, Value config, size_t max_request_bytes = 0,
      BigqueryStreamingFlavor flavor = BigqueryStreamingFlavor::kV2) {
    config.Set("project_id", "p");
    config.Set("dataset_id", "d");
    DestinationContext context;
    context.sync = {.name = "pipe",
                    .job_id = "job1",
                    .source_name = "src",
                    .stream_name = "items",
                    .sync_mode = sync_mode,
                    .destination_name = "bigquery_streaming_v2"};
    context.config = std::move(config);
    context.large_records = [this](int64_t rows, std::string_view destination_id) {
      large_records_.emplace_back(std::string(destination_id), rows);
    };
    auto made =
        BigqueryStreamingV2Destination::Create(context,
                                               {.bigquery_endpoint = rest_.url(),
                                                .storage_endpoint = write_->endpoint(),
                                                .max_request_bytes = max_request_bytes,
                                                .credentials = MakeAnonymousGoogleCredentials(),
                                                .min_bytes_per_stream = min_bytes_per_stream_},
                                               flavor);
    EXPECT_TRUE(made) << made.error().ToString();
    return made ? std::move(*made) : nullptr;
  }

  /// The bodies of the POST requests the REST fake received on a path ending in `suffix`.
  std::vector<Value> PostedBodies(std::string_view suffix) {
    std::vector<Value> out;
    Value report = rest_.Report();
    const Value* requests = report.Find("requests");
    if (requests == nullptr || !requests->is_list()) return out;
    for (const Value& request : requests->AsList()) {
      if (request.GetString("method") != "POST" || !request.GetString("path").ends_with(suffix)) {
        continue;
      }
      if (auto body = Value::FromJson(request.GetString("body"))) out.push_back(std::move(*body));
    }
    return out;
  }

  /// The ids of the tables the REST fake was asked to create, in order.
  std::vector<std::string> CreatedTables() {
    std::vector<std::string> out;
    for (const Value& body : PostedBodies("/tables")) {
      const Value* reference = body.Find("tableReference");
      if (reference != nullptr) out.push_back(reference->GetString("tableId"));
    }
    return out;
  }

  /// The serialized rows an unnest destination sends for `records`.
  static std::vector<std::string> Encoded(const RecordBatch& records) {
    auto schema = ProtoRowSchema::Make({{.name = "id", .type = "INTEGER", .mode = "REQUIRED"},
                                        {.name = "name", .type = "STRING"}});
    EXPECT_TRUE(schema);
    ProtoRowEncoder encoder(*schema);
    std::vector<std::string> rows;
    for (size_t i = 0; i < records.size(); ++i) {
      std::string row;
      EXPECT_TRUE(encoder.Encode(records.payload(i), row).ok());
      rows.push_back(std::move(row));
    }
    return rows;
  }

  static Value UnnestConfig() {
    return Value(Value::Map{{"unnest", true},
                            {"destination_id", "p.d.events"},
                            {"record_schemas", UnnestSchemas("p.d.events")},
                            {"time_partitioning", Value()}});
  }

  /// The SQL of the query jobs the REST fake received, in order.
  std::vector<std::string> Statements() {
    std::vector<std::string> out;
    for (const Value& body : PostedBodies("/jobs")) {
      const Value* configuration = body.Find("configuration");
      const Value* query = configuration != nullptr ? configuration->Find("query") : nullptr;
      if (query != nullptr) out.push_back(query->GetString("query"));
    }
    return out;
  }

  /// A run in `sync_mode` (unnest) that writes rows 0-2, whose cursor is recorded, then rows 3-4
  /// in one request, and dies before that cursor is recorded: the state a resume gets.
  Value DeadRunState(SyncMode sync_mode) {
    auto dead = Make(sync_mode, UnnestConfig());
    if (dead == nullptr || !dead->Open(Value()).ok()) return Value();
    auto first = dead->Write(Records(0, 3), kLoadedAt);
    EXPECT_TRUE(first) << first.error().ToString();
    if (!first) return Value();
    EXPECT_TRUE(dead->OnCursorRecorded(*first).ok());  // As the engine does once it is recorded.
    EXPECT_TRUE(dead->Write(Records(3, 2), kLoadedAt));
    return *first;
  }

  /// The upload bodies the REST fake received (load jobs carrying their data).
  std::vector<std::string> Uploads() {
    std::vector<std::string> out;
    Value report = rest_.Report();
    const Value* uploads = report.Find("uploads");
    if (uploads == nullptr || !uploads->is_list()) return out;
    for (const Value& upload : uploads->AsList()) out.push_back(upload.GetString("data"));
    return out;
  }

  FakeProcess rest_{"fake_bigquery.py"};
  std::unique_ptr<FakeBigQueryWrite> write_;
  /// What Make() passes on: 0 keeps the destination's threshold.
  size_t min_bytes_per_stream_ = 0;
  /// What the destinations made by Make() reported as large records: (destination id, rows).
  std::vector<std::pair<std::string, int64_t>> large_records_;
};

const Value& OnlyTable(const Value& state) {
  static const Value kNone;
  const Value* tables = state.Find("tables");
  if (tables == nullptr || !tables->is_list() || tables->AsList().size() != 1) return kNone;
  return tables->AsList()[0];
}

/// The streams the state's only table has not committed yet.
std::vector<std::string> Uncommitted(const Value& state) {
  std::vector<std::string> out;
  const Value* streams = OnlyTable(state).Find("uncommitted");
  if (streams == nullptr || !streams->is_list()) return out;
  for (const Value& stream : streams->AsList()) out.push_back(stream.AsString());
  return out;
}

std::vector<std::string> Sorted(std::vector<std::string> rows) {
  std::sort(rows.begin(), rows.end());
  return rows;
}

constexpr std::string_view kRawTable = "projects/p/datasets/d/tables/_bizon_src_items";
constexpr std::string_view kEventsIncremental = "projects/p/datasets/d/tables/events_incremental";

TEST_F(BigqueryStreamingV2FakeTest, EachWriteIsAPendingStreamCommittedOnceItsCursorIsRecorded) {
  auto destination = Make(SyncMode::kStream, Value(Value::Map{{"bq_max_rows_per_request", 2}}));
  ASSERT_NE(destination, nullptr);
  ASSERT_TRUE(destination->Open(Value()).ok());
  auto first = destination->Write(Records(0, 3), kLoadedAt);
  ASSERT_TRUE(first) << first.error().ToString();
  std::vector<std::string> streams = Uncommitted(*first);
  ASSERT_EQ(streams.size(), 1u);
  EXPECT_TRUE(streams[0].starts_with(std::string(kRawTable) + "/streams/")) << streams[0];
  EXPECT_EQ(write_->Rows(streams[0]).size(), 3u);
  EXPECT_EQ(write_->VisibleRows(std::string(kRawTable)).size(), 0u);  // Not recorded yet.
  ASSERT_TRUE(destination->OnCursorRecorded(*first).ok());
  EXPECT_EQ(write_->VisibleRows(std::string(kRawTable)).size(), 3u);
  ASSERT_TRUE(destination->OnCursorRecorded(*first).ok());  // Again: nothing more.
  EXPECT_EQ(write_->VisibleRows(std::string(kRawTable)).size(), 3u);

  auto second = destination->Write(Records(3, 2), kLoadedAt);
  ASSERT_TRUE(second) << second.error().ToString();
  ASSERT_EQ(Uncommitted(*second).size(), 1u);
  EXPECT_NE(Uncommitted(*second)[0], streams[0]);  // A stream of its own.
  ASSERT_TRUE(destination->OnCursorRecorded(*second).ok());
  EXPECT_EQ(write_->VisibleRows(std::string(kRawTable)).size(), 5u);
  // 2 + 1 and 2 rows: bq_max_rows_per_request.
  EXPECT_EQ(write_->append_requests(), 3);
  ASSERT_TRUE(destination->Finalize().ok());
  EXPECT_EQ(Statements(), std::vector<std::string>{});  // Stream mode publishes nothing.
}

// The dead run wrote rows 3-4 after its last recorded cursor (rows 0-2): never committed. The
// resumed run fetches them again, cut and ordered otherwise (a kafka source interleaves its
// partitions differently from run to run), and each row is visible once.
TEST_F(BigqueryStreamingV2FakeTest, RowsWrittenAfterTheLastCursorAreWrittenOnceHoweverRefetched) {
  Value recorded = DeadRunState(SyncMode::kIncremental);
  EXPECT_EQ(write_->VisibleRows(std::string(kEventsIncremental)), Encoded(Records(0, 3)));
  auto resumed = Make(SyncMode::kIncremental, UnnestConfig());
  ASSERT_NE(resumed, nullptr);
  ASSERT_TRUE(resumed->Open(recorded).ok());  // Commits the recorded stream again: done before.
  for (const RecordBatch& batch : {Records(4, 2), Records(3, 1)}) {
    auto written = resumed->Write(batch, kLoadedAt);
    ASSERT_TRUE(written) << written.error().ToString();
    ASSERT_TRUE(resumed->OnCursorRecorded(*written).ok());
  }
  EXPECT_EQ(Sorted(write_->VisibleRows(std::string(kEventsIncremental))),
            Sorted(Encoded(Records(0, 6))));

  ASSERT_TRUE(resumed->Finalize().ok());
  std::vector<std::string> statements = Statements();
  ASSERT_EQ(statements.size(), 1u);
  EXPECT_EQ(statements[0],
            "INSERT INTO `p.d.events` (`id`, `name`) SELECT `id`, `name` FROM "
            "`p.d.events_incremental`");
  ASSERT_TRUE(resumed->OnJobSucceeded().ok());
}

// A run that dies before its first cursor is recorded leaves nothing visible; the next run of
// the job writes everything once.
TEST_F(BigqueryStreamingV2FakeTest, RunDyingBeforeItsFirstCursorLeavesNothingVisible) {
  {
    auto dead = Make(SyncMode::kStream, UnnestConfig());
    ASSERT_NE(dead, nullptr);
    ASSERT_TRUE(dead->Open(Value()).ok());
    auto written = dead->Write(Records(0, 3), kLoadedAt);  // Its cursor is never recorded.
    ASSERT_TRUE(written) << written.error().ToString();
  }
  EXPECT_EQ(write_->VisibleRows("projects/p/datasets/d/tables/events"), std::vector<std::string>{});
  auto resumed = Make(SyncMode::kStream, UnnestConfig());
  ASSERT_NE(resumed, nullptr);
  ASSERT_TRUE(resumed->Open(Value()).ok());
  auto again = resumed->Write(Records(0, 4), kLoadedAt);
  ASSERT_TRUE(again) << again.error().ToString();
  ASSERT_TRUE(resumed->OnCursorRecorded(*again).ok());
  EXPECT_EQ(write_->VisibleRows("projects/p/datasets/d/tables/events"), Encoded(Records(0, 4)));
}

// Finalize() publishes only what recorded cursors cover: a write whose stream was never
// committed stops it.
TEST_F(BigqueryStreamingV2FakeTest, FinalizeRefusesAWriteNoCursorCovers) {
  auto destination = Make(SyncMode::kFullRefresh, UnnestConfig());
  ASSERT_NE(destination, nullptr);
  ASSERT_TRUE(destination->Open(Value()).ok());
  ASSERT_TRUE(destination->Write(Records(0, 2), kLoadedAt));
  Status finalized = destination->Finalize();
  ASSERT_FALSE(finalized.ok());
  EXPECT_NE(finalized.message().find("was never committed; nothing is published"),
            std::string::npos)
      << finalized.message();
  EXPECT_EQ(Statements(), std::vector<std::string>{});
}

TEST_F(BigqueryStreamingV2FakeTest, RefusedRowFailsTheWriteNamingRecordColumnAndReason) {
  Value config = UnnestConfig();
  config.Set("bq_max_rows_per_request", 2);
  auto destination = Make(SyncMode::kStream, config);
  ASSERT_NE(destination, nullptr);
  ASSERT_TRUE(destination->Open(Value()).ok());
  auto first = destination->Write(Records(0, 2), kLoadedAt);
  ASSERT_TRUE(first) << first.error().ToString();
  ASSERT_TRUE(destination->OnCursorRecorded(*first).ok());
  // BigQuery's documented shape: RowError{index, code FIELDS_ERROR, message naming the field}.
  write_->Script({{.kind = Fault::Kind::kRowErrors,
                   .row_errors = {{1,
                                   "Field name: STRING(3) has maximum length 3 but got a "
                                   "value with length 5"}}}});
  auto written = destination->Write(Records(2, 4), kLoadedAt);
  ASSERT_FALSE(written);
  const Status& error = written.error();
  EXPECT_EQ(error.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(error.failure_class(), FailureClass::kDestination);
  EXPECT_NE(error.message().find("record 'r3': Field name: STRING(3) has maximum length 3"),
            std::string::npos)
      << error.message();
  EXPECT_NE(error.message().find("p.d.events"), std::string::npos) << error.message();
  // Neither the refused request nor the one after it is visible.
  EXPECT_EQ(write_->VisibleRows("projects/p/datasets/d/tables/events"), Encoded(Records(0, 2)));
}

TEST_F(BigqueryStreamingV2FakeTest, OversizedRowIsLoadedByAJobWithItsData) {
  auto destination = Make(SyncMode::kStream, UnnestConfig(), /*max_request_bytes=*/600);
  ASSERT_NE(destination, nullptr);
  ASSERT_TRUE(destination->Open(Value()).ok());
  RecordBatch records = Records(0, 2);
  records.Add("big", R"({"id":99,"name":")" + std::string(1000, 'x') + R"("})", kLoadedAt);
  auto written = destination->Write(records, kLoadedAt);
  ASSERT_TRUE(written) << written.error().ToString();
  ASSERT_EQ(Uncommitted(*written).size(), 1u);
  EXPECT_EQ(write_->Rows(Uncommitted(*written)[0]).size(), 2u);  // Not the large row.
  Value report = rest_.Report();
  const Value* uploads = report.Find("uploads");
  ASSERT_NE(uploads, nullptr);
  ASSERT_EQ(uploads->AsList().size(), 1u) << report.ToJson();
  const Value& upload = uploads->AsList()[0];
  EXPECT_EQ(upload.GetString("data"), R"({"id":99,"name":")" + std::string(1000, 'x') + "\"}\n");
  EXPECT_TRUE(upload.GetString("job_id").starts_with("bizon_load_job1_")) << report.ToJson();
  const Value* table = upload.Find("destination");
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->GetString("tableId"), "events");
  // The monitor's bizon_pipeline.large_records, as the original counts it.
  EXPECT_EQ(large_records_, (std::vector<std::pair<std::string, int64_t>>{{"p.d.events", 1}}));
}

// A row too large for a request is loaded by a job of its own. The dead run loaded it and died
// before its cursor was recorded; the resumed run fetches it again in another write, with other
// rows around it, and finds the dead run's job done: the row is visible once.
TEST_F(BigqueryStreamingV2FakeTest, OversizedRowRefetchedInAnotherWriteIsLoadedOnce) {
  const std::string big = R"({"id":99,"name":")" + std::string(1000, 'x') + R"("})";
  {
    auto dead = Make(SyncMode::kStream, UnnestConfig(), /*max_request_bytes=*/600);
    ASSERT_NE(dead, nullptr);
    ASSERT_TRUE(dead->Open(Value()).ok());
    RecordBatch records = Records(0, 2);
    records.Add("big", big, kLoadedAt);
    ASSERT_TRUE(dead->Write(records, kLoadedAt));  // Its cursor is never recorded.
  }
  EXPECT_EQ(Uploads(), std::vector<std::string>{big + "\n"});
  auto resumed = Make(SyncMode::kStream, UnnestConfig(), /*max_request_bytes=*/600);
  ASSERT_NE(resumed, nullptr);
  ASSERT_TRUE(resumed->Open(Value()).ok());
  auto first = resumed->Write(Records(1, 1), kLoadedAt);
  ASSERT_TRUE(first) << first.error().ToString();
  ASSERT_TRUE(resumed->OnCursorRecorded(*first).ok());
  RecordBatch rest = Records(0, 1);
  rest.Add("big", big, kLoadedAt + 5);  // Stamped anew by the re-fetch.
  auto second = resumed->Write(rest, kLoadedAt);
  ASSERT_TRUE(second) << second.error().ToString();
  ASSERT_TRUE(resumed->OnCursorRecorded(*second).ok());
  EXPECT_EQ(Uploads(), std::vector<std::string>{big + "\n"});  // Not loaded again.
  EXPECT_EQ(Sorted(write_->VisibleRows("projects/p/datasets/d/tables/events")),
            Sorted(Encoded(Records(0, 2))));
}

// max_concurrent_threads: a write whose table has enough bytes is split over PENDING streams
// appended in parallel; none is visible before the cursor, all of them after, each row once.
TEST_F(BigqueryStreamingV2FakeTest, ALargeWriteIsSplitOverParallelStreamsCommittedTogether) {
  min_bytes_per_stream_ = 40;  // Three records' worth.
  Value config = UnnestConfig();
  config.Set("max_concurrent_threads", 3);
  auto destination = Make(SyncMode::kStream, config);
  ASSERT_NE(destination, nullptr);
  ASSERT_TRUE(destination->Open(Value()).ok());
  auto written = destination->Write(Records(0, 9), kLoadedAt);
  ASSERT_TRUE(written) << written.error().ToString();
  std::vector<std::string> streams = Uncommitted(*written);
  ASSERT_EQ(streams.size(), 3u);
  std::vector<std::string> all;
  for (size_t i = 0; i < streams.size(); ++i) {
    std::vector<std::string> rows = write_->Rows(streams[i]);
    // Contiguous thirds, in order.
    EXPECT_EQ(rows, Encoded(Records(static_cast<int>(3 * i), 3))) << streams[i];
    all.insert(all.end(), rows.begin(), rows.end());
  }
  EXPECT_EQ(write_->append_calls(), 3);
  EXPECT_EQ(write_->VisibleRows("projects/p/datasets/d/tables/events"), std::vector<std::string>{});
  ASSERT_TRUE(destination->OnCursorRecorded(*written).ok());
  EXPECT_EQ(Sorted(write_->VisibleRows("projects/p/datasets/d/tables/events")),
            Sorted(Encoded(Records(0, 9))));

  // A small write keeps one stream.
  auto small = destination->Write(Records(9, 2), kLoadedAt);
  ASSERT_TRUE(small) << small.error().ToString();
  EXPECT_EQ(Uncommitted(*small).size(), 1u);
}

// One part refused fails the whole write: none of its streams is listed, so none is committed,
// whatever the other threads wrote.
TEST_F(BigqueryStreamingV2FakeTest, ARefusedPartFailsTheWholeParallelWrite) {
  min_bytes_per_stream_ = 40;
  Value config = UnnestConfig();
  config.Set("max_concurrent_threads", 3);
  auto destination = Make(SyncMode::kStream, config);
  ASSERT_NE(destination, nullptr);
  ASSERT_TRUE(destination->Open(Value()).ok());
  write_->Script({{.kind = Fault::Kind::kRowErrors,
                   .row_errors = {{0, "Field name: INT64 value out of range"}}}});
  auto written = destination->Write(Records(0, 9), kLoadedAt);
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().failure_class(), FailureClass::kDestination);
  EXPECT_NE(written.error().message().find("BigQuery refused rows written to p.d.events"),
            std::string::npos)
      << written.error().message();
  EXPECT_NE(written.error().message().find(": Field name: INT64 value out of range"),
            std::string::npos)
      << written.error().message();
  EXPECT_EQ(write_->VisibleRows("projects/p/datasets/d/tables/events"), std::vector<std::string>{});
  Status finalized = destination->Finalize();  // Nothing uncommitted is listed either.
  EXPECT_TRUE(finalized.ok()) << finalized.ToString();
  EXPECT_EQ(write_->VisibleRows("projects/p/datasets/d/tables/events"), std::vector<std::string>{});
}

// default_stream: one long-lived AppendRows connection per table, its schema sent once.
TEST_F(BigqueryStreamingV2FakeTest, DefaultStreamKeepsOneConnectionPerTableAcrossWrites) {
  Value config = UnnestConfig();
  config.Set("write_mode", "default_stream");
  auto destination = Make(SyncMode::kStream, config);
  ASSERT_NE(destination, nullptr);
  ASSERT_TRUE(destination->Open(Value()).ok());
  for (int from : {0, 2, 4}) {
    auto written = destination->Write(Records(from, 2), kLoadedAt);
    ASSERT_TRUE(written) << written.error().ToString();
    // Acknowledged before Write() returns.
    EXPECT_EQ(write_->VisibleRows("projects/p/datasets/d/tables/events"),
              Encoded(Records(0, from + 2)));
  }
  EXPECT_EQ(write_->append_calls(), 1);
  EXPECT_EQ(write_->schema_flags(), (std::vector<bool>{true, false, false}));
}

// On that connection a row index counts from its first write: the refused row of a later write
// is still named by its record.
TEST_F(BigqueryStreamingV2FakeTest, ARowRefusedOnTheKeptDefaultStreamIsNamed) {
  Value config = UnnestConfig();
  config.Set("write_mode", "default_stream");
  config.Set("bq_max_rows_per_request", 2);
  auto destination = Make(SyncMode::kStream, config);
  ASSERT_NE(destination, nullptr);
  ASSERT_TRUE(destination->Open(Value()).ok());
  ASSERT_TRUE(destination->Write(Records(0, 3), kLoadedAt));
  write_->Script({{.kind = Fault::Kind::kRowErrors, .row_errors = {{1, "Field name: too long"}}}});
  auto written = destination->Write(Records(3, 2), kLoadedAt);
  ASSERT_FALSE(written);
  EXPECT_NE(written.error().message().find("record 'r4': Field name: too long"), std::string::npos)
      << written.error().message();
  EXPECT_EQ(write_->append_calls(), 1);
}

TEST_F(BigqueryStreamingV2FakeTest, DefaultStreamOptionAppendsWithoutOffsetsAndPublishesBySql) {
  auto destination =
      Make(SyncMode::kFullRefresh, Value(Value::Map{{"write_mode", "default_stream"}}));
  ASSERT_NE(destination, nullptr);
  ASSERT_TRUE(destination->Open(Value()).ok());
  auto written = destination->Write(Records(0, 3), kLoadedAt);
  ASSERT_TRUE(written) << written.error().ToString();
  EXPECT_EQ(OnlyTable(*written).Find("stream"), nullptr);  // Nothing to resume from.
  EXPECT_EQ(
      write_->Rows("projects/p/datasets/d/tables/_bizon_src_items_temp/streams/_default").size(),
      3u);
  ASSERT_TRUE(destination->Finalize().ok());
  std::vector<std::string> statements = Statements();
  ASSERT_EQ(statements.size(), 1u);
  EXPECT_EQ(statements[0],
            "CREATE OR REPLACE TABLE `p.d._bizon_src_items` PARTITION BY "
            "TIMESTAMP_TRUNC(`_bizon_loaded_at`, DAY) AS SELECT `_source_record_id`, "
            "`_source_timestamp`, `_source_data`, `_bizon_extracted_at`, `_bizon_loaded_at`, "
            "`_bizon_id` FROM `p.d._bizon_src_items_temp`");
  // A repeated Finalize() (a crash before the success was recorded) finds the job done.
  ASSERT_TRUE(destination->Finalize().ok());
  EXPECT_EQ(Statements().size(), 1u);
}

// bigquery_streaming (spec 8.2): no staging table in any sync mode; a full refresh appends to the
// final table through a committed stream and publishes nothing.
// ---- write_disposition merge: change data capture --------------------------------------------

TEST(BigqueryStreamingV2CdcTest, SequenceNumbersAreHexSectionsInBigQuerysForm) {
  EXPECT_EQ(ChangeSequenceNumber({1, 1000}), "0000000000000001/00000000000003E8");
  EXPECT_EQ(ChangeSequenceNumber({0xFFFFFFFFFFFFFFFFULL}), "FFFFFFFFFFFFFFFF");
  // Offsets compare as numbers section by section; the fixed width makes them compare as text
  // too.
  EXPECT_LT(ChangeSequenceNumber({0, 9}), ChangeSequenceNumber({0, 10}));
}

/// A Debezium topic of `keys` users over two partitions (a key stays in its partition), as the
/// kafka source delivers it, and the source table it ends as.
struct DebeziumTopic {
  std::vector<std::vector<std::string>> partitions{2};
  std::map<int, std::string> table;  // id -> name

  DebeziumTopic(int keys, int events, uint32_t seed) {
    std::mt19937 random(seed);
    std::vector<int64_t> offsets = {100, 500};
    for (int event = 0; event < events; ++event) {
      int id = static_cast<int>(random() % static_cast<uint32_t>(keys));
      int partition = id % 2;
      auto current = table.find(id);
      std::string name = fmt::format("user{}-v{}", id, event);
      std::string before = current == table.end()
                               ? "null"
                               : fmt::format(R"({{"id":{},"name":"{}"}})", id, current->second);
      std::string op = current == table.end() ? "c" : (random() % 10 < 3 ? "d" : "u");
      std::string after = op == "d" ? "null" : fmt::format(R"({{"id":{},"name":"{}"}})", id, name);
      int64_t offset = offsets[partition]++;
      partitions[partition].push_back(fmt::format(
          R"({{"topic":"db.users","offset":{},"partition":{},"timestamp":1,"keys":{{"id":{}}},)"
          R"("headers":{{}},"value":{{"op":"{}","before":{},"after":{},"source":{{}}}},"schema":{{}}}})",
          offset, partition, id, op, before, after));
      if (op == "d") {
        table.erase(id);
        // Kafka's tombstone for the deleted key follows the delete.
        partitions[partition].push_back(fmt::format(
            R"({{"topic":"db.users","offset":{},"partition":{},"timestamp":1,"keys":{{"id":{}}},)"
            R"("headers":{{}},"value":null,"schema":{{}}}})",
            offsets[partition]++, partition, id));
      } else {
        table[id] = name;
      }
    }
  }

  /// Both partitions interleaved as a consumer might read them (each in its own order), from
  /// the given positions on.
  std::vector<std::string> Interleaved(uint32_t seed, size_t from0 = 0, size_t from1 = 0) const {
    std::mt19937 random(seed);
    std::vector<std::string> out;
    size_t next[2] = {from0, from1};
    while (next[0] < partitions[0].size() || next[1] < partitions[1].size()) {
      int take = next[1] >= partitions[1].size()   ? 0
                 : next[0] >= partitions[0].size() ? 1
                                                   : static_cast<int>(random() % 2);
      out.push_back(partitions[take][next[take]++]);
    }
    return out;
  }
};

RecordBatch Batch(const std::vector<std::string>& messages, size_t from, size_t count) {
  RecordBatch batch;
  for (size_t i = from; i < std::min(messages.size(), from + count); ++i) {
    batch.Add(fmt::format("m{}", i), messages[i], kLoadedAt);
  }
  return batch;
}

Value CdcConfig() {
  Value schema(
      Value::List{Value(Value::Map{{"name", "id"}, {"type", "INTEGER"}, {"mode", "REQUIRED"}}),
                  Value(Value::Map{{"name", "name"}, {"type", "STRING"}, {"mode", "NULLABLE"}})});
  return Value(Value::Map{
      {"unnest", true},
      {"destination_id", "p.d.users"},
      {"record_schemas", Value(Value::List{Value(Value::Map{{"destination_id", "p.d.users"},
                                                            {"record_schema", schema}})})},
      {"time_partitioning", Value()},
      {"write_disposition", "merge"},
      {"primary_key", Value(Value::List{Value("id")})},
      {"change_format", "debezium"}});
}

/// The fake's CDC table as id -> name.
std::map<int, std::string> CdcTable(const FakeBigQueryWrite& write) {
  std::map<int, std::string> out;
  for (const std::string& row : write.CdcRows("projects/p/datasets/d/tables/users")) {
    auto parsed = Value::FromJson(row);
    EXPECT_TRUE(parsed) << row;
    if (!parsed) continue;
    out[static_cast<int>(std::stol(parsed->GetString("id")))] = parsed->GetString("name");
  }
  return out;
}

// A Debezium topic into a merging table: every change goes through the default stream with its
// _CHANGE_TYPE and a _CHANGE_SEQUENCE_NUMBER made of its partition and offset, and the table
// ends equal to the source table. A run that dies after writing and before its cursor is
// recorded is resumed with the same messages cut and interleaved otherwise: the changes written
// twice are applied once (their sequence numbers), none is lost.
TEST_F(BigqueryStreamingV2FakeTest, DebeziumTopicMergesThroughCdcIntoTheSourceTable) {
  write_->DeclarePrimaryKey("projects/p/datasets/d/tables/users", {"id"});
  DebeziumTopic topic(/*keys=*/60, /*events=*/600, /*seed=*/7);
  std::vector<std::string> first = topic.Interleaved(11);
  auto dead = Make(SyncMode::kStream, CdcConfig());
  ASSERT_NE(dead, nullptr);
  ASSERT_TRUE(dead->Open(Value()).ok());
  Value recorded;
  size_t written = 0;
  for (; written < first.size() / 2; written += 70) {
    auto state = dead->Write(Batch(first, written, 70), kLoadedAt);
    ASSERT_TRUE(state) << state.error().ToString();
    ASSERT_TRUE(dead->OnCursorRecorded(*state).ok());
    recorded = *state;
  }
  // Two more writes whose cursors are never recorded: the run dies.
  ASSERT_TRUE(dead->Write(Batch(first, written, 70), kLoadedAt));
  ASSERT_TRUE(dead->Write(Batch(first, written + 70, 70), kLoadedAt));
  dead.reset();

  // The resumed run reads each partition again from the recorded position, interleaved
  // otherwise, in other cuts.
  size_t from[2] = {0, 0};
  for (size_t i = 0; i < written; ++i) {
    from[first[i].find(R"("partition":1)") != std::string::npos ? 1 : 0]++;
  }
  std::vector<std::string> rest = topic.Interleaved(23, from[0], from[1]);
  auto resumed = Make(SyncMode::kStream, CdcConfig());
  ASSERT_NE(resumed, nullptr);
  ASSERT_TRUE(resumed->Open(recorded).ok());
  for (size_t at = 0; at < rest.size(); at += 45) {
    auto state = resumed->Write(Batch(rest, at, 45), kLoadedAt);
    ASSERT_TRUE(state) << state.error().ToString();
    ASSERT_TRUE(resumed->OnCursorRecorded(*state).ok());
  }
  ASSERT_TRUE(resumed->Finalize().ok());
  ASSERT_TRUE(resumed->OnJobSucceeded().ok());

  EXPECT_EQ(CdcTable(*write_), topic.table);
  EXPECT_FALSE(topic.table.empty());
  EXPECT_GT(write_->cdc_changes(), 600);  // The dead run's last writes were written again.
  // The table was made for CDC: its key and max_staleness; nothing was staged or published.
  std::vector<Value> tables = PostedBodies("/tables");
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].FindPath("tableReference.tableId")->AsString(), "users");
  EXPECT_EQ(tables[0].FindPath("tableConstraints.primaryKey.columns")->ToJson(), R"(["id"])");
  EXPECT_EQ(tables[0].GetString("maxStaleness"), "0-0 0 0:15:0");
  EXPECT_EQ(Statements(), std::vector<std::string>{});
  EXPECT_EQ(Uncommitted(recorded), std::vector<std::string>{});
}

TEST_F(BigqueryStreamingV2FakeTest, MergeRulesAreCheckedWhenTheDestinationIsMade) {
  auto error = [&](SyncMode mode, Value config) {
    config.Set("project_id", "p");
    config.Set("dataset_id", "d");
    DestinationContext context;
    context.sync.sync_mode = mode;
    context.config = std::move(config);
    auto made = BigqueryStreamingV2Destination::Create(context);
    return made ? std::string() : made.error().message();
  };
  EXPECT_EQ(error(SyncMode::kIncremental, CdcConfig()), "");
  EXPECT_NE(error(SyncMode::kFullRefresh, CdcConfig())
                .find("destination.config.write_disposition: merge writes changes into the "
                      "published table"),
            std::string::npos);
  Value raw = CdcConfig();
  raw.Set("unnest", false);
  EXPECT_NE(error(SyncMode::kStream, raw).find("merge needs unnest: true"), std::string::npos);
  Value contract = CdcConfig();
  contract.Set("schema_contract", "evolve");
  EXPECT_NE(error(SyncMode::kStream, contract).find("schema_contract is the bigquery destination"),
            std::string::npos);
  Value sorted = CdcConfig();
  sorted.Set("dedup_sort", Value(Value::Map{{"column", "name"}}));
  EXPECT_NE(error(SyncMode::kStream, sorted).find("_CHANGE_SEQUENCE_NUMBER"), std::string::npos);
  Value key = CdcConfig();
  key.Set("primary_key", Value(Value::List{Value("email")}));
  EXPECT_NE(error(SyncMode::kStream, key).find("'email' is not a column"), std::string::npos);
}

TEST_F(BigqueryStreamingV2FakeTest, LegacyFlavorAppendsEverySyncModeToTheFinalTable) {
  for (SyncMode mode : {SyncMode::kFullRefresh, SyncMode::kIncremental}) {
    SCOPED_TRACE(static_cast<int>(mode));
    auto destination = Make(mode, UnnestConfig(), 0, BigqueryStreamingFlavor::kLegacy);
    ASSERT_NE(destination, nullptr);
    ASSERT_TRUE(destination->Open(Value()).ok());
    auto written = destination->Write(Records(0, 3), kLoadedAt);
    ASSERT_TRUE(written) << written.error().ToString();
    ASSERT_EQ(Uncommitted(*written).size(), 1u);
    std::string stream = Uncommitted(*written)[0];
    EXPECT_TRUE(stream.starts_with("projects/p/datasets/d/tables/events/streams/")) << stream;
    EXPECT_EQ(write_->Rows(stream), Encoded(Records(0, 3)));
    ASSERT_TRUE(destination->OnCursorRecorded(*written).ok());
    ASSERT_TRUE(destination->Finalize().ok());
    ASSERT_TRUE(destination->OnJobSucceeded().ok());
  }
  EXPECT_EQ(Statements(), std::vector<std::string>{});             // Nothing published by SQL.
  EXPECT_EQ(CreatedTables(), std::vector<std::string>{"events"});  // No staging table.
  // Both jobs' rows: a full refresh appends, as the original's does.
  EXPECT_EQ(write_->VisibleRows("projects/p/datasets/d/tables/events").size(), 6u);
}

// ---- the emulator (scripts/test-servers.sh start bigquery) -------------------------------

class BigqueryStreamingV2EmulatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv("BIGQUERY_EMULATOR_HOST") == nullptr ||
        std::getenv("BIGQUERY_STORAGE_EMULATOR_HOST") == nullptr) {
      BIZON_SKIP_OR_FAIL(
          "BIGQUERY_EMULATOR_HOST or BIGQUERY_STORAGE_EMULATOR_HOST is unset "
          "(scripts/test-servers.sh start bigquery)");
    }
    auto rest = BigQueryClient::Make({.project = "test-project"});
    ASSERT_TRUE(rest) << rest.error().ToString();
    rest_ = std::move(*rest);
    static std::atomic<int> counter{0};
    dataset_ = fmt::format("bqv2_{}_{}_{}", getpid(), NowMicros() % 1000000000, ++counter);
  }

  void TearDown() override {
    if (rest_) rest_->DeleteDataset("test-project", dataset_, true, true).IgnoreError();
  }

  std::unique_ptr<BigqueryStreamingV2Destination> Make(
      SyncMode sync_mode, Value config, std::string job_id,
      BigqueryStreamingFlavor flavor = BigqueryStreamingFlavor::kV2) {
    config.Set("project_id", "test-project");
    config.Set("dataset_id", dataset_);
    DestinationContext context;
    context.sync = {.name = "pipe",
                    .job_id = std::move(job_id),
                    .source_name = "src",
                    .stream_name = "items",
                    .sync_mode = sync_mode,
                    .destination_name = "bigquery_streaming_v2"};
    context.config = std::move(config);
    auto made = BigqueryStreamingV2Destination::Create(context, {}, flavor);
    EXPECT_TRUE(made) << made.error().ToString();
    return made ? std::move(*made) : nullptr;
  }

  std::vector<BigQueryRow> Select(const std::string& table, std::string_view columns,
                                  std::string_view order_by) {
    auto result =
        rest_->RunQuery({.job_id = BigQueryClient::RandomJobId("bqv2")},
                        {.query = fmt::format("SELECT {} FROM `test-project.{}.{}` ORDER BY {}",
                                              columns, dataset_, table, order_by)});
    EXPECT_TRUE(result) << result.error().ToString();
    return result ? result->rows : std::vector<BigQueryRow>{};
  }

  std::unique_ptr<BigQueryClient> rest_;
  std::string dataset_;
};

TEST_F(BigqueryStreamingV2EmulatorTest, RawFullRefreshPublishesTheStagingTable) {
  auto destination = Make(SyncMode::kFullRefresh, Value(Value::Map{}), NewUuidHex());
  ASSERT_NE(destination, nullptr);
  Status opened = destination->Open(Value());
  ASSERT_TRUE(opened.ok()) << opened.ToString();
  auto first = destination->Write(Records(0, 3), kLoadedAt);
  ASSERT_TRUE(first) << first.error().ToString();
  ASSERT_TRUE(destination->OnCursorRecorded(*first).ok());
  auto second = destination->Write(Records(3, 2), kLoadedAt);
  ASSERT_TRUE(second) << second.error().ToString();
  ASSERT_TRUE(destination->OnCursorRecorded(*second).ok());
  Status finalized = destination->Finalize();
  ASSERT_TRUE(finalized.ok()) << finalized.ToString();
  ASSERT_TRUE(destination->OnJobSucceeded().ok());
  std::vector<BigQueryRow> rows = Select(
      "_bizon_src_items", "_source_record_id, _source_data, _bizon_loaded_at", "_source_record_id");
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0][0].AsString(), "r0");
  EXPECT_EQ(rows[0][1].AsString(), R"({"id":0,"name":"n0"})");
  EXPECT_EQ(rows[0][2].AsString(), std::to_string(kLoadedAt));
  auto staging = rest_->GetTable(
      {.project = "test-project", .dataset = dataset_, .table = "_bizon_src_items_temp"});
  ASSERT_FALSE(staging);
  EXPECT_EQ(staging.error().code(), StatusCode::kNotFound);
}

TEST_F(BigqueryStreamingV2EmulatorTest, UnnestIncrementalResumesAndAppendsOnce) {
  std::string table = fmt::format("test-project.{}.events", dataset_);
  Value config(Value::Map{{"unnest", true},
                          {"destination_id", table},
                          {"record_schemas", UnnestSchemas(table)},
                          {"time_partitioning", Value()}});
  std::string job = NewUuidHex();
  Value recorded;
  {
    auto dead = Make(SyncMode::kIncremental, config, job);
    ASSERT_NE(dead, nullptr);
    Status opened = dead->Open(Value());
    ASSERT_TRUE(opened.ok()) << opened.ToString();
    auto first = dead->Write(Records(0, 3), kLoadedAt);
    ASSERT_TRUE(first) << first.error().ToString();
    Status committed = dead->OnCursorRecorded(*first);
    ASSERT_TRUE(committed.ok()) << committed.ToString();
    recorded = *first;
    ASSERT_TRUE(dead->Write(Records(3, 2), kLoadedAt));  // Never recorded.
  }
  auto resumed = Make(SyncMode::kIncremental, config, job);
  ASSERT_NE(resumed, nullptr);
  Status opened = resumed->Open(recorded);
  ASSERT_TRUE(opened.ok()) << opened.ToString();
  auto again = resumed->Write(Records(3, 2), kLoadedAt);
  ASSERT_TRUE(again) << again.error().ToString();
  Status committed = resumed->OnCursorRecorded(*again);
  ASSERT_TRUE(committed.ok()) << committed.ToString();
  Status finalized = resumed->Finalize();
  ASSERT_TRUE(finalized.ok()) << finalized.ToString();
  ASSERT_TRUE(resumed->OnJobSucceeded().ok());
  std::vector<BigQueryRow> rows = Select("events", "id, name", "id");
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[4][0].AsString(), "4");
  EXPECT_EQ(rows[4][1].AsString(), "n4");
}

TEST_F(BigqueryStreamingV2EmulatorTest, LegacyFullRefreshAppendsToTheFinalTableAsTheOriginal) {
  // Two full-refresh jobs each append their rows: no staging table, no replace (spec 8.2).
  for (int run = 0; run < 2; ++run) {
    auto destination = Make(SyncMode::kFullRefresh, Value(Value::Map{}), NewUuidHex(),
                            BigqueryStreamingFlavor::kLegacy);
    ASSERT_NE(destination, nullptr);
    Status opened = destination->Open(Value());
    ASSERT_TRUE(opened.ok()) << opened.ToString();
    auto written = destination->Write(Records(run * 3, 3), kLoadedAt);
    ASSERT_TRUE(written) << written.error().ToString();
    ASSERT_TRUE(destination->OnCursorRecorded(*written).ok());
    Status finalized = destination->Finalize();
    ASSERT_TRUE(finalized.ok()) << finalized.ToString();
    ASSERT_TRUE(destination->OnJobSucceeded().ok());
  }
  std::vector<BigQueryRow> rows =
      Select("_bizon_src_items", "_source_record_id, _source_data", "_source_record_id");
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[5][0].AsString(), "r5");
  EXPECT_EQ(rows[5][1].AsString(), R"({"id":5,"name":"n5"})");
  auto staging = rest_->GetTable(
      {.project = "test-project", .dataset = dataset_, .table = "_bizon_src_items_temp"});
  ASSERT_FALSE(staging);
  EXPECT_EQ(staging.error().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace bizon
