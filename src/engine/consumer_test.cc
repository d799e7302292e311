// RunConsumer against the in-memory destination and a SQLite backend in a temporary directory:
// when it writes (by bytes, by time, oversized iterations in chunks), which cursors it records
// (empty pages included), and how each kind of failure ends the run.
#include "engine/consumer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "engine/backend/backend_test_support.h"
#include "engine/runner/outcome.h"
#include "testing/in_memory_connectors.h"

namespace bizon {
namespace {

ReturnStatus StatusOf(const ConsumerResult& result) {
  return ReturnStatusOf(result.error, Side::kConsumer);
}

using namespace std::chrono_literals;
using testing_support::InMemoryDestination;
using testing_support::kKey;
using testing_support::MakeRecords;
using testing_support::Page;
using testing_support::ScriptedMessageSource;
using testing_support::SqliteHarness;
using testing_support::ValueOrDie;

// Ten records whose payloads all have the same size (n from 10 to 19).
RecordBatch TenRecords(int first = 10) { return MakeRecords(10, "r", 20, first); }
const int64_t kPageBytes = static_cast<int64_t>(TenRecords().PayloadBytes());
const int64_t kRecordBytes = kPageBytes / 10;

class ConsumerTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(kPageBytes % 10, 0);
    settings_.key = kKey;
    settings_.destination_name = "memory";
    settings_.sync_mode = SyncMode::kFullRefresh;
    settings_.buffer_flush_timeout_s = 600;
  }

  void StartJob(SyncMode mode) {
    settings_.sync_mode = mode;
    plan_.job = ValueOrDie(backend().CreateStreamJob(kKey, ToString(mode), std::nullopt, "me@h"));
    ASSERT_TRUE(
        backend().UpdateStreamJobStatus(plan_.job.id, JobStatus::kRunning, std::nullopt).ok());
  }

  ConsumerResult Run(ScriptedMessageSource& source) {
    if (plan_.job.id.empty()) StartJob(settings_.sync_mode);
    return RunConsumer(source, destination_, backend(), settings_, plan_, stop_);
  }

  Backend& backend() { return harness_.backend(); }

  // The recorded cursors in order, each "from-to:rows:pagination".
  std::string Cursors() {
    return harness_
        .QueryText(
            "SELECT group_concat(c, ' ') FROM (SELECT from_source_iteration || '-' || "
            "to_source_iteration || ':' || rows_written || ':' || coalesce(pagination, 'null') "
            "AS c FROM destination_cursors WHERE job_id = '" +
            plan_.job.id + "' ORDER BY from_source_iteration, created_at)")
        .value_or("");
  }

  JobStatus JobState() { return ValueOrDie(backend().GetStreamJobById(plan_.job.id))->status; }

  SqliteHarness harness_;
  InMemoryDestination destination_;
  PipelineSettings settings_;
  JobPlan plan_;
  std::atomic<bool> stop_{false};
};

TEST_F(ConsumerTest, FlushesBeforeAnIterationThatWouldOverflowTheBuffer) {
  settings_.buffer_bytes = 2 * kPageBytes + kPageBytes / 2;
  ScriptedMessageSource source;
  for (int i = 0; i < 5; ++i) source.Data(i, TenRecords(), i < 4 ? Page(i + 1) : Value::EmptyMap());
  source.End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSuccess) << result.error.ToString();
  EXPECT_EQ(destination_.WriteSizes(), (std::vector<size_t>{20, 20, 10}));
  EXPECT_EQ(Cursors(), R"(0-1:20:{"page":2} 2-3:20:{"page":4} 4-4:10:null)");
  EXPECT_EQ(destination_.finalized(), 1);
  EXPECT_EQ(destination_.succeeded(), 1);
  EXPECT_EQ(JobState(), JobStatus::kSucceeded);
  EXPECT_EQ(source.remaining(), 0u);
}

TEST_F(ConsumerTest, ABufferOfZeroBytesWritesEveryIterationAtOnce) {
  settings_.buffer_bytes = 0;
  ScriptedMessageSource source;
  source.Data(0, TenRecords(), Page(1)).Data(1, MakeRecords(3), Value::EmptyMap()).End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSuccess) << result.error.ToString();
  EXPECT_EQ(destination_.WriteSizes(), (std::vector<size_t>{10, 3}));
  EXPECT_EQ(Cursors(), R"(0-0:10:{"page":1} 1-1:3:null)");
}

