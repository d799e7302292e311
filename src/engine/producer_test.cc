// RunProducer against the in-memory source: what it pushes (each iteration, then exactly one
// termination or error termination), where it starts, the max_iterations cap, the incremental
// window, and the source cursors it notes in a SQLite backend.
#include "engine/producer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "engine/backend/backend_test_support.h"
#include "engine/runner/outcome.h"
#include "testing/in_memory_connectors.h"

namespace bizon {
namespace {

using testing_support::InMemorySource;
using testing_support::kKey;
using testing_support::MakeRecords;
using testing_support::Page;
using testing_support::SqliteHarness;
using testing_support::ValueOrDie;

class CollectingSink final : public MessageSink {
 public:
  Status Push(QueueMessage message) override {
    messages.push_back(std::move(message));
    if (accept_until < 0 || static_cast<int>(messages.size()) <= accept_until) return Status::Ok();
    return CancelledError("the consumer is gone", FailureClass::kKilled);
  }
  std::vector<QueueMessage> messages;
  int accept_until = -1;  // >= 0: pushes after this many fail (the consumer is gone).
};

class ProducerTest : public testing::Test {
 protected:
  ProducerTest() : source_({MakeRecords(3), MakeRecords(2, "b"), MakeRecords(4, "c")}) {
    settings_.key = kKey;
    settings_.sync_cursor_every = 1;
    plan_.job = ValueOrDie(harness_.backend().CreateStreamJob(kKey, "full_refresh", 9, "me@h"));
  }

  ProducerResult Run(Backend* backend = nullptr) {
    return RunProducer(source_, backend, settings_, plan_, sink_, stop_);
  }

