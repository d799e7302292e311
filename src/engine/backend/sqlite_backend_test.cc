#include "engine/backend/sqlite_backend.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bizon/backend.h"
#include "bizon/clock.h"
#include "bizon/status.h"

namespace bizon {
namespace {

const StreamKey kKey{"pipeline", "dummy", "creatures"};
const StreamKey kOtherKey{"pipeline", "dummy", "plants"};

// Unwraps a Result in a test, failing it with the status text when there is no value.
template <typename T>
T ValueOrDie(Result<T> result) {
  EXPECT_TRUE(result.has_value()) << result.error().ToString();
  if (!result.has_value()) std::abort();
  return std::move(result).value();
}

#define ASSERT_OK(expr)                              \
  do {                                               \
    ::bizon::Status status_ = (expr);                \
    ASSERT_TRUE(status_.ok()) << status_.ToString(); \
  } while (false)

// Runs one SQL query through a separate raw connection and returns the first column of the first
// row as text: how the tests look at what was actually stored.
std::optional<std::string> QueryText(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  std::optional<std::string> value;
  if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL) {
    value = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

void ExecuteRaw(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
            SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error != nullptr ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

class SqliteBackendTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = testing::TempDir() + "/sqlite_backend_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
    path_ = directory_ + "/bizon.sqlite3";
    backend_ = ValueOrDie(SqliteBackend::Open(path_));
    ASSERT_OK(backend_->Migrate());
  }

  void TearDown() override {
    backend_.reset();
    std::error_code ignored;  // Leftover temporary files are harmless.
    std::filesystem::remove_all(directory_, ignored);
  }

  StreamJob NewJob(const StreamKey& key = kKey, std::string_view sync_mode = "full_refresh") {
    return ValueOrDie(backend_->CreateStreamJob(key, sync_mode, std::nullopt, "1@host"));
  }

  DestinationCursor Cursor(const StreamJob& job, int64_t from, int64_t to, int64_t rows,
                           bool success) {
    DestinationCursor cursor;
    cursor.job_id = job.id;
    cursor.key = job.key;
    cursor.destination_name = "file";
    cursor.from_source_iteration = from;
    cursor.to_source_iteration = to;
    cursor.rows_written = rows;
    cursor.success = success;
    cursor.pagination = R"({"cursor": )" + std::to_string(to + 1) + "}";
    return cursor;
  }

  std::string directory_;
  std::string path_;
  std::unique_ptr<SqliteBackend> backend_;
};

TEST_F(SqliteBackendTest, MigrateTwiceIsIdempotentAndRecordsTheVersion) {
  EXPECT_EQ(ValueOrDie(backend_->SchemaVersion()), SqliteBackend::LatestSchemaVersion());
  StreamJob job = NewJob();
  ASSERT_OK(backend_->Migrate());
  ASSERT_OK(backend_->Migrate());
  EXPECT_EQ(ValueOrDie(backend_->SchemaVersion()), SqliteBackend::LatestSchemaVersion());
  EXPECT_EQ(QueryText(path_, "SELECT COUNT(*) FROM bizon_schema_version"), "1");
  EXPECT_EQ(QueryText(path_, "SELECT version FROM bizon_schema_version"),
            std::to_string(SqliteBackend::LatestSchemaVersion()));
  EXPECT_TRUE(ValueOrDie(backend_->GetStreamJobById(job.id)).has_value());
}

TEST_F(SqliteBackendTest, UnmigratedDatabaseHasVersionZero) {
  auto fresh = ValueOrDie(SqliteBackend::Open(":memory:"));
  EXPECT_EQ(ValueOrDie(fresh->SchemaVersion()), 0);
}

TEST_F(SqliteBackendTest, NewerSchemaIsRefused) {
  ExecuteRaw(path_, "UPDATE bizon_schema_version SET version = 999");
  Status status = backend_->Migrate();
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.failure_class(), FailureClass::kBackend);
}

TEST_F(SqliteBackendTest, ConcurrentMigrationsApplyEachMigrationOnce) {
  std::string path = directory_ + "/concurrent.sqlite3";
  constexpr int kMigrators = 4;
  std::vector<Status> results(kMigrators);
  std::vector<std::thread> threads;
  for (int i = 0; i < kMigrators; ++i) {
    threads.emplace_back([&path, &results, i] {
      Result<std::unique_ptr<SqliteBackend>> backend = SqliteBackend::Open(path);
      results[i] = backend.has_value() ? (*backend)->Migrate() : backend.error();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(QueryText(path, "SELECT version FROM bizon_schema_version"),
            std::to_string(SqliteBackend::LatestSchemaVersion()));
}

TEST_F(SqliteBackendTest, ConcurrentMigrationsFromSeparateProcesses) {
  std::string path = directory_ + "/processes.sqlite3";
  constexpr int kProcesses = 4;
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // The child opens its own connection (none may cross a fork) and reports through its exit
      // code; _exit skips the parent's atexit handlers.
      Result<std::unique_ptr<SqliteBackend>> backend = SqliteBackend::Open(path);
      Status status = backend.has_value() ? (*backend)->Migrate() : backend.error();
      if (!status.ok()) std::fprintf(stderr, "child: %s\n", status.ToString().c_str());
      bool ok = status.ok();
      backend = Fail(InternalError("closed"));  // Close before exiting.
      _exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t child : children) {
    int wait_status = 0;
    ASSERT_EQ(waitpid(child, &wait_status, 0), child);
    EXPECT_TRUE(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0);
  }
  EXPECT_EQ(QueryText(path, "SELECT version FROM bizon_schema_version"),
            std::to_string(SqliteBackend::LatestSchemaVersion()));
  auto backend = ValueOrDie(SqliteBackend::Open(path));
  EXPECT_TRUE(ValueOrDie(backend->CreateStreamJob(kKey, "full_refresh", std::nullopt, "parent"))
                  .id.size() == 32);
}

TEST_F(SqliteBackendTest, AdoptsADatabaseCreatedByThePythonBizon) {
  std::string path = directory_ + "/legacy.sqlite3";
  ExecuteRaw(path,
             "CREATE TABLE stream_jobs (id VARCHAR(100) NOT NULL PRIMARY KEY, name VARCHAR(100)"
             " NOT NULL, source_name VARCHAR(100) NOT NULL, stream_name VARCHAR(100) NOT NULL,"
             " sync_mode VARCHAR(100) NOT NULL, attempt INTEGER, total_records_to_fetch INTEGER,"
             " created_at DATETIME NOT NULL, updated_at DATETIME, incremental_state TEXT,"
             " status VARCHAR(100), error_message VARCHAR(255));"
             "INSERT INTO stream_jobs VALUES ('legacy', 'pipeline', 'dummy', 'creatures',"
             " 'incremental', 0, NULL, '2024-05-01 10:00:00.000000', NULL, NULL, 'succeeded',"
             " NULL);");
  auto backend = ValueOrDie(SqliteBackend::Open(path));
  ASSERT_OK(backend->Migrate());
  std::optional<StreamJob> job = ValueOrDie(backend->GetLastSuccessfulStreamJob(kKey));
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->id, "legacy");
  EXPECT_EQ(job->created_at_us, ValueOrDie(ParseTimestamp("2024-05-01 10:00:00")));
  EXPECT_EQ(job->updated_at_us, job->created_at_us);
  EXPECT_EQ(job->owner, "");
}

TEST_F(SqliteBackendTest, CreateGetAndUpdateJobStatus) {
  int64_t before = NowMicros();
  StreamJob created =
      ValueOrDie(backend_->CreateStreamJob(kKey, "incremental", int64_t{42}, "123@host"));
  EXPECT_EQ(created.id.size(), 32u);
  EXPECT_EQ(created.status, JobStatus::kStarted);
  EXPECT_GE(created.created_at_us, before);

  std::optional<StreamJob> read = ValueOrDie(backend_->GetStreamJobById(created.id));
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->key.name, kKey.name);
  EXPECT_EQ(read->key.source_name, kKey.source_name);
  EXPECT_EQ(read->key.stream_name, kKey.stream_name);
  EXPECT_EQ(read->sync_mode, "incremental");
  EXPECT_EQ(read->total_records_to_fetch, 42);
  EXPECT_EQ(read->created_at_us, created.created_at_us);
  EXPECT_EQ(read->updated_at_us, created.created_at_us);
  EXPECT_EQ(read->status, JobStatus::kStarted);
  EXPECT_EQ(read->owner, "123@host");
  EXPECT_FALSE(read->error_message.has_value());
  EXPECT_FALSE(read->incremental_state.has_value());
  EXPECT_EQ(QueryText(path_, "SELECT status FROM stream_jobs"), "started");

  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_OK(backend_->UpdateStreamJobStatus(created.id, JobStatus::kFailed, "source down"));
  read = ValueOrDie(backend_->GetStreamJobById(created.id));
  EXPECT_EQ(read->status, JobStatus::kFailed);
  EXPECT_EQ(read->error_message, "source down");
  EXPECT_GT(read->updated_at_us, created.updated_at_us);
  EXPECT_EQ(read->created_at_us, created.created_at_us);

  ASSERT_OK(backend_->UpdateStreamJobStatus(created.id, JobStatus::kRunning, std::nullopt));
  read = ValueOrDie(backend_->GetStreamJobById(created.id));
  EXPECT_EQ(read->status, JobStatus::kRunning);
  EXPECT_FALSE(read->error_message.has_value());
  EXPECT_EQ(QueryText(path_, "SELECT status FROM stream_jobs"), "running");
}

TEST_F(SqliteBackendTest, UnknownJobIsNotFound) {
  EXPECT_FALSE(ValueOrDie(backend_->GetStreamJobById("missing")).has_value());
  Status status = backend_->UpdateStreamJobStatus("missing", JobStatus::kRunning, std::nullopt);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.failure_class(), FailureClass::kBackend);
  EXPECT_EQ(backend_->SetIncrementalState("missing", "{}").code(), StatusCode::kNotFound);
  EXPECT_EQ(backend_->SetJobOwner("missing", "1@host").code(), StatusCode::kNotFound);
}

