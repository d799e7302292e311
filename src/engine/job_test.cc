// InitJob's recovery matrix against a SQLite backend in a temporary directory: which job a run
// gets (new, resumed, replaced), where it starts, its incremental window and its reset.
#include "engine/job.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "engine/backend/backend_test_support.h"
#include "engine/backend/original_state.h"
#include "testing/in_memory_connectors.h"

namespace bizon {
namespace {

using testing_support::InMemorySource;
using testing_support::kKey;
using testing_support::MakeCursor;
using testing_support::MakeRecords;
using testing_support::SqliteHarness;
using testing_support::ValueOrDie;

// An owner on another host: this host cannot tell whether it lives, so it counts as gone.
constexpr std::string_view kGoneOwner = "4242@a-host-that-is-not-this-one";

class InitJobTest : public testing::Test {
 protected:
  InitJobTest() : source_({MakeRecords(10), MakeRecords(10), MakeRecords(10)}) {
    settings_.key = kKey;
    settings_.destination_name = "memory";
    settings_.source_config = Value::EmptyMap();
    settings_.source_config.Set("cursor_field", Value("updated_at"));
  }

  Backend& backend() { return harness_.backend(); }

  StreamJob Running(SyncMode mode, std::string_view owner = kGoneOwner) {
    StreamJob job = ValueOrDie(backend().CreateStreamJob(kKey, ToString(mode), 30, owner));
    EXPECT_TRUE(backend().UpdateStreamJobStatus(job.id, JobStatus::kRunning, std::nullopt).ok());
    return job;
  }

  void Cursor(const StreamJob& job, int64_t from, int64_t to, int64_t rows,
              std::optional<std::string> pagination, std::optional<std::string> state) {
    DestinationCursor cursor = MakeCursor(job, "memory", from, to, rows, true);
    cursor.pagination = std::move(pagination);
    cursor.destination_state = std::move(state);
    ASSERT_TRUE(backend().CreateDestinationCursor(cursor).ok());
  }

  JobStatus StatusOf(const std::string& job_id) {
    return ValueOrDie(backend().GetStreamJobById(job_id))->status;
  }

  JobPlan Init(SyncMode mode, bool holds_run_lock = true, bool resume_full_refresh = false) {
    settings_.sync_mode = mode;
    return ValueOrDie(InitJob(backend(), settings_, source_, holds_run_lock, resume_full_refresh));
  }