TEST_F(ConsumerTest, TheDestinationIsToldOfEachRecordedCursorWithItsState) {
  settings_.buffer_bytes = 0;
  ScriptedMessageSource source;
  source.Data(0, TenRecords(), Page(1)).Data(1, MakeRecords(3), Value::EmptyMap()).End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSuccess) << result.error.ToString();
  ASSERT_EQ(destination_.recorded_states().size(), 2u);
  EXPECT_EQ(destination_.recorded_states()[0].GetInteger("rows"), 10);
  EXPECT_EQ(destination_.recorded_states()[1].GetInteger("rows"), 13);
}

TEST_F(ConsumerTest, AFailedOnCursorRecordedIsADestinationErrorAfterTheCursor) {
  settings_.buffer_bytes = 0;
  destination_.FailOnCursorRecorded(Status(StatusCode::kUnavailable, "commit refused"));
  ScriptedMessageSource source;
  source.Data(0, TenRecords(), Page(1)).Data(1, MakeRecords(3), Value::EmptyMap()).End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kDestinationError) << result.error.ToString();
  // The cursor is recorded first: a resumed run's Open() is handed its state to settle.
  EXPECT_EQ(Cursors(), R"(0-0:10:{"page":1})");
  EXPECT_EQ(destination_.recorded_states().size(), 1u);
  EXPECT_EQ(destination_.finalized(), 0);
}

TEST_F(ConsumerTest, FlushesABufferOlderThanTheTimeoutWhileWaiting) {
  settings_.buffer_bytes = 100 * kPageBytes;
  settings_.buffer_flush_timeout_s = 0.05;
  ScriptedMessageSource source;
  source.Data(0, TenRecords(), Page(1)).Wait(120ms);
  source.Data(1, TenRecords(), Value::EmptyMap()).End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSuccess) << result.error.ToString();
  EXPECT_EQ(destination_.WriteSizes(), (std::vector<size_t>{10, 10}));
  EXPECT_EQ(Cursors(), R"(0-0:10:{"page":1} 1-1:10:null)");
}

TEST_F(ConsumerTest, AYoungBufferWaitsForMoreData) {
  settings_.buffer_bytes = 100 * kPageBytes;
  settings_.buffer_flush_timeout_s = 600;
  ScriptedMessageSource source;
  source.Data(0, TenRecords(), Page(1)).Wait(20ms);
  source.Data(1, TenRecords(), Value::EmptyMap()).End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSuccess) << result.error.ToString();
  EXPECT_EQ(destination_.WriteSizes(), (std::vector<size_t>{20}));
  EXPECT_EQ(Cursors(), R"(0-1:20:null)");
}

TEST_F(ConsumerTest, ARipeBufferIsFlushedWhenTheNextIterationArrives) {
  settings_.buffer_bytes = 100 * kPageBytes;
  settings_.buffer_flush_timeout_s = 0.02;
  ScriptedMessageSource source;
  source.Data(0, TenRecords(), Page(1));
  source.Data(1, TenRecords(), Page(2));
  ConsumerResult result;
  // The iteration after a ripe buffer flushes it before joining: sleep between the two messages
  // without a timeout step, as a producer that delivers late but before the consumer's wait ends.
  struct Late final : MessageSource {
    ScriptedMessageSource& inner;
    int seen = 0;
    explicit Late(ScriptedMessageSource& s) : inner(s) {}
    Result<std::optional<QueueMessage>> Next(std::chrono::milliseconds timeout) override {
      if (seen++ == 1) std::this_thread::sleep_for(60ms);
      return inner.Next(timeout);
    }
  } late(source);
  source.End();
  StartJob(SyncMode::kFullRefresh);
  result = RunConsumer(late, destination_, backend(), settings_, plan_, stop_);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSuccess) << result.error.ToString();
  EXPECT_EQ(destination_.WriteSizes(), (std::vector<size_t>{10, 10}));
  EXPECT_EQ(Cursors(), R"(0-0:10:{"page":1} 1-1:10:{"page":2})");
}

