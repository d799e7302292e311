// PostgresBackend against a real server: the one `scripts/test-servers.sh start postgres` runs,
// found through BIZON_PG_HOST, BIZON_PG_PORT, BIZON_PG_USER, BIZON_PG_PASSWORD and
// BIZON_PG_DATABASE. Without them every test is skipped, saying so. Each test works in a schema
// of its own, dropped at the end.
#include "engine/backend/postgres_backend.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bizon/backend.h"
#include "bizon/clock.h"
#include "bizon/status.h"
#include "connectors/destinations/postgres/postgres_client.h"

namespace bizon {
namespace {

const StreamKey kKey{"pipeline", "dummy", "creatures"};
const StreamKey kOtherKey{"pipeline", "dummy", "plants"};

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

/// The test server's settings, or nullopt when the environment names none.
std::optional<PgConnectionSettings> TestServer() {
  const char* host = std::getenv("BIZON_PG_HOST");
  const char* database = std::getenv("BIZON_PG_DATABASE");
  if (host == nullptr || database == nullptr) return std::nullopt;
  PgConnectionSettings settings;
  settings.host = host;
  settings.database = database;
  if (const char* port = std::getenv("BIZON_PG_PORT")) settings.port = std::atoll(port);
  if (const char* user = std::getenv("BIZON_PG_USER")) settings.user = user;
  if (const char* password = std::getenv("BIZON_PG_PASSWORD")) settings.password = password;
  return settings;
}

class PostgresBackendTest : public testing::Test {
 protected:
  void SetUp() override {
    std::optional<PgConnectionSettings> server = TestServer();
    if (!server) {
      GTEST_SKIP() << "no PostgreSQL test server: run `eval \"$(scripts/test-servers.sh start "
                      "postgres)\"` first";
    }
    settings_ = *server;
    // Upper case, a space and a quote: every statement must quote the schema.
    schema_ = "Bizon Test \"" + NewUuidHex().substr(0, 12);
    admin_ = ValueOrDie(PgConnection::Connect(settings_, FailureClass::kBackend));
    backend_ = ValueOrDie(PostgresBackend::Open(settings_, schema_));
    ASSERT_OK(backend_->Migrate());
  }

  void TearDown() override {
    backend_.reset();
    if (admin_ != nullptr) {
      // Ignored: a leftover schema only costs space on the test server.
      admin_
          ->Run("DROP SCHEMA IF EXISTS " + admin_->QuoteIdentifier(schema_) + " CASCADE",
                "drop the test schema")
          .IgnoreError();
    }
  }

  std::string Table(std::string_view name) const {
    return admin_->QuoteIdentifier(schema_) + "." + std::string(name);
  }

  /// The first column of the first row, as text (nullopt for NULL or no row).
  std::optional<std::string> QueryText(const std::string& sql) {
    auto result = admin_->Execute(sql, "run a test query");
    EXPECT_TRUE(result.has_value()) << result.error().ToString();
    if (!result || result->rows() == 0) return std::nullopt;
    return result->OptionalText(0, 0);
  }

  void ExecuteRaw(const std::string& sql) {
    auto result = admin_->Execute(sql, "run a test statement");
    ASSERT_TRUE(result.has_value()) << result.error().ToString();
  }

  StreamJob NewJob(const StreamKey& key = kKey, std::string_view sync_mode = "full_refresh") {
    return ValueOrDie(backend_->CreateStreamJob(key, sync_mode, std::nullopt, "1@host"));
  }

  DestinationCursor Cursor(const StreamJob& job, int64_t from, int64_t to, int64_t rows,
                           bool success) {
    DestinationCursor cursor;
    cursor.job_id = job.id;
    cursor.key = job.key;
    cursor.destination_name = "postgres";
    cursor.from_source_iteration = from;
    cursor.to_source_iteration = to;
    cursor.rows_written = rows;
    cursor.success = success;
    cursor.pagination = R"({"cursor": )" + std::to_string(to + 1) + "}";
    return cursor;
  }

