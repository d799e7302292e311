// PostgresBackend against a real server (the one `scripts/test-servers.sh start postgres` runs):
// what only the PostgreSQL implementation has (schemas, concurrent migrations, the Python
// bizon's tables, the advisory run lock, reconnects). Without a server every test is skipped,
// saying so. The shared contract is in backend_conformance_test.cc.
#include "engine/backend/postgres_backend.h"

#include <fmt/format.h>
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
#include "engine/backend/backend_test_support.h"
#include "postgres/postgres_client.h"
#include "testing/test_servers.h"

namespace bizon {
namespace {

using testing_support::kKey;
using testing_support::kOtherKey;
using testing_support::PostgresHarness;
using testing_support::ValueOrDie;

class PostgresBackendTest : public testing::Test {
 protected:
  void SetUp() override {
    if (std::string reason = harness_->SkipReason(); !reason.empty()) BIZON_SKIP_OR_FAIL(reason);
  }

  std::string Table(std::string_view name) const { return harness_->Table(name); }
  std::optional<std::string> QueryText(const std::string& sql) { return harness_->QueryText(sql); }
  void ExecuteRaw(const std::string& sql) { harness_->ExecuteRaw(sql); }
  StreamJob NewJob(const StreamKey& key = kKey, std::string_view sync_mode = "full_refresh") {
    return ValueOrDie(backend_->CreateStreamJob(key, sync_mode, std::nullopt, "1@host"));
  }
  DestinationCursor Cursor(const StreamJob& job, int64_t from, int64_t to, int64_t rows,
                           bool success) {
    return testing_support::MakeCursor(job, "postgres", from, to, rows, success);
  }