TEST_F(ConsumerTest, AnOversizedIterationIsWrittenInChunksUnderOneCursor) {
  settings_.buffer_bytes = 3 * kRecordBytes + kRecordBytes / 2;
  ScriptedMessageSource source;
  source.Data(0, MakeRecords(2, "s", 20, 10), Page(1));
  source.Data(1, TenRecords(), Page(2));
  source.Data(2, MakeRecords(1, "t", 20, 10), Value::EmptyMap()).End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSuccess) << result.error.ToString();
  // The buffered iteration goes first; then chunks of at most buffer_bytes.
  EXPECT_EQ(destination_.WriteSizes(), (std::vector<size_t>{2, 3, 3, 3, 1, 1}));
  EXPECT_EQ(Cursors(), R"(0-0:2:{"page":1} 1-1:10:{"page":2} 2-2:1:null)");
  std::vector<std::string> ids = destination_.Ids();
  ASSERT_EQ(ids.size(), 13u);
  EXPECT_EQ(ids[2], "r10");
  EXPECT_EQ(ids[11], "r19");
}

TEST_F(ConsumerTest, AFailedChunkLeavesTheOversizedIterationWithoutACursor) {
  settings_.buffer_bytes = 3 * kRecordBytes + kRecordBytes / 2;
  destination_.FailWriteNumber(2, UnavailableError("disk full"));
  ScriptedMessageSource source;
  source.Data(0, MakeRecords(2, "s", 20, 10), Page(1));
  source.Data(1, TenRecords(), Value::EmptyMap()).End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kDestinationError);
  EXPECT_EQ(result.error.failure_class(), FailureClass::kDestination);
  EXPECT_EQ(result.error.message(), "disk full");
  EXPECT_EQ(Cursors(), R"(0-0:2:{"page":1})");
  EXPECT_EQ(destination_.finalized(), 0);
  EXPECT_EQ(JobState(), JobStatus::kRunning);
}

TEST_F(ConsumerTest, EmptyPagesUnbufferedRecordTheirOwnCursorsWithTheLastDestinationState) {
  settings_.buffer_bytes = 0;
  ScriptedMessageSource source;
  source.Data(0, RecordBatch(), Page(1));
  source.Data(1, TenRecords(), Page(2));
  source.Data(2, RecordBatch(), Value::EmptyMap()).End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSuccess) << result.error.ToString();
  EXPECT_EQ(destination_.WriteSizes(), (std::vector<size_t>{10}));
  EXPECT_EQ(Cursors(), R"(0-0:0:{"page":1} 1-1:10:{"page":2} 2-2:0:null)");
  // The empty page's cursor carries what the destination last wrote, so a resume from it hands
  // Open() the rows already there.
  EXPECT_EQ(harness_.QueryText("SELECT destination_state FROM destination_cursors WHERE "
                               "from_source_iteration = 2"),
            R"({"rows":10})");
  EXPECT_TRUE(ValueOrDie(backend().GetLastDestinationCursor(plan_.job.id))->destination_state);
}

TEST_F(ConsumerTest, AnEmptyPageExtendsTheBufferedRange) {
  settings_.buffer_bytes = 100 * kPageBytes;
  ScriptedMessageSource source;
  source.Data(0, TenRecords(), Page(1));
  source.Data(1, RecordBatch(), Page(2));
  source.Data(2, RecordBatch(), Value::EmptyMap()).End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSuccess) << result.error.ToString();
  EXPECT_EQ(destination_.WriteSizes(), (std::vector<size_t>{10}));
  EXPECT_EQ(Cursors(), R"(0-2:10:null)");
}

TEST_F(ConsumerTest, AnErrorTerminationWritesNothingMoreAndMirrorsTheProducer) {
  settings_.buffer_bytes = 100 * kPageBytes;
  ScriptedMessageSource source;
  source.Data(0, TenRecords(), Page(1));
  source.ErrorEnd(Status(StatusCode::kUnavailable, "api down", FailureClass::kSource));
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSourceError);
  ASSERT_TRUE(result.upstream);
  EXPECT_EQ(ReturnStatusOf(result.error, Side::kProducer), ReturnStatus::kSourceError);
  EXPECT_EQ(result.error.message(), "api down");
  EXPECT_EQ(result.error.failure_class(), FailureClass::kSource);
  EXPECT_TRUE(destination_.writes().empty());
  EXPECT_EQ(destination_.finalized(), 0);
  EXPECT_EQ(Cursors(), "");
  EXPECT_EQ(JobState(), JobStatus::kRunning);
}