  PgConnectionSettings settings_;
  std::string schema_;
  std::unique_ptr<PgConnection> admin_;
  std::unique_ptr<PostgresBackend> backend_;
};

TEST_F(PostgresBackendTest, MigrateCreatesTheSchemaAndIsIdempotent) {
  auto schemas = ValueOrDie(admin_->Query("SELECT count(*) FROM pg_namespace WHERE nspname = $1",
                                          "look up the schema", schema_));
  EXPECT_EQ(schemas.Int64(0, 0), 1);
  EXPECT_EQ(ValueOrDie(backend_->SchemaVersion()), PostgresBackend::LatestSchemaVersion());
  StreamJob job = NewJob();
  ASSERT_OK(backend_->Migrate());
  ASSERT_OK(backend_->Migrate());
  EXPECT_EQ(QueryText("SELECT count(*) FROM " + Table("bizon_schema_version")), "1");
  EXPECT_EQ(QueryText("SELECT version FROM " + Table("bizon_schema_version")),
            std::to_string(PostgresBackend::LatestSchemaVersion()));
  EXPECT_TRUE(ValueOrDie(backend_->GetStreamJobById(job.id)).has_value());
  // The rows are in the configured schema (the original wrote to public).
  EXPECT_EQ(QueryText("SELECT id FROM " + Table("stream_jobs")), job.id);
}

TEST_F(PostgresBackendTest, UnmigratedSchemaHasVersionZero) {
  auto fresh = ValueOrDie(PostgresBackend::Open(settings_, schema_ + " never migrated"));
  EXPECT_EQ(ValueOrDie(fresh->SchemaVersion()), 0);
}

TEST_F(PostgresBackendTest, NewerSchemaIsRefused) {
  ExecuteRaw("UPDATE " + Table("bizon_schema_version") + " SET version = 999");
  Status status = backend_->Migrate();
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.failure_class(), FailureClass::kBackend);
}

TEST_F(PostgresBackendTest, ConcurrentMigrationsFromSeparateProcessesApplyEachOnce) {
  std::string schema = schema_ + " concurrent";
  constexpr int kProcesses = 6;
  std::vector<pid_t> children;
  std::fflush(nullptr);
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Its own connection (none may cross a fork); reports through the exit code.
      Status status;
      {
        auto backend = PostgresBackend::Open(settings_, schema);
        status = backend.has_value() ? (*backend)->Migrate() : backend.error();
      }
      if (!status.ok()) std::fprintf(stderr, "child: %s\n", status.ToString().c_str());
      _exit(status.ok() ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t child : children) {
    int wait_status = 0;
    ASSERT_EQ(waitpid(child, &wait_status, 0), child);
    EXPECT_TRUE(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0);
  }
  std::string table = admin_->QuoteIdentifier(schema) + ".bizon_schema_version";
  EXPECT_EQ(QueryText("SELECT version FROM " + table),
            std::to_string(PostgresBackend::LatestSchemaVersion()));
  admin_->Run("DROP SCHEMA " + admin_->QuoteIdentifier(schema) + " CASCADE", "drop").IgnoreError();
}

TEST_F(PostgresBackendTest, AdoptsTablesCreatedByThePythonBizon) {
  std::string schema = schema_ + " legacy";
  std::string quoted = admin_->QuoteIdentifier(schema);
  ExecuteRaw("CREATE SCHEMA " + quoted);
  ExecuteRaw("CREATE TABLE " + quoted +
             ".stream_jobs (id VARCHAR(100) NOT NULL PRIMARY KEY, name VARCHAR(100) NOT NULL,"
             " source_name VARCHAR(100) NOT NULL, stream_name VARCHAR(100) NOT NULL,"
             " sync_mode VARCHAR(100) NOT NULL, attempt INTEGER, total_records_to_fetch INTEGER,"
             " created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, updated_at TIMESTAMP WITHOUT"
             " TIME ZONE, incremental_state TEXT, status VARCHAR(100), error_message"
             " VARCHAR(255))");
  ExecuteRaw("INSERT INTO " + quoted +
             ".stream_jobs VALUES ('legacy', 'pipeline', 'dummy', 'creatures', 'incremental', 0,"
             " NULL, '2024-05-01 10:00:00.000000', NULL, NULL, 'succeeded', NULL)");
  auto backend = ValueOrDie(PostgresBackend::Open(settings_, schema));
  ASSERT_OK(backend->Migrate());
  std::optional<StreamJob> job = ValueOrDie(backend->GetLastSuccessfulStreamJob(kKey));
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->id, "legacy");
  EXPECT_EQ(job->created_at_us, ValueOrDie(ParseTimestamp("2024-05-01 10:00:00")));
  EXPECT_EQ(job->updated_at_us, job->created_at_us);
  EXPECT_EQ(job->owner, "");
  backend.reset();
  admin_->Run("DROP SCHEMA " + quoted + " CASCADE", "drop").IgnoreError();
}

