// The backend contract, run against every implementation: SQLite and DuckDB (a file in a
// temporary directory), PostgreSQL (a schema of its own on the test server) and BigQuery (a dataset
// of its own on the emulator); the last two are skipped, saying so, when their server is not
// running, and fail instead under CI=true. What only one implementation has stays in its own
// *_backend_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "bizon/backend.h"
#include "bizon/clock.h"
#include "bizon/status.h"
#include "engine/backend/backend_test_support.h"
#include "engine/backend/original_state.h"
#include "testing/test_servers.h"

namespace bizon {
namespace {

using testing_support::BackendHarness;
using testing_support::kKey;
using testing_support::kOtherKey;
using testing_support::ValueOrDie;

struct HarnessKind {
  std::string name;
  std::function<std::unique_ptr<BackendHarness>()> make;
};

void PrintTo(const HarnessKind& kind, std::ostream* out) { *out << kind.name; }

class BackendConformanceTest : public testing::TestWithParam<HarnessKind> {
 protected:
  void SetUp() override {
    harness_ = GetParam().make();
    if (std::string reason = harness_->SkipReason(); !reason.empty()) BIZON_SKIP_OR_FAIL(reason);
  }
  void TearDown() override { harness_.reset(); }

  Backend& backend() { return harness_->backend(); }
  std::string Table(std::string_view name) const { return harness_->Table(name); }
  std::string TimestampText(std::string_view column) const {
    return harness_->TimestampText(column);
  }
  std::optional<std::string> QueryText(const std::string& sql) { return harness_->QueryText(sql); }
  void ExecuteRaw(const std::string& sql) { harness_->ExecuteRaw(sql); }

  StreamJob NewJob(const StreamKey& key = kKey, std::string_view sync_mode = "full_refresh") {
    return ValueOrDie(backend().CreateStreamJob(key, sync_mode, std::nullopt, "1@host"));
  }
  DestinationCursor Cursor(const StreamJob& job, int64_t from, int64_t to, int64_t rows,
                           bool success) {
    return testing_support::MakeCursor(job, "file", from, to, rows, success);
  }

  std::unique_ptr<BackendHarness> harness_;
};

TEST_P(BackendConformanceTest, CreateGetAndUpdateJobStatus) {
  int64_t before = NowMicros();
  StreamJob created =
      ValueOrDie(backend().CreateStreamJob(kKey, "incremental", int64_t{42}, "123@host"));
  EXPECT_EQ(created.id.size(), 32u);
  EXPECT_EQ(created.status, JobStatus::kStarted);
  EXPECT_GE(created.created_at_us, before);

  std::optional<StreamJob> read = ValueOrDie(backend().GetStreamJobById(created.id));
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->key.name, kKey.name);
  EXPECT_EQ(read->key.source_name, kKey.source_name);
  EXPECT_EQ(read->key.stream_name, kKey.stream_name);
  EXPECT_EQ(read->sync_mode, "incremental");
  EXPECT_EQ(read->total_records_to_fetch, 42);
  EXPECT_EQ(read->created_at_us, created.created_at_us);
  EXPECT_EQ(read->updated_at_us, created.created_at_us);
  EXPECT_EQ(read->status, JobStatus::kStarted);
  EXPECT_EQ(read->owner, "123@host");
  EXPECT_FALSE(read->error_message.has_value());
  EXPECT_FALSE(read->incremental_state.has_value());
  EXPECT_EQ(QueryText("SELECT status FROM " + Table("stream_jobs")), "started");

  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_OK(backend().UpdateStreamJobStatus(created.id, JobStatus::kFailed, "source down"));
  read = ValueOrDie(backend().GetStreamJobById(created.id));
  EXPECT_EQ(read->status, JobStatus::kFailed);
  EXPECT_EQ(read->error_message, "source down");
  EXPECT_GT(read->updated_at_us, created.updated_at_us);
  EXPECT_EQ(read->created_at_us, created.created_at_us);