  SqliteHarness harness_;
  InMemorySource source_;
  PipelineSettings settings_;
  JobPlan plan_;
  CollectingSink sink_;
  std::atomic<bool> stop_{false};
};

TEST_F(ProducerTest, PushesEveryIterationThenOneTermination) {
  ProducerResult result = Run();
  EXPECT_EQ(ReturnStatusOf(result.error, Side::kProducer), ReturnStatus::kSuccess)
      << result.error.ToString();
  ASSERT_EQ(sink_.messages.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    const QueueMessage& message = sink_.messages[static_cast<size_t>(i)];
    EXPECT_EQ(message.kind, QueueMessage::Kind::kData);
    EXPECT_EQ(message.iteration, i);
    EXPECT_GT(message.extracted_at_us, 0);
    EXPECT_EQ(message.records.extracted_at_us(0), message.extracted_at_us);
  }
  EXPECT_EQ(sink_.messages[0].records.size(), 3u);
  EXPECT_EQ(sink_.messages[0].next_pagination.ToJson(), R"({"page":1})");
  EXPECT_EQ(sink_.messages[2].next_pagination.ToJson(), "{}");
  const QueueMessage& end = sink_.messages[3];
  EXPECT_EQ(end.kind, QueueMessage::Kind::kTermination);
  EXPECT_TRUE(end.source_exhausted);
  EXPECT_EQ(end.iteration, 3);
  EXPECT_EQ(source_.requested(), (std::vector<int64_t>{0, 1, 2}));
}

TEST_F(ProducerTest, AcknowledgesWhatTheConsumerRecordedBeforeTheNextFetch) {
  // A consumer that records each iteration as soon as it arrives: the producer hands each
  // recorded pagination to the source before fetching again, never one it has not recorded.
  Acknowledgements acks;
  class RecordingSink final : public MessageSink {
   public:
    RecordingSink(Acknowledgements& acks, InMemorySource& source) : acks_(acks), source_(source) {}
    Status Push(QueueMessage message) override {
      if (message.kind == QueueMessage::Kind::kData) {
        commits_before_push.push_back(source_.commits());
        acks_.Post(message.next_pagination);
      }
      return Status::Ok();
    }
    std::vector<int> commits_before_push;

   private:
    Acknowledgements& acks_;
    InMemorySource& source_;
  } sink(acks, source_);
  ProducerResult result = RunProducer(source_, nullptr, settings_, plan_, sink, stop_, &acks);
  ASSERT_EQ(ReturnStatusOf(result.error, Side::kProducer), ReturnStatus::kSuccess)
      << result.error.ToString();
  EXPECT_EQ(sink.commits_before_push, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(source_.committed().size(), 2u);
  EXPECT_EQ(source_.committed()[0].ToJson(), R"({"page":1})");
  EXPECT_EQ(source_.committed()[1].ToJson(), R"({"page":2})");
  // The last one waits for the runner, which acknowledges it once the producer is done.
  std::optional<Value> pending = acks.Take();
  ASSERT_TRUE(pending.has_value());
  EXPECT_EQ(pending->ToJson(), "{}");
}

TEST_F(ProducerTest, AResumedJobStartsAtItsIterationAndPagination) {
  plan_.start_iteration = 7;
  plan_.start_pagination = Page(2);
  ProducerResult result = Run();
  EXPECT_EQ(ReturnStatusOf(result.error, Side::kProducer), ReturnStatus::kSuccess);
  EXPECT_EQ(source_.requested(), (std::vector<int64_t>{2}));
  ASSERT_EQ(sink_.messages.size(), 2u);
  EXPECT_EQ(sink_.messages[0].iteration, 7);
  EXPECT_EQ(sink_.messages[0].records.size(), 4u);
  EXPECT_EQ(sink_.messages[1].iteration, 8);
}

TEST_F(ProducerTest, AnExhaustedJobOnlyTerminates) {
  plan_.source_exhausted = true;
  plan_.start_iteration = 3;
  ProducerResult result = Run();
  EXPECT_EQ(ReturnStatusOf(result.error, Side::kProducer), ReturnStatus::kSuccess);
  EXPECT_TRUE(source_.requested().empty());
  ASSERT_EQ(sink_.messages.size(), 1u);
  EXPECT_EQ(sink_.messages[0].kind, QueueMessage::Kind::kTermination);
  EXPECT_TRUE(sink_.messages[0].source_exhausted);
}

TEST_F(ProducerTest, MaxIterationsCountsThisRunsIterationsAndKeepsThePosition) {
  InMemorySource longer({MakeRecords(1), MakeRecords(1), MakeRecords(1), MakeRecords(1),
                         MakeRecords(1), MakeRecords(1)});
  settings_.max_iterations = 1;
  plan_.start_iteration = 10;
  ProducerResult result = RunProducer(longer, nullptr, settings_, plan_, sink_, stop_);
  EXPECT_EQ(ReturnStatusOf(result.error, Side::kProducer), ReturnStatus::kSuccess);
  // 0..N: two iterations for max_iterations 1, as the original counts them.
  EXPECT_EQ(longer.requested(), (std::vector<int64_t>{0, 1}));
  ASSERT_EQ(sink_.messages.size(), 3u);
  const QueueMessage& capped = sink_.messages[2];
  EXPECT_EQ(capped.kind, QueueMessage::Kind::kTermination);
  EXPECT_FALSE(capped.source_exhausted);
  EXPECT_EQ(capped.iteration, 12);
  EXPECT_EQ(capped.next_pagination.ToJson(), R"({"page":2})");
}

TEST_F(ProducerTest, ASourceFailureEndsWithAnErrorTermination) {
  source_.FailAt(1, UnavailableError("503 from the API"));
  ProducerResult result = Run();
  EXPECT_EQ(ReturnStatusOf(result.error, Side::kProducer), ReturnStatus::kSourceError);
  EXPECT_EQ(result.error.failure_class(), FailureClass::kSource);
  EXPECT_EQ(result.error.message(), "dummy.creatures iteration 1: 503 from the API");
  ASSERT_EQ(sink_.messages.size(), 2u);
  const QueueMessage& failed = sink_.messages[1];
  EXPECT_EQ(failed.kind, QueueMessage::Kind::kErrorTermination);
  EXPECT_EQ(failed.iteration, 1);
  EXPECT_EQ(failed.error.message(), result.error.message());
  EXPECT_EQ(failed.error.failure_class(), FailureClass::kSource);
}

TEST_F(ProducerTest, AGoneConsumerStopsTheProducer) {
  sink_.accept_until = 1;
  ProducerResult result = Run();
  EXPECT_EQ(ReturnStatusOf(result.error, Side::kProducer), ReturnStatus::kKilledByRunner);
  EXPECT_EQ(sink_.messages.size(), 2u);  // The refused push is the last one.
  EXPECT_EQ(source_.requested(), (std::vector<int64_t>{0, 1}));
}

TEST_F(ProducerTest, AStopRequestEndsBeforeTheNextFetch) {
  stop_ = true;
  ProducerResult result = Run();
  EXPECT_EQ(ReturnStatusOf(result.error, Side::kProducer), ReturnStatus::kKilledByRunner);
  EXPECT_EQ(result.error.code(), StatusCode::kCancelled);
  EXPECT_TRUE(source_.requested().empty());
  // No termination is pushed: the runner that set the flag stops the consumer with it.
  EXPECT_TRUE(sink_.messages.empty());
}

TEST_F(ProducerTest, AnIncrementalWindowIsReadWithGetRecordsAfter) {
  IncrementalState window;
  window.last_run_us = 111;
  window.run_started_at_us = 222;
  window.cursor_field = "updated_at";
  plan_.window = window;
  ProducerResult result = Run();
  EXPECT_EQ(ReturnStatusOf(result.error, Side::kProducer), ReturnStatus::kSuccess);
  ASSERT_EQ(source_.windows().size(), 3u);
  EXPECT_EQ(source_.windows()[0].last_run_us, 111);
  EXPECT_EQ(source_.windows()[2].run_started_at_us, 222);
}

TEST_F(ProducerTest, AResetIgnoresTheWindow) {
  plan_.window = IncrementalState{};
  plan_.is_reset = true;
  ProducerResult result = Run();
  EXPECT_EQ(ReturnStatusOf(result.error, Side::kProducer), ReturnStatus::kSuccess);
  EXPECT_TRUE(source_.windows().empty());
  EXPECT_EQ(source_.requested().size(), 3u);
}

TEST_F(ProducerTest, NotesASourceCursorEverySyncCursorEveryIterations) {
  settings_.sync_cursor_every = 2;
  ProducerResult result = Run(&harness_.backend());
  EXPECT_EQ(ReturnStatusOf(result.error, Side::kProducer), ReturnStatus::kSuccess);
  EXPECT_EQ(harness_.QueryText("SELECT group_concat(iteration || ':' || rows_fetched, ' ') FROM "
                               "(SELECT * FROM source_cursors ORDER BY iteration)"),
            "0:0 2:5");
}

}  // namespace
}  // namespace bizon