TEST_F(SqliteBackendTest, RunningJobLookupPicksTheNewest) {
  EXPECT_FALSE(ValueOrDie(backend_->GetRunningStreamJob(kKey)).has_value());
  StreamJob older = NewJob();
  StreamJob newer = NewJob();
  StreamJob not_running = NewJob();
  // Mark the newer one first, so neither insertion nor update order explains the answer.
  ASSERT_OK(backend_->UpdateStreamJobStatus(newer.id, JobStatus::kRunning, std::nullopt));
  ASSERT_OK(backend_->UpdateStreamJobStatus(older.id, JobStatus::kRunning, std::nullopt));
  std::optional<StreamJob> running = ValueOrDie(backend_->GetRunningStreamJob(kKey));
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->id, newer.id);
  EXPECT_EQ(running->status, JobStatus::kRunning);

  ASSERT_OK(backend_->UpdateStreamJobStatus(newer.id, JobStatus::kCancelled, std::nullopt));
  running = ValueOrDie(backend_->GetRunningStreamJob(kKey));
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->id, older.id);
}

TEST_F(SqliteBackendTest, RunningJobTieOnCreatedAtGoesToTheLaterInsert) {
  StreamJob first = NewJob();
  StreamJob second = NewJob();
  ExecuteRaw(path_,
             "UPDATE stream_jobs SET created_at = '2026-01-01 00:00:00.000000',"
             " status = 'running'");
  EXPECT_EQ(ValueOrDie(backend_->GetRunningStreamJob(kKey))->id, second.id);
}

