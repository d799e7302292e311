// The process runner with its producer forked from the test: the child builds its own source
// (make_source) and opens the test's SQLite file; the parent consumes into the in-memory
// destination. The child's source logs its commits to a file, which is how the test sees them.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/runner/runner_test_support.h"

namespace bizon {
namespace {

using testing_support::HookedSource;
using testing_support::InMemorySource;
using testing_support::Pages;
using testing_support::RunnerHarness;

class ProcessRunnerTest : public testing::Test {
 protected:
  ProcessRunnerTest() : commit_log_(harness_.sqlite.path() + ".commits") {}

  /// Runs with a producer whose source serves `pages`, set up in the child by `prepare`.
  RunnerResult Run(std::vector<RecordBatch> pages,
                   std::function<void(HookedSource&)> prepare = nullptr) {
    RunContext context = harness_.Context(unused_);
    context.make_source = [&]() -> Result<std::unique_ptr<Source>> {
      auto source = std::make_unique<HookedSource>(pages);
      source->commit_log = commit_log_;
      if (prepare) prepare(*source);
      return std::unique_ptr<Source>(std::move(source));
    };
    return MakeProcessRunner()->Run(context);
  }

  std::vector<std::string> CommittedInTheChild() {
    std::vector<std::string> lines;
    std::ifstream log(commit_log_);
    for (std::string line; std::getline(log, line);) lines.push_back(line);
    return lines;
  }

  RunnerHarness harness_;
  InMemorySource unused_{{}};  // The parent's source: the child builds its own.
  std::string commit_log_;
};

TEST_F(ProcessRunnerTest, RecordsFlowToTheDestinationAndTheJobSucceeds) {
  RunnerResult result = Run(Pages(3, 2));
  harness_.ExpectThreePagesOfTwoLanded(result);
}

TEST_F(ProcessRunnerTest, AFailedConsumerTerminatesTheProducerAndKeepsWhatWasRecorded) {
  // The producer hangs in its third fetch: only the runner's SIGTERM ends it quickly.
  auto started = std::chrono::steady_clock::now();
  harness_.destination.FailWriteNumber(1, UnavailableError("disk full"));
  RunnerResult result = Run(Pages(3, 1), [](HookedSource& source) {
    source.before_get = [](int64_t page) {
      if (page == 2) std::this_thread::sleep_for(std::chrono::seconds(20));
    };
  });
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  ASSERT_TRUE(result.producer && result.consumer);
  EXPECT_EQ(ReturnStatusOf(result.consumer->error, Side::kConsumer),
            ReturnStatus::kDestinationError);
  EXPECT_EQ(ReturnStatusOf(result.producer->error, Side::kProducer), ReturnStatus::kKilledByRunner)
      << result.producer->error.ToString();
  EXPECT_NE(result.producer->error.message().find("signal"), std::string::npos)
      << result.producer->error.ToString();
  RunOutcome outcome = OutcomeOf(result, RunRole::kAll);
  EXPECT_FALSE(outcome.success);
  EXPECT_EQ(outcome.failure_class, FailureClass::kDestination);
  EXPECT_EQ(harness_.destination.Ids(), (std::vector<std::string>{"p0-0"}));
  EXPECT_EQ(harness_.RecordedPaginations(), (std::vector<std::string>{R"({"page":1})"}));
  EXPECT_NE(harness_.JobState(), JobStatus::kSucceeded);
}

TEST_F(ProcessRunnerTest, ASourceFailureInTheChildIsTheProducersWithItsOwnError) {
  RunnerResult result = Run(Pages(3, 2), [](HookedSource& source) {
    source.inner().FailAt(1, UnavailableError("page 1 is gone"));
  });
  harness_.ExpectTheSourceFailedAtPage1(result);
}

TEST_F(ProcessRunnerTest, TheChildsSourceIsAcknowledgedUpToTheLastRecordedCursor) {
  RunnerResult result = Run(Pages(3, 2));
  ASSERT_TRUE(result.consumer && result.consumer->ok()) << result.consumer->error.ToString();
  // Which earlier cursors the child commits before its fetches depends on timing; the last one
  // it commits once the consumer said the run succeeded.
  testing_support::ExpectAcknowledgedUpToTheLast(CommittedInTheChild(),
                                                 {R"({"page":1})", R"({"page":2})", "{}"});
}

TEST_F(ProcessRunnerTest, AFailedConsumerLetsTheChildAcknowledgeNothingPastIt) {
  harness_.destination.FailWriteNumber(0, UnavailableError("disk full"));
  RunnerResult result = Run(Pages(3, 2));
  ASSERT_TRUE(result.consumer);
  EXPECT_EQ(ReturnStatusOf(result.consumer->error, Side::kConsumer),
            ReturnStatus::kDestinationError);
  EXPECT_EQ(CommittedInTheChild(), std::vector<std::string>{});
}

}  // namespace
}  // namespace bizon
