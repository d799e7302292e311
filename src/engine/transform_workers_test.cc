// TransformWorkers with real worker processes (this binary re-executed as `__transform-worker`,
// see tests/testing/unit_tests_main.cc) running Python transforms on batches from a scripted
// upstream: results in source order whatever order the workers finish in, batches dealt round
// robin, messages that need no transform passed through in their place, and the failures (a
// raising transform, a record past its time limit, a worker that dies, a transform that does not
// compile, an upstream error) each failing Next() with what happened.
#include "engine/transform_workers.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "config/yaml_loader.h"
#include "testing/in_memory_connectors.h"

namespace bizon {
namespace {

using std::chrono::milliseconds;
using testing_support::MakeRecords;
using testing_support::Page;
using testing_support::ScriptedMessageSource;

constexpr milliseconds kPatience{30'000};  // Worker start-up under ASan takes a while.
constexpr std::string_view kTagTransform =
    "transforms:\n  - label: tag\n    python: data['seen'] = True\n";

// The `transforms` list of a YAML snippet, as the config loader gives it.
Value Transforms(std::string_view yaml) {
  auto parsed = ParseYaml(yaml, "test.yml");
  EXPECT_TRUE(parsed.has_value()) << parsed.error().message();
  const Value* transforms = parsed ? parsed->Find("transforms") : nullptr;
  return transforms != nullptr ? *transforms : Value();
}

std::unique_ptr<TransformWorkers> StartOrFail(const Value& transforms,
                                              TransformWorkerOptions options,
                                              MessageSource& upstream) {
  auto started = TransformWorkers::Start(transforms, options, upstream);
  EXPECT_TRUE(started.has_value()) << started.error().ToString();
  return started ? std::move(*started) : nullptr;
}

// The next message, waiting as long as the workers may need; an error or a timeout fails the
// test and gives nullopt.
std::optional<QueueMessage> NextMessage(TransformWorkers& workers) {
  auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (std::chrono::steady_clock::now() < deadline) {
    auto next = workers.Next(milliseconds(200));
    if (!next) {
      ADD_FAILURE() << next.error().ToString();
      return std::nullopt;
    }
    if (next->has_value()) return std::move(**next);
  }
  ADD_FAILURE() << "no message within " << kPatience.count() << " ms";
  return std::nullopt;
}

// The first error Next() reports, reading past successful messages; OK when none came.
Status NextError(TransformWorkers& workers, int* messages_before = nullptr) {
  auto deadline = std::chrono::steady_clock::now() + kPatience;
  int messages = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    auto next = workers.Next(milliseconds(200));
    if (!next) {
      if (messages_before != nullptr) *messages_before = messages;
      return next.error();
    }
    if (next->has_value()) ++messages;
  }
  return Status::Ok();
}

// Runs `transforms_yaml` over `upstream` and gives the first error Next() reports.
Status FirstError(std::string_view transforms_yaml, TransformWorkerOptions options,
                  ScriptedMessageSource& upstream, int* messages_before = nullptr) {
  auto workers = StartOrFail(Transforms(transforms_yaml), options, upstream);
  if (workers == nullptr) return InternalError("the transform workers did not start");
  return NextError(*workers, messages_before);
}

void ExpectMentions(const Status& error, std::string_view part) {
  EXPECT_NE(error.message().find(part), std::string::npos) << error.message();
}

Value Payload(const QueueMessage& message, size_t i) {
  auto parsed = Value::FromJson(message.records.payload(i));
  EXPECT_TRUE(parsed.has_value()) << message.records.payload(i);
  return parsed ? *parsed : Value();
}

TEST(TransformWorkersTest, ResultsKeepTheSourceOrderAndBatchesGoRoundRobin) {
  constexpr int kBatches = 9;
  constexpr int kRecords = 4;
  // Batch 0 is slow and batch 1 slower, so later batches finish first in other workers.
  Value transforms = Transforms(R"(
transforms:
  - label: stamp
    python: |
      import os, time
      time.sleep({0: 0.4, 4: 0.6}.get(data['n'], 0))
      data['pid'] = os.getpid()
  - label: double
    python: data['twice'] = data['n'] * 2
)");
  ScriptedMessageSource upstream;
  for (int i = 0; i < kBatches; ++i) {
    upstream.Data(i, MakeRecords(kRecords, "r", 0, i * kRecords), Page(i + 1));
  }
  upstream.End(/*source_exhausted=*/true);
  auto workers = StartOrFail(transforms, {.workers = 3}, upstream);
  ASSERT_NE(workers, nullptr);

  std::vector<int64_t> batch_pids;
  for (int i = 0; i < kBatches; ++i) {
    std::optional<QueueMessage> message = NextMessage(*workers);
    ASSERT_TRUE(message.has_value()) << "batch " << i;
    ASSERT_EQ(message->kind, QueueMessage::Kind::kData);
    EXPECT_EQ(message->iteration, i);
    EXPECT_EQ(message->next_pagination, Page(i + 1));
    ASSERT_EQ(message->records.size(), static_cast<size_t>(kRecords));
    std::set<int64_t> pids;
    for (size_t r = 0; r < message->records.size(); ++r) {
      int64_t n = i * kRecords + static_cast<int64_t>(r);
      EXPECT_EQ(message->records.id(r), "r" + std::to_string(n));
      Value payload = Payload(*message, r);
      EXPECT_EQ(payload.GetInteger("n", -1), n);
      EXPECT_EQ(payload.GetInteger("twice", -1), 2 * n);
      pids.insert(payload.GetInteger("pid"));
    }
    // A batch stays whole within one worker.
    ASSERT_EQ(pids.size(), 1u);
    batch_pids.push_back(*pids.begin());
  }
  std::optional<QueueMessage> end = NextMessage(*workers);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->kind, QueueMessage::Kind::kTermination);
  EXPECT_TRUE(end->source_exhausted);
  // Three workers, dealt in turn.
  EXPECT_EQ(std::set<int64_t>(batch_pids.begin(), batch_pids.end()).size(), 3u);
  for (int i = 3; i < kBatches; ++i) EXPECT_EQ(batch_pids[i], batch_pids[i - 3]) << i;
  EXPECT_NE(batch_pids[0], batch_pids[1]);
  EXPECT_NE(batch_pids[1], batch_pids[2]);
}

TEST(TransformWorkersTest, MessagesWithoutRecordsPassThroughInTheirPlace) {
  Value transforms = Transforms(kTagTransform);
  ScriptedMessageSource upstream;
  upstream.Data(0, MakeRecords(2, "a"), Page(1))
      .Data(1, RecordBatch(), Page(2))
      .Data(2, MakeRecords(1, "b"), Value::EmptyMap())
      .End(/*source_exhausted=*/false);
  auto workers = StartOrFail(transforms, {.workers = 2}, upstream);
  ASSERT_NE(workers, nullptr);
  std::vector<int64_t> iterations;
  for (int i = 0; i < 3; ++i) {
    std::optional<QueueMessage> message = NextMessage(*workers);
    ASSERT_TRUE(message.has_value());
    iterations.push_back(message->iteration);
    for (size_t r = 0; r < message->records.size(); ++r) {
      EXPECT_TRUE(Payload(*message, r).GetBool("seen"));
    }
  }
  EXPECT_EQ(iterations, (std::vector<int64_t>{0, 1, 2}));
  std::optional<QueueMessage> end = NextMessage(*workers);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->kind, QueueMessage::Kind::kTermination);
  EXPECT_FALSE(end->source_exhausted);
}