TEST_F(SqliteBackendTest, LastSuccessfulJobIsTheNewestByCreatedAt) {
  EXPECT_FALSE(ValueOrDie(backend_->GetLastSuccessfulStreamJob(kKey)).has_value());
  StreamJob older = NewJob();
  StreamJob newer = NewJob();
  StreamJob failed = NewJob();
  // The older job succeeds last: created_at, not updated_at, decides.
  ASSERT_OK(backend_->UpdateStreamJobStatus(newer.id, JobStatus::kSucceeded, std::nullopt));
  ASSERT_OK(backend_->UpdateStreamJobStatus(older.id, JobStatus::kSucceeded, std::nullopt));
  ASSERT_OK(backend_->UpdateStreamJobStatus(failed.id, JobStatus::kFailed, "boom"));
  std::optional<StreamJob> last = ValueOrDie(backend_->GetLastSuccessfulStreamJob(kKey));
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->id, newer.id);
  EXPECT_EQ(last->created_at_us, newer.created_at_us);
}

TEST_F(SqliteBackendTest, IncrementalStateAndOwnerRoundTrip) {
  StreamJob job = NewJob(kKey, "incremental");
  constexpr std::string_view kState = R"({"updated_since": "2026-01-01T00:00:00Z", "n": 3})";
  ASSERT_OK(backend_->SetIncrementalState(job.id, kState));
  ASSERT_OK(backend_->SetJobOwner(job.id, "999@other"));
  std::optional<StreamJob> read = ValueOrDie(backend_->GetStreamJobById(job.id));
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->incremental_state, kState);
  EXPECT_EQ(read->owner, "999@other");
}

