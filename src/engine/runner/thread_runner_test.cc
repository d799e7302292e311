// The thread runner against the in-memory source and destination and a SQLite backend in a
// temporary directory: records flow and the job succeeds, a failed consumer stops the producer,
// each side's failure keeps its class, and the source is acknowledged up to what was recorded.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "engine/runner/runner_test_support.h"

namespace bizon {
namespace {

using testing_support::HookedSource;
using testing_support::InMemorySource;
using testing_support::Jsons;
using testing_support::Pages;
using testing_support::RunnerHarness;

class ThreadRunnerTest : public testing::Test {
 protected:
  RunnerResult Run(Source& source) { return MakeThreadRunner()->Run(harness_.Context(source)); }

  RunnerHarness harness_;
};

TEST_F(ThreadRunnerTest, RecordsFlowToTheDestinationAndTheJobSucceeds) {
  InMemorySource source(Pages(3, 2));
  RunnerResult result = Run(source);
  EXPECT_FALSE(result.stream.has_value());
  harness_.ExpectThreePagesOfTwoLanded(result);
}

TEST_F(ThreadRunnerTest, AFailedConsumerStopsTheProducerAndKeepsWhatWasRecorded) {
  // Enough slow pages that a producer nobody stops outlives the consumer by seconds.
  HookedSource source(Pages(2000, 1));
  source.before_get = [](int64_t page) {
    if (page >= 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  harness_.destination.FailWriteNumber(1, UnavailableError("disk full"));
  RunnerResult result = Run(source);
  ASSERT_TRUE(result.producer && result.consumer);
  EXPECT_EQ(ReturnStatusOf(result.consumer->error, Side::kConsumer),
            ReturnStatus::kDestinationError);
  EXPECT_FALSE(result.consumer->upstream);
  EXPECT_EQ(ReturnStatusOf(result.producer->error, Side::kProducer), ReturnStatus::kKilledByRunner)
      << result.producer->error.ToString();
  EXPECT_LT(source.inner().requested().size(), 1000u);
  RunOutcome outcome = OutcomeOf(result, RunRole::kAll);
  EXPECT_FALSE(outcome.success);
  EXPECT_EQ(outcome.failure_class, FailureClass::kDestination);
  EXPECT_EQ(harness_.destination.Ids(), (std::vector<std::string>{"p0-0"}));
  EXPECT_EQ(harness_.RecordedPaginations(), (std::vector<std::string>{R"({"page":1})"}));
  EXPECT_NE(harness_.JobState(), JobStatus::kSucceeded);
  // Nothing past the failed write is acknowledged.
  for (const std::string& committed : Jsons(source.inner().committed())) {
    EXPECT_EQ(committed, R"({"page":1})");
  }
}

TEST_F(ThreadRunnerTest, ASourceFailureIsTheProducersAndTheConsumerEndsWithIt) {
  InMemorySource source(Pages(3, 2));
  source.FailAt(1, UnavailableError("page 1 is gone"));
  RunnerResult result = Run(source);
  harness_.ExpectTheSourceFailedAtPage1(result);
  EXPECT_NE(harness_.JobState(), JobStatus::kSucceeded);
}

TEST_F(ThreadRunnerTest, TheSourceIsAcknowledgedUpToTheLastRecordedCursor) {
  InMemorySource source(Pages(3, 2));
  RunnerResult result = Run(source);
  ASSERT_TRUE(result.consumer && result.consumer->ok()) << result.consumer->error.ToString();
  // The producer commits what was recorded before each fetch (how much depends on timing); the
  // runner commits the last cursor once the producer has ended.
  testing_support::ExpectAcknowledgedUpToTheLast(Jsons(source.committed()),
                                                 {R"({"page":1})", R"({"page":2})", "{}"});
}

}  // namespace
}  // namespace bizon
