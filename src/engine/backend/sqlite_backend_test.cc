// SqliteBackend: what only the SQLite implementation has (migrations of a file, the Python
// bizon's tables, WAL, in-memory databases, open failures). The shared contract is in
// backend_conformance_test.cc.
#include "engine/backend/sqlite_backend.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bizon/backend.h"
#include "bizon/clock.h"
#include "bizon/status.h"
#include "engine/backend/backend_factory.h"
#include "engine/backend/backend_test_support.h"

namespace bizon {
namespace {

using testing_support::kKey;
using testing_support::SqliteExecute;
using testing_support::SqliteHarness;
using testing_support::SqliteQueryText;
using testing_support::ValueOrDie;

class SqliteBackendTest : public testing::Test {
 protected:
  StreamJob NewJob(const StreamKey& key = kKey, std::string_view sync_mode = "full_refresh") {
    return ValueOrDie(backend_->CreateStreamJob(key, sync_mode, std::nullopt, "1@host"));
  }
  DestinationCursor Cursor(const StreamJob& job, int64_t from, int64_t to, int64_t rows,
                           bool success) {
    return testing_support::MakeCursor(job, "file", from, to, rows, success);
  }

  std::unique_ptr<SqliteHarness> harness_ = std::make_unique<SqliteHarness>();
  std::unique_ptr<SqliteBackend>& backend_ = harness_->sqlite();
  const std::string& directory_ = harness_->directory();
  const std::string& path_ = harness_->path();
};

TEST_F(SqliteBackendTest, MigrateTwiceIsIdempotentAndRecordsTheVersion) {
  EXPECT_EQ(ValueOrDie(backend_->SchemaVersion()), SqliteBackend::LatestSchemaVersion());
  StreamJob job = NewJob();
  ASSERT_OK(backend_->Migrate());
  ASSERT_OK(backend_->Migrate());
  EXPECT_EQ(ValueOrDie(backend_->SchemaVersion()), SqliteBackend::LatestSchemaVersion());
  EXPECT_EQ(SqliteQueryText(path_, "SELECT COUNT(*) FROM bizon_schema_version"), "1");
  EXPECT_EQ(SqliteQueryText(path_, "SELECT version FROM bizon_schema_version"),
            std::to_string(SqliteBackend::LatestSchemaVersion()));
  EXPECT_TRUE(ValueOrDie(backend_->GetStreamJobById(job.id)).has_value());
}

TEST_F(SqliteBackendTest, UnmigratedDatabaseHasVersionZero) {
  auto fresh = ValueOrDie(SqliteBackend::Open(":memory:"));
  EXPECT_EQ(ValueOrDie(fresh->SchemaVersion()), 0);
}

TEST_F(SqliteBackendTest, NewerSchemaIsRefused) {
  SqliteExecute(path_, "UPDATE bizon_schema_version SET version = 999");
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
  EXPECT_EQ(SqliteQueryText(path, "SELECT version FROM bizon_schema_version"),
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
  EXPECT_EQ(SqliteQueryText(path, "SELECT version FROM bizon_schema_version"),
            std::to_string(SqliteBackend::LatestSchemaVersion()));
  auto backend = ValueOrDie(SqliteBackend::Open(path));
  EXPECT_TRUE(ValueOrDie(backend->CreateStreamJob(kKey, "full_refresh", std::nullopt, "parent"))
                  .id.size() == 32);
}

TEST_F(SqliteBackendTest, AdoptsADatabaseCreatedByThePythonBizon) {
  std::string path = directory_ + "/legacy.sqlite3";
  SqliteExecute(path,
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
  EXPECT_EQ(SqliteQueryText(path_, "PRAGMA journal_mode"), "wal");
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
Value SqliteBackendConfig(const std::string& database) {
  return ValueOrDie(
      Value::FromJson(R"({"type": "sqlite", "config": {"database": ")" + database + R"("}})"));
}

// The original opens `<database>.sqlite3` whatever `database` ends with; so does this binary now.
TEST_F(SqliteBackendTest, DatabaseFileIsAlwaysTheNameWithSqlite3Appended) {
  for (std::string name : {"plain", "state.db", "state.sqlite", "state.sqlite3"}) {
    Value config = SqliteBackendConfig(directory_ + "/" + name);
    EXPECT_EQ(SqliteFilePath(config), directory_ + "/" + name + ".sqlite3");
    auto opened = OpenBackend(config);
    ASSERT_TRUE(opened.has_value()) << opened.error().ToString();
    EXPECT_TRUE(std::filesystem::exists(directory_ + "/" + name + ".sqlite3")) << name;
  }
  EXPECT_FALSE(std::filesystem::exists(directory_ + "/state.db"));
}

// A file under the name an earlier version of this binary used, and none under the new one: the
// run refuses rather than start from no state.
TEST_F(SqliteBackendTest, EarlierFileNameIsRefusedUntilRenamed) {
  std::string earlier = directory_ + "/earlier.db";
  ValueOrDie(SqliteBackend::Open(earlier))->Migrate().IgnoreError();
  auto refused = OpenBackend(SqliteBackendConfig(earlier));
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.error().message().find(earlier + ", " + earlier + ".sqlite3"),
            std::string::npos)
      << refused.error().message();
  std::filesystem::rename(earlier, earlier + ".sqlite3");
  EXPECT_TRUE(OpenBackend(SqliteBackendConfig(earlier)).has_value());
}

// Version 3 tells our NULL paginations (exhausted) from the original's: rows of jobs this binary
// created (owner set) are backfilled, the original's (owner NULL) are left NULL.
TEST_F(SqliteBackendTest, MigrationThreeBackfillsOurCursorsOnly) {
  std::string path = directory_ + "/v2.sqlite3";
  {
    auto backend = ValueOrDie(SqliteBackend::Open(path));
    ASSERT_OK(backend->Migrate());
  }
  SqliteExecute(
      path,
      "ALTER TABLE destination_cursors DROP COLUMN source_exhausted;"
      "UPDATE bizon_schema_version SET version = 2;"
      "INSERT INTO stream_jobs (id, name, source_name, stream_name, sync_mode,"
      " created_at, status, owner) VALUES ('ours', 'p', 's', 't', 'stream',"
      " '2026-01-01 00:00:00.000000', 'running', '');"
      "INSERT INTO stream_jobs (id, name, source_name, stream_name, sync_mode,"
      " created_at, status) VALUES ('theirs', 'p', 's', 'u', 'stream',"
      " '2026-01-01 00:00:00.000000', 'running');"
      "INSERT INTO destination_cursors (id, job_id, name, source_name, stream_name,"
      " destination_name, from_source_iteration, to_source_iteration, rows_written,"
      " success, created_at) VALUES"
      " ('c1', 'ours', 'p', 's', 't', 'file', 0, 0, 1, 1, '2026-01-01 00:00:00.000000'),"
      " ('c2', 'theirs', 'p', 's', 'u', 'file', 0, 0, 1, 1, '2026-01-01 00:00:00.000000');");
  auto backend = ValueOrDie(SqliteBackend::Open(path));
  ASSERT_OK(backend->Migrate());
  EXPECT_EQ(
      SqliteQueryText(path, "SELECT source_exhausted FROM destination_cursors WHERE id = 'c1'"),
      "1");
  EXPECT_EQ(
      SqliteQueryText(path, "SELECT source_exhausted FROM destination_cursors WHERE id = 'c2'"),
      std::nullopt);
  EXPECT_FALSE(ValueOrDie(backend->GetLastDestinationCursor("ours"))->pagination.has_value());
  EXPECT_EQ(ValueOrDie(backend->GetLastDestinationCursor("theirs"))->pagination, "{}");
}

}  // namespace bizon