TEST_F(SqliteBackendTest, SourceCursorIsInserted) {
  StreamJob job = NewJob();
  SourceCursorRow cursor{job.id, kKey, 3, 120, R"({"cursor": 4})"};
  ASSERT_OK(backend_->CreateSourceCursor(cursor));
  EXPECT_EQ(QueryText(path_, "SELECT COUNT(*) FROM source_cursors"), "1");
  EXPECT_EQ(QueryText(path_,
                      "SELECT job_id || '|' || name || '|' || source_name || '|' || stream_name"
                      " || '|' || iteration || '|' || rows_fetched || '|' || next_pagination"
                      " || '|' || status FROM source_cursors"),
            job.id + "|pipeline|dummy|creatures|3|120|{\"cursor\": 4}|pulling");

  SourceCursorRow orphan{"no-such-job", kKey, 0, 0, "{}"};
  Status status = backend_->CreateSourceCursor(orphan);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.failure_class(), FailureClass::kBackend);
}

TEST_F(SqliteBackendTest, LastDestinationCursorHasTheHighestSuccessfulIteration) {
  StreamJob job = NewJob();
  EXPECT_FALSE(ValueOrDie(backend_->GetLastDestinationCursor(job.id)).has_value());
  ASSERT_OK(backend_->CreateDestinationCursor(Cursor(job, 0, 1, 10, true)));
  ASSERT_OK(backend_->CreateDestinationCursor(Cursor(job, 4, 5, 0, false)));
  ASSERT_OK(backend_->CreateDestinationCursor(Cursor(job, 2, 3, 20, true)));
  ASSERT_OK(backend_->CreateDestinationCursor(Cursor(job, 6, 7, 0, false)));
  std::optional<DestinationCursor> last = ValueOrDie(backend_->GetLastDestinationCursor(job.id));
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->to_source_iteration, 3);
  EXPECT_EQ(last->from_source_iteration, 2);
  EXPECT_EQ(last->rows_written, 20);
  EXPECT_TRUE(last->success);
  EXPECT_EQ(last->pagination, R"({"cursor": 4})");
  EXPECT_EQ(last->job_id, job.id);
  EXPECT_EQ(last->key.stream_name, kKey.stream_name);
  EXPECT_EQ(last->destination_name, "file");
  EXPECT_EQ(last->id.size(), 32u);
  EXPECT_GT(last->created_at_us, 0);

  StreamJob other_job = NewJob();
  EXPECT_FALSE(ValueOrDie(backend_->GetLastDestinationCursor(other_job.id)).has_value());
}