  ASSERT_OK(backend().UpdateStreamJobStatus(created.id, JobStatus::kRunning, std::nullopt));
  read = ValueOrDie(backend().GetStreamJobById(created.id));
  EXPECT_EQ(read->status, JobStatus::kRunning);
  EXPECT_FALSE(read->error_message.has_value());
  EXPECT_EQ(QueryText("SELECT status FROM " + Table("stream_jobs")), "running");
}

TEST_P(BackendConformanceTest, UnknownJobIsNotFound) {
  EXPECT_FALSE(ValueOrDie(backend().GetStreamJobById("missing")).has_value());
  Status status = backend().UpdateStreamJobStatus("missing", JobStatus::kRunning, std::nullopt);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.failure_class(), FailureClass::kBackend);
  EXPECT_EQ(backend().SetIncrementalState("missing", "{}").code(), StatusCode::kNotFound);
  EXPECT_EQ(backend().SetJobOwner("missing", "1@host").code(), StatusCode::kNotFound);
}

TEST_P(BackendConformanceTest, RunningJobLookupPicksTheNewest) {
  EXPECT_FALSE(ValueOrDie(backend().GetRunningStreamJob(kKey)).has_value());
  StreamJob older = NewJob();
  StreamJob newer = NewJob();
  StreamJob not_running = NewJob();
  // Mark the newer one first, so neither insertion nor update order explains the answer.
  ASSERT_OK(backend().UpdateStreamJobStatus(newer.id, JobStatus::kRunning, std::nullopt));
  ASSERT_OK(backend().UpdateStreamJobStatus(older.id, JobStatus::kRunning, std::nullopt));
  std::optional<StreamJob> running = ValueOrDie(backend().GetRunningStreamJob(kKey));
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->id, newer.id);
  EXPECT_EQ(running->status, JobStatus::kRunning);

  ASSERT_OK(backend().UpdateStreamJobStatus(newer.id, JobStatus::kCancelled, std::nullopt));
  running = ValueOrDie(backend().GetRunningStreamJob(kKey));
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->id, older.id);
}

TEST_P(BackendConformanceTest, StartedJobLookupFindsTheNewestNotYetRunning) {
  EXPECT_FALSE(ValueOrDie(backend().GetStartedStreamJob(kKey)).has_value());
  StreamJob older = NewJob();
  StreamJob newer = NewJob();
  StreamJob running = NewJob();
  ASSERT_OK(backend().UpdateStreamJobStatus(running.id, JobStatus::kRunning, std::nullopt));
  std::optional<StreamJob> started = ValueOrDie(backend().GetStartedStreamJob(kKey));
  ASSERT_TRUE(started.has_value());
  EXPECT_EQ(started->id, newer.id);
  EXPECT_EQ(started->status, JobStatus::kStarted);
  EXPECT_FALSE(ValueOrDie(backend().GetStartedStreamJob(kOtherKey)).has_value());

  ASSERT_OK(backend().UpdateStreamJobStatus(newer.id, JobStatus::kCancelled, std::nullopt));
  started = ValueOrDie(backend().GetStartedStreamJob(kKey));
  ASSERT_TRUE(started.has_value());
  EXPECT_EQ(started->id, older.id);
}

TEST_P(BackendConformanceTest, RunningJobTieOnCreatedAtGoesToTheLaterInsert) {
  StreamJob first = NewJob();
  StreamJob second = NewJob();
  ExecuteRaw("UPDATE " + Table("stream_jobs") +
             " SET created_at = '2026-01-01 00:00:00.000000',"
             " status = 'running'");
  EXPECT_EQ(ValueOrDie(backend().GetRunningStreamJob(kKey))->id, second.id);
}

