// The stream runner's one loop against the in-memory source and destination and a SQLite
// backend: each page is written, recorded and committed before the next fetch; SIGTERM stops it
// after the batch in hand; a failure keeps its side's class.
#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <vector>

#include "engine/runner/runner_test_support.h"

namespace bizon {
namespace {

using testing_support::HookedSource;
using testing_support::InMemorySource;
using testing_support::Jsons;
using testing_support::Pages;
using testing_support::RunnerHarness;

class StreamRunnerTest : public testing::Test {
 protected:
  Status Run(Source& source) {
    RunnerResult result = MakeStreamRunner()->Run(harness_.Context(source));
    EXPECT_FALSE(result.producer.has_value());
    EXPECT_FALSE(result.consumer.has_value());
    EXPECT_TRUE(result.stream.has_value());
    return result.stream.value_or(InternalError("no stream result"));
  }

  RunnerHarness harness_;
};

TEST_F(StreamRunnerTest, EachPageIsWrittenRecordedAndCommittedBeforeTheNextFetch) {
  HookedSource source(Pages(3, 2));
  std::vector<size_t> commits_before_get;
  source.before_get = [&](int64_t) { commits_before_get.push_back(source.inner().commits()); };
  Status result = Run(source);
  EXPECT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(harness_.destination.Ids(),
            (std::vector<std::string>{"p0-0", "p0-1", "p1-0", "p1-1", "p2-0", "p2-1"}));
  EXPECT_EQ(harness_.RecordedPaginations(),
            (std::vector<std::string>{R"({"page":1})", R"({"page":2})", "null"}));
  EXPECT_EQ(Jsons(source.inner().committed()),
            (std::vector<std::string>{R"({"page":1})", R"({"page":2})", "{}"}));
  EXPECT_EQ(commits_before_get, (std::vector<size_t>{0, 1, 2}));
}

TEST_F(StreamRunnerTest, SigtermStopsAfterTheBatchInHandWithItRecordedAndCommitted) {
  HookedSource source(Pages(5, 2));
  source.before_get = [](int64_t page) {
    if (page == 1) std::raise(SIGTERM);
  };
  Status result = Run(source);
  EXPECT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(source.inner().requested(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(harness_.destination.Ids(), (std::vector<std::string>{"p0-0", "p0-1", "p1-0", "p1-1"}));
  EXPECT_EQ(harness_.RecordedPaginations(),
            (std::vector<std::string>{R"({"page":1})", R"({"page":2})"}));
  EXPECT_EQ(Jsons(source.inner().committed()),
            (std::vector<std::string>{R"({"page":1})", R"({"page":2})"}));
  // The job stays running: the next run resumes it.
  EXPECT_EQ(harness_.JobState(), JobStatus::kRunning);
}

TEST_F(StreamRunnerTest, ASourceFailureIsAStreamSourceErrorAfterWhatWasCommitted) {
  InMemorySource source(Pages(3, 2));
  source.FailAt(1, UnavailableError("page 1 is gone"));
  Status result = Run(source);
  EXPECT_EQ(ReturnStatusOf(result, Side::kStream), ReturnStatus::kSourceError) << result.ToString();
  EXPECT_EQ(result.failure_class(), FailureClass::kSource);
  EXPECT_EQ(harness_.destination.Ids(), (std::vector<std::string>{"p0-0", "p0-1"}));
  EXPECT_EQ(harness_.RecordedPaginations(), (std::vector<std::string>{R"({"page":1})"}));
  EXPECT_EQ(Jsons(source.committed()), (std::vector<std::string>{R"({"page":1})"}));
}

TEST_F(StreamRunnerTest, ADestinationFailureIsAStreamDestinationErrorAndIsNotAcknowledged) {
  InMemorySource source(Pages(3, 2));
  harness_.destination.FailWriteNumber(1, UnavailableError("disk full"));
  Status result = Run(source);
  EXPECT_EQ(ReturnStatusOf(result, Side::kStream), ReturnStatus::kDestinationError)
      << result.ToString();
  EXPECT_EQ(result.failure_class(), FailureClass::kDestination);
  EXPECT_EQ(harness_.destination.Ids(), (std::vector<std::string>{"p0-0", "p0-1"}));
  EXPECT_EQ(harness_.RecordedPaginations(), (std::vector<std::string>{R"({"page":1})"}));
  EXPECT_EQ(Jsons(source.committed()), (std::vector<std::string>{R"({"page":1})"}));
  EXPECT_FALSE(OutcomeOf({.stream = result}, RunRole::kAll).success);
}

}  // namespace
}  // namespace bizon