TEST_F(SqliteBackendTest, EmptyPaginationIsStoredAsNullAndReadsBackAsNullopt) {
  for (std::optional<std::string> pagination :
       {std::optional<std::string>(), std::optional<std::string>(""),
        std::optional<std::string>("{}"), std::optional<std::string>(" { } "),
        std::optional<std::string>("null")}) {
    StreamJob job = NewJob();
    DestinationCursor cursor = Cursor(job, 0, 0, 5, true);
    cursor.pagination = pagination;
    ASSERT_OK(backend_->CreateDestinationCursor(cursor));
    std::optional<DestinationCursor> last = ValueOrDie(backend_->GetLastDestinationCursor(job.id));
    ASSERT_TRUE(last.has_value());
    EXPECT_FALSE(last->pagination.has_value()) << pagination.value_or("nullopt");
    EXPECT_EQ(QueryText(path_, "SELECT COUNT(*) FROM destination_cursors WHERE job_id = '" +
                                   job.id + "' AND pagination IS NULL"),
              "1");
  }
}

TEST_F(SqliteBackendTest, DestinationStateAndCallerChosenFieldsRoundTrip) {
  StreamJob job = NewJob();
  DestinationCursor cursor = Cursor(job, 0, 2, 30, true);
  cursor.id = "cursor-one";
  cursor.destination_state = R"({"file_length": 4096})";
  cursor.created_at_us = ValueOrDie(ParseTimestamp("2026-03-04 05:06:07.000008"));
  ASSERT_OK(backend_->CreateDestinationCursor(cursor));
  std::optional<DestinationCursor> last = ValueOrDie(backend_->GetLastDestinationCursor(job.id));
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->id, "cursor-one");
  EXPECT_EQ(last->destination_state, R"({"file_length": 4096})");
  EXPECT_EQ(last->created_at_us, cursor.created_at_us);
  EXPECT_EQ(QueryText(path_, "SELECT created_at FROM destination_cursors"),
            "2026-03-04 05:06:07.000008");

  StreamJob stateless_job = NewJob();
  ASSERT_OK(backend_->CreateDestinationCursor(Cursor(stateless_job, 0, 0, 1, true)));
  EXPECT_FALSE(ValueOrDie(backend_->GetLastDestinationCursor(stateless_job.id))
                   ->destination_state.has_value());
}

TEST_F(SqliteBackendTest, WrittenRowCountSumsSuccessfulCursorsOnly) {
  StreamJob job = NewJob();
  EXPECT_EQ(ValueOrDie(backend_->GetWrittenRowCount(job.id)), 0);
  ASSERT_OK(backend_->CreateDestinationCursor(Cursor(job, 0, 1, 10, true)));
  ASSERT_OK(backend_->CreateDestinationCursor(Cursor(job, 2, 3, 7, false)));
  ASSERT_OK(backend_->CreateDestinationCursor(Cursor(job, 2, 3, 25, true)));
  StreamJob other_job = NewJob();
  ASSERT_OK(backend_->CreateDestinationCursor(Cursor(other_job, 0, 0, 100, true)));
  EXPECT_EQ(ValueOrDie(backend_->GetWrittenRowCount(job.id)), 35);
}

TEST_F(SqliteBackendTest, PendingResetIsTheNewestRequest) {
  EXPECT_FALSE(ValueOrDie(backend_->GetPendingStreamReset(kKey)).has_value());
  StreamReset older = ValueOrDie(backend_->CreateStreamReset(kKey));
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  StreamReset newer = ValueOrDie(backend_->CreateStreamReset(kKey));
  EXPECT_GT(newer.requested_at_us, older.requested_at_us);
  std::optional<StreamReset> pending = ValueOrDie(backend_->GetPendingStreamReset(kKey));
  ASSERT_TRUE(pending.has_value());
  EXPECT_EQ(pending->id, newer.id);
  EXPECT_EQ(pending->requested_at_us, newer.requested_at_us);
  EXPECT_FALSE(pending->consumed_at_us.has_value());
  EXPECT_FALSE(pending->consumed_by_job_id.has_value());
}

