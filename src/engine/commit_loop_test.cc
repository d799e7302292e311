// The commit loop's order (write, record the cursor, tell the destination, the runner's hook,
// acknowledge the source), where a failing step stops it and which class it carries, and what
// the recorded cursor holds.
#include "engine/commit_loop.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/runner/runner_test_support.h"

namespace bizon {
namespace {

using testing_support::MakeRecords;
using testing_support::Page;
using testing_support::RunnerHarness;
using testing_support::ValueOrDie;

class CommitLoopTest : public testing::Test {
 protected:
  /// Hooks that log each step: the cursor recorded through the backend, then "recorded", then
  /// "ack <pagination>".
  CommitLoop::Hooks LoggingHooks() {
    return {.record =
                [this](const DestinationCursor& cursor) {
                  steps_.push_back("record after " + std::to_string(writes_) + " write(s), " +
                                   std::to_string(told()) + " told");
                  if (!record_error_.ok()) return record_error_;
                  return harness_.backend().CreateDestinationCursor(cursor);
                },
            .recorded =
                [this](const DestinationCursor&) {
                  steps_.push_back("recorded, " + std::to_string(told()) + " told");
                },
            .acknowledge =
                [this](const Value& pagination) {
                  steps_.push_back("ack " + pagination.ToJson());
                  return ack_error_;
                }};
  }

  Status CommitPage(CommitLoop& loop, int64_t iteration, const Value& pagination, int rows = 2) {
    RecordBatch records = MakeRecords(rows);
    return loop.Commit({.from_iteration = iteration,
                        .to_iteration = iteration,
                        .rows = rows,
                        .pagination = pagination},
                       [&] {
                         ++writes_;
                         return harness_.destination.Write(records, 0);
                       });
  }

  std::optional<DestinationCursor> LastCursor() {
    return ValueOrDie(harness_.backend().GetLastDestinationCursor(harness_.plan.job.id));
  }
  size_t told() const { return harness_.destination.recorded_states().size(); }

  RunnerHarness harness_;
  std::vector<std::string> steps_;
  int writes_ = 0;
  Status record_error_;
  Status ack_error_;
};

TEST_F(CommitLoopTest, WritesRecordsTellsTheDestinationThenAcknowledges) {
  CommitLoop loop(harness_.backend(), harness_.destination, harness_.settings, harness_.plan,
                  LoggingHooks());
  Status committed = CommitPage(loop, 0, Page(1));
  ASSERT_TRUE(committed.ok()) << committed.ToString();
  EXPECT_EQ(steps_, (std::vector<std::string>{"record after 1 write(s), 0 told", "recorded, 1 told",
                                              R"(ack {"page":1})"}));
  std::optional<DestinationCursor> cursor = LastCursor();
  ASSERT_TRUE(cursor.has_value());
  EXPECT_EQ(cursor->pagination, R"({"page":1})");
  EXPECT_EQ(cursor->destination_state, R"({"rows":2})");
  EXPECT_EQ(cursor->rows_written, 2);
  EXPECT_EQ(loop.destination_state().ToJson(), R"({"rows":2})");
}

TEST_F(CommitLoopTest, AFailedWriteIsADestinationErrorAndRecordsNothing) {
  harness_.destination.FailWriteNumber(0, UnavailableError("disk full"));
  CommitLoop loop(harness_.backend(), harness_.destination, harness_.settings, harness_.plan,
                  LoggingHooks());
  Status committed = CommitPage(loop, 0, Page(1));
  EXPECT_EQ(committed.failure_class(), FailureClass::kDestination) << committed.ToString();
  EXPECT_EQ(steps_, std::vector<std::string>{});
  EXPECT_FALSE(LastCursor().has_value());
}

TEST_F(CommitLoopTest, AFailedRecordIsABackendErrorAndNothingAfterItRuns) {
  record_error_ = UnavailableError("database is locked");
  CommitLoop loop(harness_.backend(), harness_.destination, harness_.settings, harness_.plan,
                  LoggingHooks());
  Status committed = CommitPage(loop, 0, Page(1));
  EXPECT_EQ(committed.failure_class(), FailureClass::kBackend) << committed.ToString();
  EXPECT_EQ(steps_, std::vector<std::string>{"record after 1 write(s), 0 told"});
}

TEST_F(CommitLoopTest, AFailedOnCursorRecordedIsADestinationErrorAndIsNotAcknowledged) {
  harness_.destination.FailOnCursorRecorded(UnavailableError("commit refused"));
  CommitLoop loop(harness_.backend(), harness_.destination, harness_.settings, harness_.plan,
                  LoggingHooks());
  Status committed = CommitPage(loop, 0, Page(1));
  EXPECT_EQ(committed.failure_class(), FailureClass::kDestination) << committed.ToString();
  EXPECT_EQ(steps_, std::vector<std::string>{"record after 1 write(s), 0 told"});
  EXPECT_TRUE(LastCursor().has_value());  // Recorded first: a resume settles the state.
}

TEST_F(CommitLoopTest, AFailedAcknowledgementIsASourceError) {
  ack_error_ = UnavailableError("the group rebalanced");
  CommitLoop loop(harness_.backend(), harness_.destination, harness_.settings, harness_.plan,
                  LoggingHooks());
  Status committed = CommitPage(loop, 0, Page(1));
  EXPECT_EQ(committed.failure_class(), FailureClass::kSource) << committed.ToString();
  EXPECT_TRUE(LastCursor().has_value());
}

TEST_F(CommitLoopTest, AnExhaustedSourceRecordsNoPagination) {
  CommitLoop loop(harness_.backend(), harness_.destination, harness_.settings, harness_.plan, {});
  ASSERT_TRUE(CommitPage(loop, 0, Value::EmptyMap()).ok());
  EXPECT_EQ(LastCursor()->pagination, std::nullopt);
  Value last_page = Page(9);
  Status committed = loop.CommitEmpty(
      {.from_iteration = 1, .to_iteration = 1, .pagination = last_page, .source_exhausted = true});
  ASSERT_TRUE(committed.ok()) << committed.ToString();
  EXPECT_EQ(LastCursor()->pagination, std::nullopt);
}

TEST_F(CommitLoopTest, AnEmptyPageCarriesTheLastDurableState) {
  harness_.plan.destination_state = Value::EmptyMap();
  harness_.plan.destination_state.Set("rows", Value(5));
  CommitLoop loop(harness_.backend(), harness_.destination, harness_.settings, harness_.plan,
                  LoggingHooks());
  Value next = Page(4);
  ASSERT_TRUE(loop.CommitEmpty({.from_iteration = 3, .to_iteration = 3, .pagination = next}).ok());
  std::optional<DestinationCursor> cursor = LastCursor();
  ASSERT_TRUE(cursor.has_value());
  EXPECT_EQ(cursor->destination_state, R"({"rows":5})");
  EXPECT_EQ(cursor->rows_written, 0);
  EXPECT_EQ(cursor->pagination, R"({"page":4})");
  EXPECT_EQ(writes_, 0);
  EXPECT_EQ(steps_, (std::vector<std::string>{"record after 0 write(s), 0 told", "recorded, 1 told",
                                              R"(ack {"page":4})"}));
}

}  // namespace
}  // namespace bizon