TEST_F(PostgresBackendTest, CreateGetAndUpdateJobStatus) {
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
  EXPECT_EQ(read->created_at_us, created.created_at_us);  // Exact to the microsecond.
  EXPECT_EQ(read->updated_at_us, created.created_at_us);
  EXPECT_EQ(read->status, JobStatus::kStarted);
  EXPECT_EQ(read->owner, "123@host");
  EXPECT_FALSE(read->error_message.has_value());
  EXPECT_FALSE(read->incremental_state.has_value());
  EXPECT_EQ(QueryText("SELECT status FROM " + Table("stream_jobs")), "started");

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
}

TEST_F(PostgresBackendTest, UnknownJobIsNotFound) {
  EXPECT_FALSE(ValueOrDie(backend_->GetStreamJobById("missing")).has_value());
  Status status = backend_->UpdateStreamJobStatus("missing", JobStatus::kRunning, std::nullopt);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.failure_class(), FailureClass::kBackend);
  EXPECT_EQ(backend_->SetIncrementalState("missing", "{}").code(), StatusCode::kNotFound);
  EXPECT_EQ(backend_->SetJobOwner("missing", "1@host").code(), StatusCode::kNotFound);
}

TEST_F(PostgresBackendTest, RunningJobLookupPicksTheNewest) {
  EXPECT_FALSE(ValueOrDie(backend_->GetRunningStreamJob(kKey)).has_value());
  StreamJob older = NewJob();
  StreamJob newer = NewJob();
  StreamJob not_running = NewJob();
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

TEST_F(PostgresBackendTest, RunningJobTieOnCreatedAtGoesToTheLaterInsert) {
  StreamJob first = NewJob();
  StreamJob second = NewJob();
  ExecuteRaw("UPDATE " + Table("stream_jobs") +
             " SET created_at = '2026-01-01 00:00:00', status = 'running'");
  EXPECT_EQ(ValueOrDie(backend_->GetRunningStreamJob(kKey))->id, second.id);
}

TEST_F(PostgresBackendTest, LastSuccessfulJobIsTheNewestByCreatedAt) {
  EXPECT_FALSE(ValueOrDie(backend_->GetLastSuccessfulStreamJob(kKey)).has_value());
  StreamJob older = NewJob();
  StreamJob newer = NewJob();
  StreamJob failed = NewJob();
  ASSERT_OK(backend_->UpdateStreamJobStatus(newer.id, JobStatus::kSucceeded, std::nullopt));
  ASSERT_OK(backend_->UpdateStreamJobStatus(older.id, JobStatus::kSucceeded, std::nullopt));
  ASSERT_OK(backend_->UpdateStreamJobStatus(failed.id, JobStatus::kFailed, "boom"));
  std::optional<StreamJob> last = ValueOrDie(backend_->GetLastSuccessfulStreamJob(kKey));
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->id, newer.id);
  EXPECT_EQ(last->created_at_us, newer.created_at_us);
}