TEST_F(SqliteBackendTest, ConsumedResetIsFoundByJobId) {
  StreamReset reset = ValueOrDie(backend_->CreateStreamReset(kKey));
  StreamJob job = NewJob();
  EXPECT_FALSE(ValueOrDie(backend_->GetStreamResetByJobId(job.id)).has_value());
  ASSERT_OK(backend_->ConsumeStreamReset(reset.id, job.id));
  EXPECT_FALSE(ValueOrDie(backend_->GetPendingStreamReset(kKey)).has_value());
  std::optional<StreamReset> consumed = ValueOrDie(backend_->GetStreamResetByJobId(job.id));
  ASSERT_TRUE(consumed.has_value());
  EXPECT_EQ(consumed->id, reset.id);
  EXPECT_EQ(consumed->consumed_by_job_id, job.id);
  ASSERT_TRUE(consumed->consumed_at_us.has_value());
  EXPECT_GE(*consumed->consumed_at_us, reset.requested_at_us);

  // A retry by the same job succeeds; another job lost the race; an unknown id is not found.
  ASSERT_OK(backend_->ConsumeStreamReset(reset.id, job.id));
  StreamJob other_job = NewJob();
  EXPECT_EQ(backend_->ConsumeStreamReset(reset.id, other_job.id).code(), StatusCode::kAborted);
  EXPECT_EQ(backend_->ConsumeStreamReset("missing", job.id).code(), StatusCode::kNotFound);
}

TEST_F(SqliteBackendTest, CancelRetiresPendingResetsAndLeavesConsumedOnes) {
  StreamReset consumed = ValueOrDie(backend_->CreateStreamReset(kKey));
  StreamJob job = NewJob();
  ASSERT_OK(backend_->ConsumeStreamReset(consumed.id, job.id));
  std::optional<StreamReset> before = ValueOrDie(backend_->GetStreamResetByJobId(job.id));
  ValueOrDie(backend_->CreateStreamReset(kKey));
  StreamReset pending = ValueOrDie(backend_->CreateStreamReset(kKey));

  EXPECT_EQ(ValueOrDie(backend_->CancelPendingStreamResets(kKey)), 2);
  EXPECT_FALSE(ValueOrDie(backend_->GetPendingStreamReset(kKey)).has_value());
  EXPECT_EQ(ValueOrDie(backend_->CancelPendingStreamResets(kKey)), 0);

  std::optional<StreamReset> after = ValueOrDie(backend_->GetStreamResetByJobId(job.id));
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->consumed_at_us, before->consumed_at_us);
  EXPECT_EQ(after->consumed_by_job_id, job.id);
  // Cancelled means consumed_at set and no job.
  EXPECT_EQ(QueryText(path_,
                      "SELECT COUNT(*) FROM stream_resets WHERE consumed_at IS NOT NULL"
                      " AND consumed_by_job_id IS NULL"),
            "2");
  EXPECT_EQ(backend_->ConsumeStreamReset(pending.id, job.id).code(), StatusCode::kAborted);
}