TEST_P(BackendConformanceTest, LastSuccessfulJobIsTheNewestByCreatedAt) {
  EXPECT_FALSE(ValueOrDie(backend().GetLastSuccessfulStreamJob(kKey)).has_value());
  StreamJob older = NewJob();
  StreamJob newer = NewJob();
  StreamJob failed = NewJob();
  // The older job succeeds last: created_at, not updated_at, decides.
  ASSERT_OK(backend().UpdateStreamJobStatus(newer.id, JobStatus::kSucceeded, std::nullopt));
  ASSERT_OK(backend().UpdateStreamJobStatus(older.id, JobStatus::kSucceeded, std::nullopt));
  ASSERT_OK(backend().UpdateStreamJobStatus(failed.id, JobStatus::kFailed, "boom"));
  std::optional<StreamJob> last = ValueOrDie(backend().GetLastSuccessfulStreamJob(kKey));
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->id, newer.id);
  EXPECT_EQ(last->created_at_us, newer.created_at_us);
}

TEST_P(BackendConformanceTest, IncrementalStateAndOwnerRoundTrip) {
  StreamJob job = NewJob(kKey, "incremental");
  constexpr std::string_view kState = R"({"updated_since": "2026-01-01T00:00:00Z", "n": 3})";
  ASSERT_OK(backend().SetIncrementalState(job.id, kState));
  ASSERT_OK(backend().SetJobOwner(job.id, "999@other"));
  std::optional<StreamJob> read = ValueOrDie(backend().GetStreamJobById(job.id));
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->incremental_state, kState);
  EXPECT_EQ(read->owner, "999@other");
}

TEST_P(BackendConformanceTest, SourceCursorIsInserted) {
  StreamJob job = NewJob();
  SourceCursorRow cursor{job.id, kKey, 3, 120, R"({"cursor": 4})"};
  ASSERT_OK(backend().CreateSourceCursor(cursor));
  EXPECT_EQ(QueryText("SELECT COUNT(*) FROM " + Table("source_cursors")), "1");
  EXPECT_EQ(QueryText("SELECT job_id || '|' || name || '|' || source_name || '|' || stream_name"
                      " || '|' || iteration || '|' || rows_fetched || '|' || next_pagination"
                      " || '|' || status FROM " +
                      Table("source_cursors")),
            job.id + "|pipeline|dummy|creatures|3|120|{\"cursor\": 4}|pulling");

  SourceCursorRow orphan{"no-such-job", kKey, 0, 0, "{}"};
  Status status = backend().CreateSourceCursor(orphan);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.failure_class(), FailureClass::kBackend);
}

TEST_P(BackendConformanceTest, LastDestinationCursorHasTheHighestSuccessfulIteration) {
  StreamJob job = NewJob();
  EXPECT_FALSE(ValueOrDie(backend().GetLastDestinationCursor(job.id)).has_value());
  ASSERT_OK(backend().CreateDestinationCursor(Cursor(job, 0, 1, 10, true)));
  ASSERT_OK(backend().CreateDestinationCursor(Cursor(job, 4, 5, 0, false)));
  ASSERT_OK(backend().CreateDestinationCursor(Cursor(job, 2, 3, 20, true)));
  ASSERT_OK(backend().CreateDestinationCursor(Cursor(job, 6, 7, 0, false)));
  std::optional<DestinationCursor> last = ValueOrDie(backend().GetLastDestinationCursor(job.id));
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->to_source_iteration, 3);
  EXPECT_EQ(last->from_source_iteration, 2);
  EXPECT_EQ(last->rows_written, 20);
  EXPECT_TRUE(last->success);
  EXPECT_EQ(last->pagination, R"({"cursor": 4})");
  EXPECT_EQ(last->job_id, job.id);
  EXPECT_EQ(last->key.stream_name, kKey.stream_name);
  EXPECT_EQ(last->destination_name, "file");
  EXPECT_EQ(last->id.size(), 32u);
  EXPECT_GT(last->created_at_us, 0);

  StreamJob other_job = NewJob();
  EXPECT_FALSE(ValueOrDie(backend().GetLastDestinationCursor(other_job.id)).has_value());
}

