// MakeRunner's choice of runner, and AcknowledgeLast: what every in-process runner does with the
// last recorded cursor once its producer has ended. The broker runner itself needs a kafka or
// rabbitmq server (tests/e2e/test_queue_brokers.py); only its selection is tested here.
#include "engine/runner/runner.h"

#include <gtest/gtest.h>

#include <string>
#include <typeinfo>

#include "engine/runner/runner_test_support.h"

namespace bizon {
namespace {

using testing_support::InMemorySource;
using testing_support::Jsons;
using testing_support::Page;

std::string RunnerName(RunnerKind kind, bool through_broker) {
  std::unique_ptr<Runner> runner = MakeRunner(kind, through_broker);
  const Runner& chosen = *runner;
  std::string name = typeid(chosen).name();
  for (const char* known : {"ThreadRunner", "ProcessRunner", "StreamRunner", "BrokerRunner"}) {
    if (name.find(known) != std::string::npos) return known;
  }
  return name;
}

TEST(MakeRunnerTest, ChoosesTheRunnerByKindAndQueue) {
  EXPECT_EQ(RunnerName(RunnerKind::kThread, false), "ThreadRunner");
  EXPECT_EQ(RunnerName(RunnerKind::kProcess, false), "ProcessRunner");
  EXPECT_EQ(RunnerName(RunnerKind::kStream, false), "StreamRunner");
  EXPECT_EQ(RunnerName(RunnerKind::kThread, true), "BrokerRunner");
  EXPECT_EQ(RunnerName(RunnerKind::kProcess, true), "BrokerRunner");
  // The stream runner has no queue to put a broker in.
  EXPECT_EQ(RunnerName(RunnerKind::kStream, true), "StreamRunner");
}

TEST(RunRoleTest, ParsesWhatItPrints) {
  for (RunRole role : {RunRole::kAll, RunRole::kProducer, RunRole::kConsumer}) {
    EXPECT_EQ(ParseRunRole(ToString(role)), role);
  }
  EXPECT_EQ(ParseRunRole("both"), std::nullopt);
}

class AcknowledgeLastTest : public testing::Test {
 protected:
  InMemorySource source_{{}};
  Acknowledgements acks_;
  PipelineSettings settings_;
};

TEST_F(AcknowledgeLastTest, CommitsTheLatestRecordedPaginationOnce) {
  acks_.Post(Page(1));
  acks_.Post(Page(2));
  AcknowledgeLast(source_, acks_, settings_, {});
  EXPECT_EQ(Jsons(source_.committed()), std::vector<std::string>{R"({"page":2})"});
  AcknowledgeLast(source_, acks_, settings_, {});
  EXPECT_EQ(source_.commits(), 1);
}

TEST_F(AcknowledgeLastTest, CommitsNothingAfterAFailedConsumer) {
  acks_.Post(Page(1));
  AcknowledgeLast(source_, acks_, settings_, {.error = UnavailableError("disk full")});
  EXPECT_EQ(source_.commits(), 0);
}

TEST_F(AcknowledgeLastTest, CommitsNothingWhenNothingWasRecorded) {
  AcknowledgeLast(source_, acks_, settings_, {});
  EXPECT_EQ(source_.commits(), 0);
}

}  // namespace
}  // namespace bizon