TEST_F(ConsumerTest, AnErrorTerminationKeepsTheProducersOwnStatus) {
  ScriptedMessageSource source;
  source.ErrorEnd(Status(StatusCode::kInternal, "transform", FailureClass::kTransform));
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kTransformError);
  EXPECT_TRUE(result.upstream);
  EXPECT_EQ(ReturnStatusOf(result.error, Side::kProducer), ReturnStatus::kTransformError);
}

TEST_F(ConsumerTest, AnErrorTerminationThatNamesNoSideCountsAsASourceError) {
  ScriptedMessageSource source;
  source.ErrorEnd(InternalError("?"));
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSourceError);
  EXPECT_EQ(result.error.failure_class(), FailureClass::kSource);
  EXPECT_TRUE(result.upstream);
}

TEST_F(ConsumerTest, ABrokenChannelIsAQueueError) {
  ScriptedMessageSource source;
  source.Data(0, TenRecords(), Page(1)).Break(UnavailableError("the producer died"));
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kQueueError);
  EXPECT_EQ(result.error.failure_class(), FailureClass::kQueue);
  EXPECT_EQ(destination_.finalized(), 0);
}

TEST_F(ConsumerTest, ATransformWorkerFailureOnTheChannelIsATransformError) {
  ScriptedMessageSource source;
  source.Break(Status(StatusCode::kInternal, "bad row", FailureClass::kTransform));
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kTransformError);
  EXPECT_EQ(result.error.message(), "bad row");
}

TEST_F(ConsumerTest, AFailedWriteIsADestinationErrorWithoutACursor) {
  settings_.buffer_bytes = 0;
  destination_.FailWriteNumber(1, UnavailableError("quota"));
  ScriptedMessageSource source;
  source.Data(0, TenRecords(), Page(1)).Data(1, TenRecords(), Value::EmptyMap()).End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kDestinationError);
  EXPECT_EQ(result.error.failure_class(), FailureClass::kDestination);
  EXPECT_EQ(Cursors(), R"(0-0:10:{"page":1})");
  EXPECT_EQ(source.remaining(), 1u);  // Stopped at once: the termination was never read.
}

TEST_F(ConsumerTest, AFailedFinalizeLeavesTheJobRunning) {
  destination_.FailFinalize(UnavailableError("swap refused"));
  ScriptedMessageSource source;
  source.Data(0, TenRecords(), Value::EmptyMap()).End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kDestinationError);
  EXPECT_EQ(Cursors(), "0-0:10:null");
  EXPECT_EQ(destination_.succeeded(), 0);
  EXPECT_EQ(JobState(), JobStatus::kRunning);
}

TEST_F(ConsumerTest, AStopRequestEndsTheRunAsKilled) {
  stop_ = true;
  ScriptedMessageSource source;
  source.Data(0, TenRecords(), Value::EmptyMap()).End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kKilledByRunner);
  EXPECT_EQ(result.error.code(), StatusCode::kCancelled);
  EXPECT_EQ(source.calls(), 0);
  ASSERT_EQ(destination_.opened_with().size(), 1u);
}

TEST_F(ConsumerTest, AnIncrementalRunCappedByMaxIterationsKeepsItsJobOpen) {
  StartJob(SyncMode::kIncremental);
  ScriptedMessageSource source;
  source.Data(0, TenRecords(), Page(1)).End(/*source_exhausted=*/false);
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSuccess) << result.error.ToString();
  EXPECT_EQ(destination_.WriteSizes(), (std::vector<size_t>{10}));
  EXPECT_EQ(destination_.finalized(), 0);
  auto job = ValueOrDie(backend().GetStreamJobById(plan_.job.id));
  EXPECT_EQ(job->status, JobStatus::kRunning);
  EXPECT_EQ(job->owner, "");
}

TEST_F(ConsumerTest, ACaughtUpStreamReleasesItsJobWithoutPublishing) {
  StartJob(SyncMode::kStream);
  ScriptedMessageSource source;
  source.Data(0, TenRecords(), Page(1)).End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSuccess) << result.error.ToString();
  EXPECT_EQ(destination_.finalized(), 0);
  auto job = ValueOrDie(backend().GetStreamJobById(plan_.job.id));
  EXPECT_EQ(job->status, JobStatus::kRunning);
  EXPECT_EQ(job->owner, "");
}