TEST_P(BackendConformanceTest, EmptyPaginationIsStoredAsNullAndReadsBackAsNullopt) {
  for (std::optional<std::string> pagination :
       {std::optional<std::string>(), std::optional<std::string>(""),
        std::optional<std::string>("{}"), std::optional<std::string>(" { } "),
        std::optional<std::string>("null")}) {
    StreamJob job = NewJob();
    DestinationCursor cursor = Cursor(job, 0, 0, 5, true);
    cursor.pagination = pagination;
    ASSERT_OK(backend().CreateDestinationCursor(cursor));
    std::optional<DestinationCursor> last = ValueOrDie(backend().GetLastDestinationCursor(job.id));
    ASSERT_TRUE(last.has_value());
    EXPECT_FALSE(last->pagination.has_value()) << pagination.value_or("nullopt");
    EXPECT_EQ(QueryText("SELECT COUNT(*) FROM " + Table("destination_cursors") +
                        " WHERE job_id = '" + job.id + "' AND pagination IS NULL"),
              "1");
  }
}

// The original's stream runner stores no pagination (its sources keep their own position) and
// knows no source_exhausted column: such a cursor continues the stream with the empty pagination.
// Anywhere else, and on our own cursors, a NULL pagination still means "the source is exhausted".
// The original's cursors read back with kOriginalCursorState, since they record no state.
TEST_P(BackendConformanceTest, OriginalStreamCursorWithoutPaginationContinuesTheStream) {
  auto insert_original_cursor = [&](const StreamJob& job) {
    ExecuteRaw("INSERT INTO " + Table("destination_cursors") +
               " (id, job_id, name, source_name, stream_name, destination_name,"
               " from_source_iteration, to_source_iteration, rows_written, success, attempt,"
               " created_at, updated_at) VALUES ('" +
               NewUuidHex() + "', '" + job.id + "', '" + job.key.name + "', '" +
               job.key.source_name + "', '" + job.key.stream_name +
               "', 'file', 3, 3, 2, true, 0, '2026-01-02 03:04:05.000006', NULL)");
  };
  StreamJob stream = NewJob(kKey, "stream");
  insert_original_cursor(stream);
  std::optional<DestinationCursor> last = ValueOrDie(backend().GetLastDestinationCursor(stream.id));
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->to_source_iteration, 3);
  EXPECT_EQ(last->pagination, "{}");
  EXPECT_EQ(last->destination_state, kOriginalCursorState);  // It records none.

  StreamJob incremental = NewJob(kOtherKey, "incremental");
  insert_original_cursor(incremental);
  last = ValueOrDie(backend().GetLastDestinationCursor(incremental.id));
  ASSERT_TRUE(last.has_value());
  EXPECT_FALSE(last->pagination.has_value());
  EXPECT_EQ(last->destination_state, kOriginalCursorState);

  DestinationCursor ours = Cursor(stream, 4, 4, 1, true);
  ours.pagination = std::nullopt;
  ASSERT_OK(backend().CreateDestinationCursor(ours));
  last = ValueOrDie(backend().GetLastDestinationCursor(stream.id));
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->to_source_iteration, 4);
  EXPECT_FALSE(last->pagination.has_value());
  EXPECT_FALSE(last->destination_state.has_value());

  // The original numbers a stream run's iterations from 0 again: its newer cursor is the last.
  insert_original_cursor(stream);
  last = ValueOrDie(backend().GetLastDestinationCursor(stream.id));
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->to_source_iteration, 3);
  EXPECT_EQ(last->pagination, "{}");
}