  std::unique_ptr<PostgresHarness> harness_ = std::make_unique<PostgresHarness>();
  std::unique_ptr<PostgresBackend>& backend_ = harness_->postgres();
  const PgConnectionSettings& settings_ = harness_->settings();
  const std::string& schema_ = harness_->schema();
  PgConnection* admin_ = harness_->admin();
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

TEST_F(PostgresBackendTest, ASessionCutInsideATransactionNamesTheServer) {
  auto own = ValueOrDie(PgConnection::Connect(settings_, FailureClass::kDestination));
  ASSERT_TRUE(own->Execute("BEGIN", "begin").has_value());
  std::string pid(ValueOrDie(own->Execute("SELECT pg_backend_pid()", "read the pid")).Text(0, 0));
  ASSERT_TRUE(
      admin_
          ->Query("SELECT pg_terminate_backend($1::int)", "terminate the session", std::stoll(pid))
          .has_value());
  // Inside a transaction nothing is resent: the statement fails, and its message says which
  // server went away (the server's own text, "terminating connection due to administrator
  // command", does not).
  auto failed = own->Execute("SELECT 1", "load rows");
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(failed.error().failure_class(), FailureClass::kDestination);
  std::string expected = fmt::format("the PostgreSQL server at {}:{}/{} is unavailable",
                                     settings_.host, settings_.port, settings_.database);
  EXPECT_NE(failed.error().message().find(expected), std::string::npos) << failed.error().message();
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
/// Opens the backend with the connection's search path set to `search_path`, a quoted identifier
/// (through PGOPTIONS, which libpq reads as psycopg2 does for the original).
std::unique_ptr<PostgresBackend> OpenWithSearchPath(const PgConnectionSettings& settings,
                                                    const std::string& schema,
                                                    const std::string& search_path) {
  std::string escaped;
  for (char c : search_path) {
    if (c == ' ' || c == '\\') escaped.push_back('\\');
    escaped.push_back(c);
  }
  setenv("PGOPTIONS", ("-c search_path=" + escaped).c_str(), 1);
  auto backend = PostgresBackend::Open(settings, schema);
  unsetenv("PGOPTIONS");
  return ValueOrDie(std::move(backend));
}

/// The original's DDL (SQLAlchemy's, for bizon 0.6.4) of stream_jobs and destination_cursors.
void CreateOriginalTables(PgConnection& admin, const std::string& quoted) {
  ASSERT_OK(admin.Run(
      "CREATE TABLE " + quoted +
          ".stream_jobs (id VARCHAR(100) NOT NULL PRIMARY KEY, name VARCHAR(100) NOT NULL,"
          " source_name VARCHAR(100) NOT NULL, stream_name VARCHAR(100) NOT NULL, sync_mode"
          " VARCHAR(100) NOT NULL, attempt INTEGER, total_records_to_fetch INTEGER, created_at"
          " TIMESTAMP WITHOUT TIME ZONE NOT NULL, updated_at TIMESTAMP WITHOUT TIME ZONE,"
          " incremental_state VARCHAR, status VARCHAR(100), error_message VARCHAR(255))",
      "create the original's stream_jobs"));
  ASSERT_OK(admin.Run(
      "CREATE TABLE " + quoted +
          ".destination_cursors (id VARCHAR(100) NOT NULL PRIMARY KEY, job_id VARCHAR(100)"
          " REFERENCES " +
          quoted +
          ".stream_jobs (id), name VARCHAR(100) NOT NULL, source_name VARCHAR(100) NOT NULL,"
          " stream_name VARCHAR(100) NOT NULL, destination_name VARCHAR(100) NOT NULL,"
          " from_source_iteration INTEGER, to_source_iteration INTEGER, rows_written INTEGER,"
          " success BOOLEAN NOT NULL, attempt INTEGER, error_message VARCHAR(500), created_at"
          " TIMESTAMP WITHOUT TIME ZONE, updated_at TIMESTAMP WITHOUT TIME ZONE, pagination"
          " VARCHAR)",
      "create the original's destination_cursors"));
}

// The original keeps its tables in the search path whatever `schema` says. With only those
// there, they are the store: this binary continues the original's state and writes where the
// original reads.
TEST_F(PostgresBackendTest, OriginalTablesInTheSearchPathAreTheStore) {
  std::string path = schema_ + " path";
  std::string quoted_path = admin_->QuoteIdentifier(path);
  std::string configured = schema_ + " configured";
  ExecuteRaw("CREATE SCHEMA " + quoted_path);
  CreateOriginalTables(*admin_, quoted_path);
  ExecuteRaw("INSERT INTO " + quoted_path +
             ".stream_jobs VALUES ('original', 'pipeline', 'dummy', 'creatures', 'incremental', 0,"
             " NULL, '2024-05-01 10:00:00.000000', NULL, '{\"seen\": 5}', 'succeeded', NULL)");
  auto backend = OpenWithSearchPath(settings_, configured, quoted_path);
  ASSERT_OK(backend->Migrate());
  std::optional<StreamJob> job = ValueOrDie(backend->GetLastSuccessfulStreamJob(kKey));
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->id, "original");
  EXPECT_EQ(job->incremental_state, R"({"seen": 5})");
  StreamJob ours = ValueOrDie(backend->CreateStreamJob(kKey, "incremental", std::nullopt, "1@h"));
  // Our messages are longer than the original's VARCHAR(255).
  ASSERT_OK(backend->UpdateStreamJobStatus(ours.id, JobStatus::kFailed, std::string(300, 'x')));
  EXPECT_EQ(QueryText("SELECT count(*) FROM " + quoted_path + ".stream_jobs"), "2");
  EXPECT_EQ(QueryText("SELECT count(*) FROM pg_namespace WHERE nspname = '" + configured + "'"),
            "0");
  backend.reset();
  admin_->Run("DROP SCHEMA " + quoted_path + " CASCADE", "drop").IgnoreError();
}

// A fresh store goes to the configured schema, and the original (which would look in its search
// path) reads and writes it through views there.
TEST_F(PostgresBackendTest, FreshStoreIsReadableByTheOriginalThroughViews) {
  std::string path = schema_ + " path";
  std::string quoted_path = admin_->QuoteIdentifier(path);
  std::string configured = schema_ + " configured";
  std::string quoted_configured = admin_->QuoteIdentifier(configured);
  ExecuteRaw("CREATE SCHEMA " + quoted_path);
  auto backend = OpenWithSearchPath(settings_, configured, quoted_path);
  ASSERT_OK(backend->Migrate());
  ASSERT_OK(backend->Migrate());  // Idempotent, views included.
  for (std::string table :
       {"stream_jobs", "source_cursors", "destination_cursors", "stream_resets"}) {
    EXPECT_EQ(QueryText("SELECT c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid ="
                        " c.relnamespace WHERE n.nspname = '" +
                        path + "' AND c.relname = '" + table + "'"),
              "v")
        << table;
  }
  StreamJob ours = ValueOrDie(backend->CreateStreamJob(kKey, "incremental", std::nullopt, "1@h"));
  EXPECT_EQ(
      QueryText("SELECT status FROM " + quoted_path + ".stream_jobs WHERE id = '" + ours.id + "'"),
      "started");
  // What the original's ORM inserts: its columns only.
  ExecuteRaw("INSERT INTO " + quoted_path +
             ".stream_jobs (id, name, source_name, stream_name, sync_mode, attempt, created_at,"
             " status) VALUES ('original', 'pipeline', 'dummy', 'creatures', 'incremental', 0,"
             " '2099-01-01 00:00:00', 'running')");
  std::optional<StreamJob> running = ValueOrDie(backend->GetRunningStreamJob(kKey));
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->id, "original");
  EXPECT_EQ(QueryText("SELECT count(*) FROM " + quoted_configured + ".stream_jobs"), "2");
  backend.reset();
  admin_->Run("DROP SCHEMA " + quoted_configured + " CASCADE", "drop").IgnoreError();
  admin_->Run("DROP SCHEMA " + quoted_path + " CASCADE", "drop").IgnoreError();
}

}  // namespace bizon