TEST_F(PostgresBackendTest, IncrementalStateAndOwnerRoundTrip) {
  StreamJob job = NewJob(kKey, "incremental");
  constexpr std::string_view kState = R"({"updated_since": "2026-01-01T00:00:00Z", "n": 3})";
  ASSERT_OK(backend_->SetIncrementalState(job.id, kState));
  ASSERT_OK(backend_->SetJobOwner(job.id, "999@other"));
  std::optional<StreamJob> read = ValueOrDie(backend_->GetStreamJobById(job.id));
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->incremental_state, kState);
  EXPECT_EQ(read->owner, "999@other");
}

TEST_F(PostgresBackendTest, SourceCursorIsInserted) {
  StreamJob job = NewJob();
  SourceCursorRow cursor{job.id, kKey, 3, 120, R"({"cursor": 4})"};
  ASSERT_OK(backend_->CreateSourceCursor(cursor));
  EXPECT_EQ(QueryText("SELECT job_id || '|' || name || '|' || source_name || '|' || stream_name"
                      " || '|' || iteration || '|' || rows_fetched || '|' || next_pagination"
                      " || '|' || status FROM " +
                      Table("source_cursors")),
            job.id + "|pipeline|dummy|creatures|3|120|{\"cursor\": 4}|pulling");

  SourceCursorRow orphan{"no-such-job", kKey, 0, 0, "{}"};
  Status status = backend_->CreateSourceCursor(orphan);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.failure_class(), FailureClass::kBackend);
}

TEST_F(PostgresBackendTest, LastDestinationCursorHasTheHighestSuccessfulIteration) {
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
  EXPECT_EQ(last->destination_name, "postgres");
  EXPECT_EQ(last->id.size(), 32u);
  EXPECT_GT(last->created_at_us, 0);
}

TEST_F(PostgresBackendTest, EmptyPaginationIsStoredAsNullAndReadsBackAsNullopt) {
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
    EXPECT_EQ(QueryText("SELECT count(*) FROM " + Table("destination_cursors") +
                        " WHERE job_id = '" + job.id + "' AND pagination IS NULL"),
              "1");
  }
}

TEST_F(PostgresBackendTest, DestinationStateAndCallerChosenFieldsRoundTrip) {
  StreamJob job = NewJob();
  DestinationCursor cursor = Cursor(job, 0, 2, 30, true);
  cursor.id = "cursor-one";
  cursor.destination_state = R"({"load_id": 4096})";
  cursor.created_at_us = ValueOrDie(ParseTimestamp("2026-03-04 05:06:07.000008"));
  ASSERT_OK(backend_->CreateDestinationCursor(cursor));
  std::optional<DestinationCursor> last = ValueOrDie(backend_->GetLastDestinationCursor(job.id));
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->id, "cursor-one");
  EXPECT_EQ(last->destination_state, R"({"load_id": 4096})");
  EXPECT_EQ(last->created_at_us, cursor.created_at_us);
  EXPECT_EQ(QueryText("SELECT created_at::text FROM " + Table("destination_cursors")),
            "2026-03-04 05:06:07.000008");
}

TEST_F(PostgresBackendTest, WrittenRowCountSumsSuccessfulCursorsOnly) {
  StreamJob job = NewJob();
  EXPECT_EQ(ValueOrDie(backend_->GetWrittenRowCount(job.id)), 0);
  ASSERT_OK(backend_->CreateDestinationCursor(Cursor(job, 0, 1, 10, true)));
  ASSERT_OK(backend_->CreateDestinationCursor(Cursor(job, 2, 3, 7, false)));
  ASSERT_OK(backend_->CreateDestinationCursor(Cursor(job, 2, 3, 25, true)));
  StreamJob other_job = NewJob();
  ASSERT_OK(backend_->CreateDestinationCursor(Cursor(other_job, 0, 0, 100, true)));
  EXPECT_EQ(ValueOrDie(backend_->GetWrittenRowCount(job.id)), 35);
}