TEST_P(BackendConformanceTest, DestinationStateAndCallerChosenFieldsRoundTrip) {
  StreamJob job = NewJob();
  DestinationCursor cursor = Cursor(job, 0, 2, 30, true);
  cursor.id = "cursor-one";
  cursor.destination_state = R"({"file_length": 4096})";
  cursor.created_at_us = ValueOrDie(ParseTimestamp("2026-03-04 05:06:07.000008"));
  ASSERT_OK(backend().CreateDestinationCursor(cursor));
  std::optional<DestinationCursor> last = ValueOrDie(backend().GetLastDestinationCursor(job.id));
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->id, "cursor-one");
  EXPECT_EQ(last->destination_state, R"({"file_length": 4096})");
  EXPECT_EQ(last->created_at_us, cursor.created_at_us);
  EXPECT_EQ(
      QueryText("SELECT " + TimestampText("created_at") + " FROM " + Table("destination_cursors")),
      "2026-03-04 05:06:07.000008");

  StreamJob stateless_job = NewJob();
  ASSERT_OK(backend().CreateDestinationCursor(Cursor(stateless_job, 0, 0, 1, true)));
  EXPECT_FALSE(ValueOrDie(backend().GetLastDestinationCursor(stateless_job.id))
                   ->destination_state.has_value());
}

TEST_P(BackendConformanceTest, WrittenRowCountSumsSuccessfulCursorsOnly) {
  StreamJob job = NewJob();
  EXPECT_EQ(ValueOrDie(backend().GetWrittenRowCount(job.id)), 0);
  ASSERT_OK(backend().CreateDestinationCursor(Cursor(job, 0, 1, 10, true)));
  ASSERT_OK(backend().CreateDestinationCursor(Cursor(job, 2, 3, 7, false)));
  ASSERT_OK(backend().CreateDestinationCursor(Cursor(job, 2, 3, 25, true)));
  StreamJob other_job = NewJob();
  ASSERT_OK(backend().CreateDestinationCursor(Cursor(other_job, 0, 0, 100, true)));
  EXPECT_EQ(ValueOrDie(backend().GetWrittenRowCount(job.id)), 35);
}

TEST_P(BackendConformanceTest, PendingResetIsTheNewestRequest) {
  EXPECT_FALSE(ValueOrDie(backend().GetPendingStreamReset(kKey)).has_value());
  StreamReset older = ValueOrDie(backend().CreateStreamReset(kKey));
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  StreamReset newer = ValueOrDie(backend().CreateStreamReset(kKey));
  EXPECT_GT(newer.requested_at_us, older.requested_at_us);
  std::optional<StreamReset> pending = ValueOrDie(backend().GetPendingStreamReset(kKey));
  ASSERT_TRUE(pending.has_value());
  EXPECT_EQ(pending->id, newer.id);
  EXPECT_EQ(pending->requested_at_us, newer.requested_at_us);
  EXPECT_FALSE(pending->consumed_at_us.has_value());
  EXPECT_FALSE(pending->consumed_by_job_id.has_value());

  // Once the newest is consumed, the older request is the pending one.
  StreamJob job = NewJob();
  ASSERT_OK(backend().ConsumeStreamReset(newer.id, job.id));
  EXPECT_EQ(ValueOrDie(backend().GetPendingStreamReset(kKey))->id, older.id);
}

TEST_P(BackendConformanceTest, ConsumedResetIsFoundByJobId) {
  StreamReset reset = ValueOrDie(backend().CreateStreamReset(kKey));
  StreamJob job = NewJob();
  EXPECT_FALSE(ValueOrDie(backend().GetStreamResetByJobId(job.id)).has_value());
  ASSERT_OK(backend().ConsumeStreamReset(reset.id, job.id));
  EXPECT_FALSE(ValueOrDie(backend().GetPendingStreamReset(kKey)).has_value());
  std::optional<StreamReset> consumed = ValueOrDie(backend().GetStreamResetByJobId(job.id));
  ASSERT_TRUE(consumed.has_value());
  EXPECT_EQ(consumed->id, reset.id);
  EXPECT_EQ(consumed->consumed_by_job_id, job.id);
  ASSERT_TRUE(consumed->consumed_at_us.has_value());
  EXPECT_GE(*consumed->consumed_at_us, reset.requested_at_us);
  EXPECT_EQ(consumed->requested_at_us, reset.requested_at_us);

  // A retry by the same job succeeds; another job lost the race; an unknown id is not found.
  ASSERT_OK(backend().ConsumeStreamReset(reset.id, job.id));
  StreamJob other_job = NewJob();
  EXPECT_EQ(backend().ConsumeStreamReset(reset.id, other_job.id).code(), StatusCode::kAborted);
  EXPECT_EQ(backend().ConsumeStreamReset("missing", job.id).code(), StatusCode::kNotFound);
}