TEST_F(SqliteBackendTest, KeysIsolateStreams) {
  StreamReset reset = ValueOrDie(backend_->CreateStreamReset(kKey));
  EXPECT_FALSE(ValueOrDie(backend_->GetPendingStreamReset(kOtherKey)).has_value());
  EXPECT_EQ(ValueOrDie(backend_->CancelPendingStreamResets(kOtherKey)), 0);
  EXPECT_EQ(ValueOrDie(backend_->GetPendingStreamReset(kKey))->id, reset.id);
  EXPECT_FALSE(
      ValueOrDie(backend_->GetPendingStreamReset({"other", "dummy", "creatures"})).has_value());
  EXPECT_FALSE(
      ValueOrDie(backend_->GetPendingStreamReset({"pipeline", "other", "creatures"})).has_value());

  StreamJob job = NewJob(kKey);
  ASSERT_OK(backend_->UpdateStreamJobStatus(job.id, JobStatus::kRunning, std::nullopt));
  EXPECT_FALSE(ValueOrDie(backend_->GetRunningStreamJob(kOtherKey)).has_value());
  ASSERT_OK(backend_->UpdateStreamJobStatus(job.id, JobStatus::kSucceeded, std::nullopt));
  EXPECT_FALSE(ValueOrDie(backend_->GetLastSuccessfulStreamJob(kOtherKey)).has_value());
  EXPECT_TRUE(ValueOrDie(backend_->GetLastSuccessfulStreamJob(kKey)).has_value());
}

TEST_F(SqliteBackendTest, ReopenedFileDatabaseSeesTheRows) {
  StreamJob job = NewJob();
  ASSERT_OK(backend_->CreateDestinationCursor(Cursor(job, 0, 4, 50, true)));
  StreamReset reset = ValueOrDie(backend_->CreateStreamReset(kKey));

  // A second instance while the first is still open, then a fresh one after it closed.
  auto second = ValueOrDie(SqliteBackend::Open(path_));
  ASSERT_OK(second->Migrate());
  EXPECT_TRUE(ValueOrDie(second->GetStreamJobById(job.id)).has_value());
  ASSERT_OK(second->UpdateStreamJobStatus(job.id, JobStatus::kRunning, std::nullopt));
  EXPECT_EQ(ValueOrDie(backend_->GetRunningStreamJob(kKey))->id, job.id);

  backend_.reset();
  second.reset();
  auto reopened = ValueOrDie(SqliteBackend::Open(path_));
  EXPECT_EQ(ValueOrDie(reopened->GetRunningStreamJob(kKey))->id, job.id);
  EXPECT_EQ(ValueOrDie(reopened->GetLastDestinationCursor(job.id))->to_source_iteration, 4);
  EXPECT_EQ(ValueOrDie(reopened->GetPendingStreamReset(kKey))->id, reset.id);
  EXPECT_EQ(QueryText(path_, "PRAGMA journal_mode"), "wal");
}

TEST_F(SqliteBackendTest, PrivateInMemoryDatabasesAreSeparate) {
  auto first = ValueOrDie(SqliteBackend::Open(":memory:"));
  auto second = ValueOrDie(SqliteBackend::Open(":memory:"));
  ASSERT_OK(first->Migrate());
  ASSERT_OK(second->Migrate());
  StreamJob job = ValueOrDie(first->CreateStreamJob(kKey, "full_refresh", std::nullopt, ""));
  EXPECT_TRUE(ValueOrDie(first->GetStreamJobById(job.id)).has_value());
  EXPECT_FALSE(ValueOrDie(second->GetStreamJobById(job.id)).has_value());
}

TEST_F(SqliteBackendTest, SharedInMemoryInstancesSeeEachOthersRows) {
  std::string name = "bizon test/" + NewUuidHex();  // Needs URI escaping.
  auto first = ValueOrDie(SqliteBackend::OpenSharedInMemory(name));
  auto second = ValueOrDie(SqliteBackend::OpenSharedInMemory(name));
  auto unrelated = ValueOrDie(SqliteBackend::OpenSharedInMemory(name + "-other"));
  ASSERT_OK(first->Migrate());
  ASSERT_OK(second->Migrate());
  EXPECT_EQ(ValueOrDie(second->SchemaVersion()), SqliteBackend::LatestSchemaVersion());
  EXPECT_EQ(ValueOrDie(unrelated->SchemaVersion()), 0);

  StreamJob job = ValueOrDie(first->CreateStreamJob(kKey, "full_refresh", std::nullopt, ""));
  ASSERT_OK(second->UpdateStreamJobStatus(job.id, JobStatus::kRunning, std::nullopt));
  EXPECT_EQ(ValueOrDie(first->GetRunningStreamJob(kKey))->id, job.id);
  ASSERT_OK(second->CreateDestinationCursor(Cursor(job, 0, 0, 3, true)));
  EXPECT_EQ(ValueOrDie(first->GetWrittenRowCount(job.id)), 3);
}