TEST_F(PostgresBackendTest, ResetsArePendingConsumedAndCancelled) {
  EXPECT_FALSE(ValueOrDie(backend_->GetPendingStreamReset(kKey)).has_value());
  StreamReset older = ValueOrDie(backend_->CreateStreamReset(kKey));
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  StreamReset newer = ValueOrDie(backend_->CreateStreamReset(kKey));
  EXPECT_EQ(ValueOrDie(backend_->GetPendingStreamReset(kKey))->id, newer.id);
  EXPECT_FALSE(ValueOrDie(backend_->GetPendingStreamReset(kOtherKey)).has_value());

  StreamJob job = NewJob();
  ASSERT_OK(backend_->ConsumeStreamReset(newer.id, job.id));
  ASSERT_OK(backend_->ConsumeStreamReset(newer.id, job.id));  // A retry by the same job.
  StreamJob other_job = NewJob();
  EXPECT_EQ(backend_->ConsumeStreamReset(newer.id, other_job.id).code(), StatusCode::kAborted);
  EXPECT_EQ(backend_->ConsumeStreamReset("missing", job.id).code(), StatusCode::kNotFound);
  std::optional<StreamReset> consumed = ValueOrDie(backend_->GetStreamResetByJobId(job.id));
  ASSERT_TRUE(consumed.has_value());
  EXPECT_EQ(consumed->id, newer.id);
  EXPECT_EQ(consumed->consumed_by_job_id, job.id);
  ASSERT_TRUE(consumed->consumed_at_us.has_value());
  EXPECT_GE(*consumed->consumed_at_us, newer.requested_at_us);
  EXPECT_EQ(consumed->requested_at_us, newer.requested_at_us);

  EXPECT_EQ(ValueOrDie(backend_->GetPendingStreamReset(kKey))->id, older.id);
  ValueOrDie(backend_->CreateStreamReset(kKey));
  EXPECT_EQ(ValueOrDie(backend_->CancelPendingStreamResets(kKey)), 2);
  EXPECT_EQ(ValueOrDie(backend_->CancelPendingStreamResets(kKey)), 0);
  EXPECT_FALSE(ValueOrDie(backend_->GetPendingStreamReset(kKey)).has_value());
  EXPECT_EQ(QueryText("SELECT count(*) FROM " + Table("stream_resets") +
                      " WHERE consumed_at IS NOT NULL AND consumed_by_job_id IS NULL"),
            "2");
  EXPECT_EQ(backend_->ConsumeStreamReset(older.id, job.id).code(), StatusCode::kAborted);
}