TEST_P(BackendConformanceTest, CancelRetiresPendingResetsAndLeavesConsumedOnes) {
  StreamReset consumed = ValueOrDie(backend().CreateStreamReset(kKey));
  StreamJob job = NewJob();
  ASSERT_OK(backend().ConsumeStreamReset(consumed.id, job.id));
  std::optional<StreamReset> before = ValueOrDie(backend().GetStreamResetByJobId(job.id));
  ValueOrDie(backend().CreateStreamReset(kKey));
  StreamReset pending = ValueOrDie(backend().CreateStreamReset(kKey));

  EXPECT_EQ(ValueOrDie(backend().CancelPendingStreamResets(kKey)), 2);
  EXPECT_FALSE(ValueOrDie(backend().GetPendingStreamReset(kKey)).has_value());
  EXPECT_EQ(ValueOrDie(backend().CancelPendingStreamResets(kKey)), 0);

  std::optional<StreamReset> after = ValueOrDie(backend().GetStreamResetByJobId(job.id));
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->consumed_at_us, before->consumed_at_us);
  EXPECT_EQ(after->consumed_by_job_id, job.id);
  // Cancelled means consumed_at set and no job.
  EXPECT_EQ(QueryText("SELECT COUNT(*) FROM " + Table("stream_resets") +
                      " WHERE consumed_at IS NOT NULL"
                      " AND consumed_by_job_id IS NULL"),
            "2");
  EXPECT_EQ(backend().ConsumeStreamReset(pending.id, job.id).code(), StatusCode::kAborted);
}

TEST_P(BackendConformanceTest, KeysIsolateStreams) {
  StreamReset reset = ValueOrDie(backend().CreateStreamReset(kKey));
  EXPECT_FALSE(ValueOrDie(backend().GetPendingStreamReset(kOtherKey)).has_value());
  EXPECT_EQ(ValueOrDie(backend().CancelPendingStreamResets(kOtherKey)), 0);
  EXPECT_EQ(ValueOrDie(backend().GetPendingStreamReset(kKey))->id, reset.id);
  EXPECT_FALSE(
      ValueOrDie(backend().GetPendingStreamReset({"other", "dummy", "creatures"})).has_value());
  EXPECT_FALSE(
      ValueOrDie(backend().GetPendingStreamReset({"pipeline", "other", "creatures"})).has_value());

  StreamJob job = NewJob(kKey);
  ASSERT_OK(backend().UpdateStreamJobStatus(job.id, JobStatus::kRunning, std::nullopt));
  EXPECT_FALSE(ValueOrDie(backend().GetRunningStreamJob(kOtherKey)).has_value());
  ASSERT_OK(backend().UpdateStreamJobStatus(job.id, JobStatus::kSucceeded, std::nullopt));
  EXPECT_FALSE(ValueOrDie(backend().GetLastSuccessfulStreamJob(kOtherKey)).has_value());
  EXPECT_TRUE(ValueOrDie(backend().GetLastSuccessfulStreamJob(kKey)).has_value());
}

