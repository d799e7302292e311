// Shared by the runner tests: a started job in a SQLite backend in a temporary directory (its
// config, so that a runner's producer can open its own connection), the in-memory destination,
// and a source over fixed pages that can run a hook before each fetch and log its commits to a
// file (a forked producer's commits are only visible that way).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend/backend_test_support.h"
#include "engine/runner/outcome.h"
#include "engine/runner/runner.h"
#include "testing/in_memory_connectors.h"

namespace bizon::testing_support {

/// `count` pages of `per_page` records each, ids "p<page>-<n>".
inline std::vector<RecordBatch> Pages(int count, int per_page) {
  std::vector<RecordBatch> pages;
  for (int page = 0; page < count; ++page) {
    pages.push_back(MakeRecords(per_page, "p" + std::to_string(page) + "-"));
  }
  return pages;
}

/// An InMemorySource that runs `before_get` with the page asked for before each fetch, and
/// appends each committed pagination to `commit_log` (one JSON document a line) when set.
class HookedSource final : public Source {
 public:
  explicit HookedSource(std::vector<RecordBatch> pages) : inner_(std::move(pages)) {}

  std::function<void(int64_t page)> before_get;
  std::string commit_log;

  Result<SourceIteration> Get(const Value& pagination) override {
    if (before_get) before_get(pagination.is_map() ? pagination.GetInteger("page", 0) : 0);
    return inner_.Get(pagination);
  }
  Status Commit(const Value& up_to) override {
    if (!commit_log.empty()) std::ofstream(commit_log, std::ios::app) << up_to.ToJson() << "\n";
    return inner_.Commit(up_to);
  }
  InMemorySource& inner() { return inner_; }

 private:
  InMemorySource inner_;
};

/// The JSON of each pagination, in order.
inline std::vector<std::string> Jsons(const std::vector<Value>& values) {
  std::vector<std::string> jsons;
  for (const Value& value : values) jsons.push_back(value.ToJson());
  return jsons;
}

/// `committed` ends with the last of `recorded` and takes the rest from it in order: a source is
/// never acknowledged past, or back before, a recorded cursor.
inline void ExpectAcknowledgedUpToTheLast(const std::vector<std::string>& committed,
                                          const std::vector<std::string>& recorded) {
  ASSERT_FALSE(committed.empty());
  EXPECT_EQ(committed.back(), recorded.back());
  auto next = recorded.begin();
  for (const std::string& pagination : committed) {
    next = std::find(next, recorded.end(), pagination);
    ASSERT_NE(next, recorded.end()) << pagination << " was not recorded, or out of order";
  }
}

/// A running full-refresh job in a fresh SQLite file, the settings that name that file as the
/// backend, and an in-memory destination: what every runner test starts from.
class RunnerHarness {
 public:
  RunnerHarness() {
    settings.key = kKey;
    settings.destination_name = "memory";
    settings.sync_mode = SyncMode::kFullRefresh;
    std::string database = sqlite.path().substr(0, sqlite.path().size() - sizeof ".sqlite3" + 1);
    settings.backend_config = Value::EmptyMap();
    settings.backend_config.Set("type", Value("sqlite"));
    Value config = Value::EmptyMap();
    config.Set("database", Value(database));
    settings.backend_config.Set("config", std::move(config));
    plan.job = ValueOrDie(backend().CreateStreamJob(kKey, "full_refresh", std::nullopt, "me@h"));
    EXPECT_TRUE(
        backend().UpdateStreamJobStatus(plan.job.id, JobStatus::kRunning, std::nullopt).ok());
  }

  Backend& backend() { return sqlite.backend(); }
  RunContext Context(Source& source) {
    return {.source = source,
            .destination = destination,
            .backend = backend(),
            .settings = settings,
            .plan = plan};
  }
  JobStatus JobState() { return ValueOrDie(backend().GetStreamJobById(plan.job.id))->status; }
  /// The recorded cursors' paginations in order ("null" once the source is exhausted).
  std::vector<std::string> RecordedPaginations() {
    std::string joined =
        sqlite
            .QueryText(
                "SELECT group_concat(p, ' ') FROM (SELECT coalesce(pagination, 'null') AS p "
                "FROM destination_cursors WHERE job_id = '" +
                plan.job.id + "' ORDER BY from_source_iteration, created_at)")
            .value_or("");
    std::vector<std::string> paginations;
    std::istringstream words(joined);
    for (std::string word; words >> word;) paginations.push_back(word);
    return paginations;
  }

  /// Both sides succeeded on Pages(3, 2): six records, a cursor per page, the job succeeded.
  void ExpectThreePagesOfTwoLanded(const RunnerResult& result) {
    ASSERT_TRUE(result.producer && result.consumer);
    EXPECT_TRUE(result.producer->error.ok()) << result.producer->error.ToString();
    EXPECT_TRUE(result.consumer->ok()) << result.consumer->error.ToString();
    EXPECT_TRUE(OutcomeOf(result, RunRole::kAll).success);
    EXPECT_EQ(destination.Ids(),
              (std::vector<std::string>{"p0-0", "p0-1", "p1-0", "p1-1", "p2-0", "p2-1"}));
    EXPECT_EQ(RecordedPaginations(),
              (std::vector<std::string>{R"({"page":1})", R"({"page":2})", "null"}));
    EXPECT_EQ(JobState(), JobStatus::kSucceeded);
  }

  /// After a source that fails with "page 1 is gone" on the second of its pages of two records:
  /// the producer's failure, a source error, mirrored by the consumer; the first page kept.
  void ExpectTheSourceFailedAtPage1(const RunnerResult& result) {
    ASSERT_TRUE(result.producer && result.consumer);
    EXPECT_EQ(ReturnStatusOf(result.producer->error, Side::kProducer), ReturnStatus::kSourceError);
    EXPECT_NE(result.producer->error.message().find("page 1 is gone"), std::string::npos)
        << result.producer->error.ToString();
    EXPECT_TRUE(result.consumer->upstream);
    RunOutcome outcome = OutcomeOf(result, RunRole::kAll);
    EXPECT_FALSE(outcome.success);
    EXPECT_EQ(outcome.failure_class, FailureClass::kSource);
    EXPECT_EQ(destination.Ids(), (std::vector<std::string>{"p0-0", "p0-1"}));
    EXPECT_EQ(RecordedPaginations(), (std::vector<std::string>{R"({"page":1})"}));
  }

  SqliteHarness sqlite;
  InMemoryDestination destination;
  PipelineSettings settings;
  JobPlan plan;
};

}  // namespace bizon::testing_support