TEST(TransformWorkersTest, AnErrorTerminationComesAfterTheBatchesBeforeIt) {
  Value transforms = Transforms(kTagTransform);
  ScriptedMessageSource upstream;
  upstream.Data(0, MakeRecords(3), Page(1))
      .ErrorEnd(Status(StatusCode::kUnavailable, "the API went away", FailureClass::kSource));
  auto workers = StartOrFail(transforms, {.workers = 2}, upstream);
  ASSERT_NE(workers, nullptr);
  std::optional<QueueMessage> data = NextMessage(*workers);
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(data->kind, QueueMessage::Kind::kData);
  EXPECT_EQ(data->records.size(), 3u);
  std::optional<QueueMessage> end = NextMessage(*workers);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->kind, QueueMessage::Kind::kErrorTermination);
  EXPECT_EQ(end->error.failure_class(), FailureClass::kSource);
  EXPECT_EQ(end->error.message(), "the API went away");
}

TEST(TransformWorkersTest, ABrokenUpstreamFailsNextInItsPlace) {
  ScriptedMessageSource upstream;
  upstream.Data(0, MakeRecords(2), Page(1))
      .Break(Status(StatusCode::kUnavailable, "the producer process died", FailureClass::kQueue));
  int before = -1;
  Status error = FirstError(kTagTransform, {.workers = 2}, upstream, &before);
  EXPECT_EQ(before, 1);
  EXPECT_EQ(error.code(), StatusCode::kUnavailable);
  EXPECT_EQ(error.failure_class(), FailureClass::kQueue);
  EXPECT_EQ(error.message(), "the producer process died");
}