TEST_F(PostgresBackendTest, RunLockRefusesASecondRunAndIsReleasedWithTheBackend) {
  ASSERT_OK(backend_->AcquireRunLock(kKey));
  ASSERT_OK(backend_->AcquireRunLock(kKey));  // Idempotent on the holder.
  auto second = ValueOrDie(PostgresBackend::Open(settings_, schema_));
  Status refused = second->AcquireRunLock(kKey);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.failure_class(), FailureClass::kBackend);
  EXPECT_NE(refused.message().find("another run of pipeline 'pipeline' (dummy.creatures) is in "
                                   "progress"),
            std::string::npos)
      << refused.message();
  EXPECT_NE(refused.message().find("server process"), std::string::npos) << refused.message();
  // Another stream of the same pipeline, and the same stream in another schema, run freely.
  ASSERT_OK(second->AcquireRunLock(kOtherKey));
  auto elsewhere = ValueOrDie(PostgresBackend::Open(settings_, schema_ + " elsewhere"));
  ASSERT_OK(elsewhere->AcquireRunLock(kKey));

  backend_.reset();  // Disconnecting releases the session lock, once the server notices.
  Status status;
  for (int attempt = 0; attempt < 100; ++attempt) {
    status = second->AcquireRunLock(kKey);
    if (status.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST_F(PostgresBackendTest, RunLockOfAKilledProcessIsReleased) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  std::fflush(nullptr);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto backend = PostgresBackend::Open(settings_, schema_);
    bool locked = backend.has_value() && (*backend)->AcquireRunLock(kKey).ok();
    char byte = locked ? 'y' : 'n';
    (void)!write(ready[1], &byte, 1);
    pause();  // Until SIGKILL: no destructor runs, as with an OOM kill.
    _exit(0);
  }
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  ASSERT_EQ(byte, 'y');
  EXPECT_EQ(backend_->AcquireRunLock(kKey).code(), StatusCode::kFailedPrecondition);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  // The server notices the closed socket at once; allow it a moment.
  Status status;
  for (int attempt = 0; attempt < 100; ++attempt) {
    status = backend_->AcquireRunLock(kKey);
    if (status.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(status.ok()) << status.ToString();
  close(ready[0]);
  close(ready[1]);
}

TEST_F(PostgresBackendTest, ALostConnectionIsReopenedTheCallResentAndTheLockTakenAgain) {
  ASSERT_OK(backend_->AcquireRunLock(kKey));
  StreamJob job = NewJob();
  // Cut the backend's session from the server side, as a restart does: the session holding
  // this test's run lock (the key PostgresBackend derives from schema and stream).
  auto key =
      static_cast<uint64_t>(AdvisoryLockKey("bizon.run\x1f" + schema_ + "\x1f" + kKey.name +
                                            "\x1f" + kKey.source_name + "\x1f" + kKey.stream_name));
  ASSERT_TRUE(admin_
                  ->Query("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE"
                          " locktype = 'advisory' AND classid = $1::bigint::oid"
                          " AND objid = $2::bigint::oid AND objsubid = 1",
                          "terminate the backend session",
                          int64_t{static_cast<uint32_t>(key >> 32)},
                          int64_t{static_cast<uint32_t>(key)})
                  .has_value());
  // The update meets the dead session, reconnects, takes the run lock again and is resent.
  ASSERT_OK(backend_->UpdateStreamJobStatus(job.id, JobStatus::kFailed, "server restarted"));
  EXPECT_EQ(ValueOrDie(backend_->GetStreamJobById(job.id))->error_message, "server restarted");
  auto second = ValueOrDie(PostgresBackend::Open(settings_, schema_));
  EXPECT_EQ(second->AcquireRunLock(kKey).code(), StatusCode::kFailedPrecondition);

  // Inserts are keyed by a client-chosen id, so a resend can never insert a row twice; a
  // duplicate id outside a resend is an error.
  DestinationCursor cursor = Cursor(job, 0, 0, 5, true);
  cursor.id = "cursor-one";
  ASSERT_OK(backend_->CreateDestinationCursor(cursor));
  EXPECT_EQ(backend_->CreateDestinationCursor(cursor).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ValueOrDie(backend_->GetWrittenRowCount(job.id)), 5);
}

TEST_F(PostgresBackendTest, UnreachableServerIsUnavailable) {
  PgConnectionSettings nowhere = settings_;
  nowhere.host = "127.0.0.1";
  nowhere.port = 1;  // Nothing listens there.
  auto opened = PostgresBackend::Open(nowhere, schema_);
  ASSERT_FALSE(opened.has_value());
  EXPECT_EQ(opened.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(opened.error().failure_class(), FailureClass::kBackend);

  PgConnectionSettings wrong_password = settings_;
  wrong_password.password = "definitely-not-the-password";
  auto refused = PostgresBackend::Open(wrong_password, schema_);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.error().message().find("definitely-not-the-password"), std::string::npos);
}

}  // namespace
}  // namespace bizon