TEST_F(ConsumerTest, TheLastNextStateBecomesTheIncrementalState) {
  StartJob(SyncMode::kIncremental);
  Value first = Value::EmptyMap();
  first.Set("after", Value("a"));
  Value second = Value::EmptyMap();
  second.Set("after", Value("b"));
  ScriptedMessageSource source;
  source.Data(0, TenRecords(), Page(1), first).Data(1, TenRecords(), Value::EmptyMap(), second);
  source.Data(2, RecordBatch(), Value::EmptyMap()).End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSuccess) << result.error.ToString();
  auto job = ValueOrDie(backend().GetStreamJobById(plan_.job.id));
  EXPECT_EQ(job->status, JobStatus::kSucceeded);
  EXPECT_EQ(job->incremental_state, R"({"after":"b"})");
}

TEST_F(ConsumerTest, WithoutANewStateThePreviousOneIsKept) {
  StartJob(SyncMode::kIncremental);
  plan_.previous_state = R"({"after":"z"})";
  ScriptedMessageSource source;
  source.Data(0, TenRecords(), Value::EmptyMap()).End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSuccess) << result.error.ToString();
  EXPECT_EQ(ValueOrDie(backend().GetStreamJobById(plan_.job.id))->incremental_state,
            R"({"after":"z"})");
}

TEST_F(ConsumerTest, AResumedJobOpensTheDestinationWithItsState) {
  plan_.destination_state = Value::EmptyMap();
  plan_.destination_state.Set("rows", Value(7));
  settings_.buffer_bytes = 0;
  ScriptedMessageSource source;
  source.Data(3, TenRecords(), Value::EmptyMap()).End();
  ConsumerResult result = Run(source);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSuccess) << result.error.ToString();
  ASSERT_EQ(destination_.opened_with().size(), 1u);
  EXPECT_EQ(destination_.opened_with()[0].ToJson(), R"({"rows":7})");
  EXPECT_EQ(harness_.QueryText("SELECT destination_state FROM destination_cursors"),
            R"({"rows":17})");
}

TEST_F(ConsumerTest, AnAppendingDestinationSyncsOnceTheIntervalIsReached) {
  InMemoryDestination appending(/*can_append=*/true);
  settings_.buffer_bytes = 2 * kPageBytes + kPageBytes / 2;
  ScriptedMessageSource source;
  for (int i = 0; i < 5; ++i) source.Data(i, TenRecords(), i < 4 ? Page(i + 1) : Value::EmptyMap());
  source.End();
  StartJob(SyncMode::kFullRefresh);
  ConsumerResult result = RunConsumer(source, appending, backend(), settings_, plan_, stop_);
  EXPECT_EQ(StatusOf(result), ReturnStatus::kSuccess) << result.error.ToString();
  EXPECT_EQ(appending.WriteSizes(), (std::vector<size_t>{30, 20}));
  EXPECT_EQ(Cursors(), R"(0-2:30:{"page":3} 3-4:20:null)");
  EXPECT_EQ(appending.finalized(), 1);
}

TEST(ReturnStatusOfTest, NamesEachSidesResultByItsFailureClass) {
  EXPECT_EQ(ReturnStatusOf(Status::Ok(), Side::kConsumer), ReturnStatus::kSuccess);
  EXPECT_EQ(ReturnStatusOf(UnavailableError("x", FailureClass::kSource), Side::kConsumer),
            ReturnStatus::kSourceError);
  EXPECT_EQ(ReturnStatusOf(CancelledError("x", FailureClass::kKilled), Side::kProducer),
            ReturnStatus::kKilledByRunner);
  EXPECT_EQ(ReturnStatusOf(UnavailableError("x", FailureClass::kQueue), Side::kProducer),
            ReturnStatus::kQueueError);
  // A failure that names no side (or only the config) is the side's own part.
  EXPECT_EQ(ReturnStatusOf(InvalidArgumentError("x"), Side::kConsumer),
            ReturnStatus::kDestinationError);
  EXPECT_EQ(ReturnStatusOf(InternalError("x"), Side::kProducer), ReturnStatus::kSourceError);
  EXPECT_EQ(ToString(ReturnStatus::kKilledByRunner), "killed_by_runner");
}

}  // namespace
}  // namespace bizon