TEST_P(BackendConformanceTest, PartitionClaimsFenceThePreviousOwnersWrites) {
  if (!backend().HasPartitionLedger()) {
    // One member per pipeline: a claim is refused, never half taken.
    auto refused = backend().ClaimPartitions(kKey, "a", {"t/0"});
    ASSERT_FALSE(refused.has_value());
    EXPECT_EQ(refused.error().code(), StatusCode::kUnimplemented);
    return;
  }
  std::vector<PartitionClaim> first =
      ValueOrDie(backend().ClaimPartitions(kKey, "a", {"t/0", "t/1"}));
  ASSERT_EQ(first.size(), 2u);
  for (const PartitionClaim& claim : first) {
    EXPECT_EQ(claim.epoch, 1);
    EXPECT_EQ(claim.position, std::nullopt);
    EXPECT_EQ(claim.previous_owner, "");
  }
  StreamJob job = NewJob(kKey, "stream");
  ASSERT_OK(backend().CreateDestinationCursorAndAdvance(Cursor(job, 0, 0, 10, true), kKey, "a",
                                                        {{"t/0", 10, 1}, {"t/1", 4, 1}}));

  // b takes t/0: it resumes where a's last recorded write left it, and a can no longer record.
  std::vector<PartitionClaim> taken = ValueOrDie(backend().ClaimPartitions(kKey, "b", {"t/0"}));
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].position, 10);
  EXPECT_EQ(taken[0].epoch, 2);
  EXPECT_EQ(taken[0].previous_owner, "a");
  Status fenced = backend().CreateDestinationCursorAndAdvance(Cursor(job, 1, 1, 5, true), kKey, "a",
                                                              {{"t/1", 6, 1}, {"t/0", 15, 1}});
  EXPECT_EQ(fenced.code(), StatusCode::kAborted) << fenced.ToString();
  EXPECT_NE(fenced.message().find("t/0"), std::string::npos) << fenced.message();
  // All or nothing: neither the cursor nor a's still-held t/1 moved.
  EXPECT_EQ(ValueOrDie(backend().GetLastDestinationCursor(job.id))->to_source_iteration, 0);
  EXPECT_EQ(ValueOrDie(backend().ClaimPartitions(kKey, "a", {"t/1"}))[0].position, 4);

  ASSERT_OK(backend().CreateDestinationCursorAndAdvance(Cursor(job, 2, 2, 5, true), kKey, "b",
                                                        {{"t/0", 15, 2}}));
  EXPECT_EQ(ValueOrDie(backend().GetLastDestinationCursor(job.id))->to_source_iteration, 2);
  std::vector<PartitionClaim> back = ValueOrDie(backend().ClaimPartitions(kKey, "a", {"t/0"}));
  EXPECT_EQ(back[0].position, 15);
  EXPECT_EQ(back[0].epoch, 3);
  EXPECT_EQ(back[0].previous_owner, "b");

  // Another pipeline stream's ledger is its own.
  std::vector<PartitionClaim> other =
      ValueOrDie(backend().ClaimPartitions(kOtherKey, "c", {"t/0"}));
  EXPECT_EQ(other[0].position, std::nullopt);
  EXPECT_EQ(other[0].epoch, 1);
}

// Every backend this build has.
std::vector<HarnessKind> BuiltHarnesses() {
  std::vector<HarnessKind> kinds = {
      {"Sqlite", [] { return std::make_unique<testing_support::SqliteHarness>(); }}};
#if BIZON_WITH_POSTGRES
  kinds.push_back(
      {"Postgres", [] { return std::make_unique<testing_support::PostgresHarness>(); }});
#endif
#if BIZON_WITH_BIGQUERY
  kinds.push_back(
      {"BigQuery", [] { return std::make_unique<testing_support::BigQueryHarness>(); }});
#endif
#if BIZON_WITH_DUCKDB
  kinds.push_back({"Duckdb", [] { return std::make_unique<testing_support::DuckdbHarness>(); }});
#endif
  return kinds;
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendConformanceTest, testing::ValuesIn(BuiltHarnesses()),
                         [](const testing::TestParamInfo<HarnessKind>& kind) {
                           return kind.param.name;
                         });

}  // namespace
}  // namespace bizon