TEST_F(SqliteBackendTest, SharedInMemoryWritersInThreadsWaitForEachOther) {
  std::string name = "concurrent-" + NewUuidHex();
  auto keeper = ValueOrDie(SqliteBackend::OpenSharedInMemory(name));
  ASSERT_OK(keeper->Migrate());
  StreamJob job = ValueOrDie(keeper->CreateStreamJob(kKey, "full_refresh", std::nullopt, ""));
  constexpr int kWriters = 4;
  constexpr int kCursorsPerWriter = 50;
  std::vector<Status> results(kWriters);
  std::vector<std::thread> threads;
  for (int i = 0; i < kWriters; ++i) {
    threads.emplace_back([&, i] {
      Result<std::unique_ptr<SqliteBackend>> backend = SqliteBackend::OpenSharedInMemory(name);
      if (!backend.has_value()) {
        results[i] = backend.error();
        return;
      }
      for (int n = 0; n < kCursorsPerWriter && results[i].ok(); ++n) {
        results[i] = (*backend)->CreateDestinationCursor(Cursor(job, n, n, 1, true));
        if (!results[i].ok()) break;
        // Readers conflict with the other writers too.
        Result<int64_t> count = (*backend)->GetWrittenRowCount(job.id);
        if (!count.has_value()) results[i] = count.error();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(ValueOrDie(keeper->GetWrittenRowCount(job.id)), kWriters * kCursorsPerWriter);
}

TEST_F(SqliteBackendTest, OpenFailuresAreBackendErrors) {
  Result<std::unique_ptr<SqliteBackend>> missing_directory =
      SqliteBackend::Open(directory_ + "/no/such/dir/bizon.sqlite3");
  ASSERT_FALSE(missing_directory.has_value());
  EXPECT_EQ(missing_directory.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(missing_directory.error().failure_class(), FailureClass::kBackend);

  std::string garbage = directory_ + "/garbage.sqlite3";
  {
    std::FILE* file = std::fopen(garbage.c_str(), "wb");
    ASSERT_NE(file, nullptr);
    std::string text(8192, 'x');
    std::fwrite(text.data(), 1, text.size(), file);
    std::fclose(file);
  }
  Result<std::unique_ptr<SqliteBackend>> corrupt = SqliteBackend::Open(garbage);
  Status status = corrupt.has_value() ? (*corrupt)->Migrate() : corrupt.error();
  EXPECT_EQ(status.code(), StatusCode::kDataLoss) << status.ToString();
  EXPECT_EQ(status.failure_class(), FailureClass::kBackend);

  EXPECT_FALSE(SqliteBackend::Open("").has_value());
  EXPECT_FALSE(SqliteBackend::OpenSharedInMemory("").has_value());
}

TEST(JobStatusTest, RoundTripsTheOriginalNames) {
  for (JobStatus status : {JobStatus::kStarted, JobStatus::kRunning, JobStatus::kFailed,
                           JobStatus::kCancelled, JobStatus::kSucceeded}) {
    EXPECT_EQ(ParseJobStatus(ToString(status)), status);
  }
  EXPECT_EQ(ToString(JobStatus::kCancelled), "cancelled");
  EXPECT_EQ(ToString(JobStatus::kSucceeded), "succeeded");
  EXPECT_FALSE(ParseJobStatus("RUNNING").has_value());
}

}  // namespace
}  // namespace bizon