  SqliteHarness harness_;
  PipelineSettings settings_;
  InMemorySource source_;
};

TEST_F(InitJobTest, WithoutARunningJobANewOneStartsAtTheBeginning) {
  JobPlan plan = Init(SyncMode::kFullRefresh);
  EXPECT_FALSE(plan.resumed);
  EXPECT_FALSE(plan.is_reset);
  EXPECT_EQ(plan.start_iteration, 0);
  EXPECT_EQ(plan.start_pagination.ToJson(), "{}");
  EXPECT_FALSE(plan.source_exhausted);
  EXPECT_TRUE(plan.destination_state.is_null());
  EXPECT_EQ(plan.rows_already_written, 0);
  EXPECT_EQ(plan.job.total_records_to_fetch, 30);
  auto stored = ValueOrDie(backend().GetStreamJobById(plan.job.id));
  EXPECT_EQ(stored->status, JobStatus::kRunning);
  EXPECT_EQ(stored->owner, CurrentOwner());
  EXPECT_EQ(stored->sync_mode, "full_refresh");
}

TEST_F(InitJobTest, AStreamJobDoesNotAskTheSourceForATotal) {
  JobPlan plan = Init(SyncMode::kStream);
  EXPECT_FALSE(plan.job.total_records_to_fetch.has_value());
}

TEST_F(InitJobTest, AnInterruptedIncrementalJobResumesAfterItsLastCursor) {
  StreamJob old = Running(SyncMode::kIncremental);
  Cursor(old, 0, 1, 20, R"({"page":2})", R"({"rows":20})");
  Cursor(old, 2, 2, 5, R"({"page":3})", R"({"rows":25})");
  JobPlan plan = Init(SyncMode::kIncremental);
  EXPECT_TRUE(plan.resumed);
  EXPECT_EQ(plan.job.id, old.id);
  EXPECT_EQ(plan.start_iteration, 3);
  EXPECT_EQ(plan.start_pagination.ToJson(), R"({"page":3})");
  EXPECT_EQ(plan.destination_state.ToJson(), R"({"rows":25})");
  EXPECT_EQ(plan.rows_already_written, 25);
  EXPECT_FALSE(plan.source_exhausted);
  EXPECT_EQ(ValueOrDie(backend().GetStreamJobById(old.id))->owner, CurrentOwner());
}

// A run killed between creating its job (`started`) and marking it running: the next run takes
// that job over instead of leaving it `started` for ever beside a new one.
TEST_F(InitJobTest, AJobLeftStartedByAKilledRunIsResumedNotLeftBehind) {
  StreamJob left = ValueOrDie(backend().CreateStreamJob(kKey, "incremental", 30, kGoneOwner));
  JobPlan plan = Init(SyncMode::kIncremental);
  EXPECT_TRUE(plan.resumed);
  EXPECT_EQ(plan.job.id, left.id);
  EXPECT_EQ(plan.start_iteration, 0);
  EXPECT_EQ(plan.rows_already_written, 0);
  EXPECT_EQ(StatusOf(left.id), JobStatus::kRunning);
  EXPECT_FALSE(ValueOrDie(backend().GetStartedStreamJob(kKey)).has_value());
}

TEST_F(InitJobTest, AResumedJobWithoutCursorsStartsAtTheBeginning) {
  StreamJob old = Running(SyncMode::kStream);
  JobPlan plan = Init(SyncMode::kStream);
  EXPECT_TRUE(plan.resumed);
  EXPECT_EQ(plan.job.id, old.id);
  EXPECT_EQ(plan.start_iteration, 0);
  EXPECT_EQ(plan.rows_already_written, 0);
}

TEST_F(InitJobTest, AResumedJobWhoseLastCursorEndedTheSourceOnlyPublishes) {
  StreamJob old = Running(SyncMode::kIncremental);
  Cursor(old, 0, 2, 30, std::nullopt, R"({"rows":30})");
  JobPlan plan = Init(SyncMode::kIncremental);
  EXPECT_TRUE(plan.resumed);
  EXPECT_TRUE(plan.source_exhausted);
  EXPECT_EQ(plan.start_iteration, 3);
  EXPECT_EQ(plan.rows_already_written, 30);
}

TEST_F(InitJobTest, ACorruptStoredPaginationIsADataLossOfTheBackend) {
  StreamJob old = Running(SyncMode::kIncremental);
  Cursor(old, 0, 0, 10, "{not json", R"({"rows":10})");
  settings_.sync_mode = SyncMode::kIncremental;
  auto plan = InitJob(backend(), settings_, source_, true);
  ASSERT_FALSE(plan.has_value());
  EXPECT_EQ(plan.error().code(), StatusCode::kDataLoss);
  EXPECT_EQ(plan.error().failure_class(), FailureClass::kBackend);
  EXPECT_NE(plan.error().message().find(old.id), std::string::npos);
}

TEST_F(InitJobTest, AnInterruptedFullRefreshIsCancelledAndStartedOver) {
  StreamJob old = Running(SyncMode::kFullRefresh);
  Cursor(old, 0, 0, 10, R"({"page":1})", R"({"rows":10})");
  JobPlan plan = Init(SyncMode::kFullRefresh);
  EXPECT_FALSE(plan.resumed);
  EXPECT_NE(plan.job.id, old.id);
  EXPECT_EQ(plan.start_iteration, 0);
  EXPECT_EQ(StatusOf(old.id), JobStatus::kCancelled);
  EXPECT_EQ(StatusOf(plan.job.id), JobStatus::kRunning);
}

TEST_F(InitJobTest, AFullRefreshWhoseQueueStillHoldsItsIterationsResumes) {
  StreamJob old = Running(SyncMode::kFullRefresh);
  Cursor(old, 0, 0, 10, R"({"page":1})", R"({"rows":10})");
  JobPlan plan = Init(SyncMode::kFullRefresh, true, /*resume_full_refresh=*/true);
  EXPECT_TRUE(plan.resumed);
  EXPECT_EQ(plan.job.id, old.id);
  EXPECT_EQ(plan.start_iteration, 1);
}

TEST_F(InitJobTest, ForceIgnoreCheckpointReplacesARunningJob) {
  StreamJob old = Running(SyncMode::kIncremental);
  Cursor(old, 0, 0, 10, R"({"page":1})", R"({"rows":10})");
  settings_.force_ignore_checkpoint = true;
  JobPlan plan = Init(SyncMode::kIncremental);
  EXPECT_FALSE(plan.resumed);
  EXPECT_NE(plan.job.id, old.id);
  EXPECT_EQ(plan.start_iteration, 0);
  EXPECT_EQ(StatusOf(old.id), JobStatus::kCancelled);
}

TEST_F(InitJobTest, AJobLastWrittenByTheOriginalBizonIsReplaced) {
  StreamJob old = Running(SyncMode::kIncremental);
  Cursor(old, 0, 0, 10, R"({"page":1})", std::string(kOriginalCursorState));
  JobPlan plan = Init(SyncMode::kIncremental);
  EXPECT_FALSE(plan.resumed);
  EXPECT_NE(plan.job.id, old.id);
  EXPECT_EQ(StatusOf(old.id), JobStatus::kCancelled);
  EXPECT_TRUE(plan.destination_state.is_null());
}

TEST_F(InitJobTest, ALiveOwnerOnThisHostRefusesASecondRunWithoutTheLock) {
  // The parent process (the test runner's shell or ctest) is alive and is not this process.
  std::string owner = CurrentOwner();
  owner = std::to_string(getppid()) + owner.substr(owner.find('@'));
  StreamJob old = Running(SyncMode::kIncremental, owner);
  settings_.sync_mode = SyncMode::kIncremental;
  auto refused = InitJob(backend(), settings_, source_, /*holds_run_lock=*/false);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.error().failure_class(), FailureClass::kBackend);
  EXPECT_NE(refused.error().message().find(owner), std::string::npos);
  auto untouched = ValueOrDie(backend().GetStreamJobById(old.id));
  EXPECT_EQ(untouched->status, JobStatus::kRunning);
  EXPECT_EQ(untouched->owner, owner);