// The second of two batches fails in its worker: the first batch comes through, then Next()
// fails saying what happened, with failure class transform.
TEST(TransformWorkersTest, AFailureInTheSecondBatchComesAfterTheFirst) {
  struct Case {
    std::string_view what;
    std::string_view transforms;
    std::vector<std::string_view> mentions;
  };
  const Case cases[] = {
      {"a raising transform",
       R"(
transforms:
  - label: picky
    python: |
      if data['n'] == 4:
          raise ValueError('record four is not welcome')
)",
       {"Error applying transformation 'picky' to record 'r4'",
        "ValueError: record four is not welcome"}},
      {"a worker killed mid-batch",
       R"(
transforms:
  - label: fatal
    python: |
      import os, signal
      if data['n'] == 5:
          os.kill(os.getpid(), signal.SIGKILL)
)",
       {"transform worker 2 (pid ",
        ") was killed by signal 9 (Killed) while transforming a batch; nothing was published"}},
  };
  for (const Case& test : cases) {
    SCOPED_TRACE(test.what);
    ScriptedMessageSource upstream;
    upstream.Data(0, MakeRecords(3, "r", 0, 0), Page(1))
        .Data(1, MakeRecords(3, "r", 0, 3), Page(2))
        .End();
    int before = -1;
    Status error = FirstError(test.transforms, {.workers = 2}, upstream, &before);
    EXPECT_EQ(before, 1);
    EXPECT_EQ(error.code(), StatusCode::kAborted);
    EXPECT_EQ(error.failure_class(), FailureClass::kTransform);
    for (std::string_view mention : test.mentions) ExpectMentions(error, mention);
  }
}

TEST(TransformWorkersTest, ARecordPastItsTimeLimitFails) {
  ScriptedMessageSource upstream;
  upstream.Data(0, MakeRecords(4), Value::EmptyMap()).End();
  Status error = FirstError(R"(
transforms:
  - label: forever
    python: |
      while data['n'] == 2:
          pass
)",
                            {.workers = 1, .record_timeout = milliseconds(300)}, upstream);
  EXPECT_EQ(error.failure_class(), FailureClass::kTransform);
  ExpectMentions(error,
                 "Error applying transformation 'forever' to record 'r2': no result after "
                 "0.3 s");
}

TEST(TransformWorkersTest, AWorkerThatExitsOrCannotCompileFailsTheFirstBatch) {
  struct Case {
    std::string_view transforms;
    std::string_view mention;
  };
  for (const Case& test : {
           Case{"transforms:\n  - label: quit\n    python: import os; os._exit(3)\n",
                ") exited with code 3 while transforming a batch"},
           Case{"transforms:\n  - label: broken\n    python: 'data[ = 1'\n",
                "syntax error in transform 'broken'"},
       }) {
    ScriptedMessageSource upstream;
    upstream.Data(0, MakeRecords(1), Value::EmptyMap()).End();
    Status error = FirstError(test.transforms, {.workers = 1}, upstream);
    EXPECT_EQ(error.failure_class(), FailureClass::kTransform) << test.transforms;
    ExpectMentions(error, test.mention);
  }
}

TEST(TransformWorkersTest, NextTimesOutWhileNothingIsReady) {
  Value transforms = Transforms(kTagTransform);
  ScriptedMessageSource upstream;
  upstream.Wait(milliseconds(500)).Data(0, MakeRecords(1), Value::EmptyMap()).End();
  auto workers = StartOrFail(transforms, {.workers = 1}, upstream);
  ASSERT_NE(workers, nullptr);
  auto first = workers->Next(milliseconds(50));
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  EXPECT_FALSE(first->has_value());
  std::optional<QueueMessage> data = NextMessage(*workers);
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(data->records.size(), 1u);
}

// The consumer stops (a failed write, a stop signal) while batches are still being transformed:
// nobody will read those results, so the workers must not be waited for.
void ExpectStopIsPrompt(int batches) {
  Value transforms = Transforms(R"(
transforms:
  - label: slow
    python: |
      import time
      time.sleep(30)
)");
  ScriptedMessageSource upstream;
  for (int i = 0; i < batches; ++i) upstream.Data(i, MakeRecords(1, "r", 0, i), Page(i + 1));
  upstream.End();
  auto workers = StartOrFail(transforms, {.workers = 2}, upstream);
  ASSERT_NE(workers, nullptr);
  auto first = workers->Next(milliseconds(300));
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  EXPECT_FALSE(first->has_value());
  auto started = std::chrono::steady_clock::now();
  workers.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
}

TEST(TransformWorkersTest, StoppingWhileTheFeederWaitsEndsBusyWorkersPromptly) {
  ExpectStopIsPrompt(/*batches=*/6);  // More than the 4 batches two workers may hold.
}

TEST(TransformWorkersTest, StoppingAfterTheLastBatchWasHandedOutEndsBusyWorkersPromptly) {
  ExpectStopIsPrompt(/*batches=*/2);
}

}  // namespace
}  // namespace bizon