  // Holding the run lock proves that owner is not a run of this pipeline (a recycled pid).
  JobPlan plan = Init(SyncMode::kIncremental, /*holds_run_lock=*/true);
  EXPECT_TRUE(plan.resumed);
  EXPECT_EQ(plan.job.id, old.id);
}

TEST_F(InitJobTest, OwnJobsAndOwnersOnOtherHostsDoNotBlock) {
  StreamJob mine = Running(SyncMode::kIncremental, CurrentOwner());
  JobPlan plan = Init(SyncMode::kIncremental, /*holds_run_lock=*/false);
  EXPECT_EQ(plan.job.id, mine.id);
  EXPECT_TRUE(plan.resumed);
}

TEST_F(InitJobTest, TheFirstIncrementalRunHasNoWindow) {
  JobPlan plan = Init(SyncMode::kIncremental);
  EXPECT_FALSE(plan.window.has_value());
  EXPECT_FALSE(plan.previous_state.has_value());
}

TEST_F(InitJobTest, AnIncrementalRunReadsTheWindowSinceTheLastSuccess) {
  StreamJob last = ValueOrDie(backend().CreateStreamJob(kKey, "incremental", 30, kGoneOwner));
  ASSERT_TRUE(backend().SetIncrementalState(last.id, R"({"after":"x"})").ok());
  ASSERT_TRUE(backend().UpdateStreamJobStatus(last.id, JobStatus::kSucceeded, std::nullopt).ok());
  JobPlan plan = Init(SyncMode::kIncremental);
  ASSERT_TRUE(plan.window.has_value());
  EXPECT_EQ(plan.window->last_run_us, last.created_at_us);
  EXPECT_EQ(plan.window->run_started_at_us, plan.job.created_at_us);
  EXPECT_EQ(plan.window->cursor_field, "updated_at");
  EXPECT_EQ(plan.window->state.ToJson(), R"({"after":"x"})");
  EXPECT_EQ(plan.previous_state, R"({"after":"x"})");
  EXPECT_FALSE(plan.is_reset);
}

TEST_F(InitJobTest, APendingResetIsConsumedByANewJobThatReadsEverything) {
  StreamJob last = ValueOrDie(backend().CreateStreamJob(kKey, "incremental", 30, kGoneOwner));
  ASSERT_TRUE(backend().UpdateStreamJobStatus(last.id, JobStatus::kSucceeded, std::nullopt).ok());
  StreamReset reset = ValueOrDie(backend().CreateStreamReset(kKey));
  JobPlan plan = Init(SyncMode::kIncremental);
  EXPECT_TRUE(plan.is_reset);
  EXPECT_FALSE(plan.window.has_value());
  EXPECT_EQ(plan.previous_state, "{}");
  EXPECT_EQ(plan.MaterializationMode(SyncMode::kIncremental), SyncMode::kFullRefresh);
  auto bound = ValueOrDie(backend().GetStreamResetByJobId(plan.job.id));
  ASSERT_TRUE(bound.has_value());
  EXPECT_EQ(bound->id, reset.id);
  EXPECT_FALSE(ValueOrDie(backend().GetPendingStreamReset(kKey)).has_value());
}

TEST_F(InitJobTest, APendingResetReplacesARunningIncrementalJob) {
  StreamJob old = Running(SyncMode::kIncremental);
  Cursor(old, 0, 0, 10, R"({"page":1})", R"({"rows":10})");
  ASSERT_TRUE(backend().CreateStreamReset(kKey).has_value());
  JobPlan plan = Init(SyncMode::kIncremental);
  EXPECT_TRUE(plan.is_reset);
  EXPECT_FALSE(plan.resumed);
  EXPECT_NE(plan.job.id, old.id);
  EXPECT_EQ(StatusOf(old.id), JobStatus::kCancelled);
}

TEST_F(InitJobTest, AnInterruptedResetResumesAsAReset) {
  StreamJob old = Running(SyncMode::kIncremental);
  StreamReset reset = ValueOrDie(backend().CreateStreamReset(kKey));
  ASSERT_TRUE(backend().ConsumeStreamReset(reset.id, old.id).ok());
  Cursor(old, 0, 0, 10, R"({"page":1})", R"({"rows":10})");
  JobPlan plan = Init(SyncMode::kIncremental);
  EXPECT_TRUE(plan.is_reset);
  EXPECT_TRUE(plan.resumed);
  EXPECT_EQ(plan.job.id, old.id);
  EXPECT_EQ(plan.start_iteration, 1);
  EXPECT_EQ(ValueOrDie(backend().GetStreamResetByJobId(old.id))->id, reset.id);
}

TEST_F(InitJobTest, ARequestedResetWithoutAPendingOneCreatesAndBindsOne) {
  settings_.reset_requested = true;
  JobPlan plan = Init(SyncMode::kIncremental);
  EXPECT_TRUE(plan.is_reset);
  auto bound = ValueOrDie(backend().GetStreamResetByJobId(plan.job.id));
  ASSERT_TRUE(bound.has_value());
  EXPECT_EQ(bound->consumed_by_job_id, plan.job.id);
}

TEST_F(InitJobTest, AResetOutsideIncrementalModeIsIgnored) {
  settings_.reset_requested = true;
  JobPlan plan = Init(SyncMode::kFullRefresh);
  EXPECT_FALSE(plan.is_reset);
  EXPECT_FALSE(ValueOrDie(backend().GetStreamResetByJobId(plan.job.id)).has_value());
}

}  // namespace
}  // namespace bizon
