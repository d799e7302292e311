#include "engine/backend/sqlite_backend.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>

#include "bizon/clock.h"
#include "engine/backend/backend_support.h"
#include "engine/backend/original_state.h"
#include "engine/backend/stored_pagination.h"

namespace bizon {
namespace {

// How long a writer waits for another connection to release the database before the call fails
// with kUnavailable. Long, because a slow flush in another process is not an error.
constexpr int kBusyTimeoutMs = 30'000;

// ---------------------------------------------------------------------------------------------
// Migrations.
//
// kMigrations[i] takes the schema from version i to version i + 1. Append new migrations; never
// edit or reorder applied ones, since databases in the field already recorded their effect.
// Each migration runs in its own transaction together with the version bump.

// Version 1: the four tables of the original bizon, with its column names. IF NOT EXISTS lets a
// database created by the Python bizon (which has these tables but no version table) be adopted.
constexpr std::string_view kMigration1[] = {
    R"sql(CREATE TABLE IF NOT EXISTS stream_jobs (
      id TEXT NOT NULL PRIMARY KEY,
      name TEXT NOT NULL,
      source_name TEXT NOT NULL,
      stream_name TEXT NOT NULL,
      sync_mode TEXT NOT NULL,
      attempt INTEGER DEFAULT 0,
      total_records_to_fetch INTEGER,
      created_at TEXT NOT NULL,
      updated_at TEXT,
      incremental_state TEXT,
      status TEXT DEFAULT 'started',
      error_message TEXT))sql",
    R"sql(CREATE TABLE IF NOT EXISTS source_cursors (
      id TEXT NOT NULL PRIMARY KEY,
      job_id TEXT NOT NULL REFERENCES stream_jobs (id),
      name TEXT NOT NULL,
      source_name TEXT NOT NULL,
      stream_name TEXT NOT NULL,
      iteration INTEGER NOT NULL,
      rows_fetched INTEGER NOT NULL,
      next_pagination TEXT,
      attempt INTEGER DEFAULT 0,
      status TEXT DEFAULT 'pulling',
      error_message TEXT,
      created_at TEXT NOT NULL,
      updated_at TEXT))sql",
    R"sql(CREATE TABLE IF NOT EXISTS destination_cursors (
      id TEXT NOT NULL PRIMARY KEY,
      job_id TEXT NOT NULL REFERENCES stream_jobs (id),
      name TEXT NOT NULL,
      source_name TEXT NOT NULL,
      stream_name TEXT NOT NULL,
      destination_name TEXT NOT NULL,
      from_source_iteration INTEGER NOT NULL,
      to_source_iteration INTEGER NOT NULL,
      rows_written INTEGER NOT NULL,
      success INTEGER NOT NULL CHECK (success IN (0, 1)),
      attempt INTEGER DEFAULT 0,
      error_message TEXT,
      created_at TEXT NOT NULL,
      updated_at TEXT,
      pagination TEXT))sql",
    R"sql(CREATE TABLE IF NOT EXISTS stream_resets (
      id TEXT NOT NULL PRIMARY KEY,
      name TEXT NOT NULL,
      source_name TEXT NOT NULL,
      stream_name TEXT NOT NULL,
      requested_at TEXT NOT NULL,
      consumed_at TEXT,
      consumed_by_job_id TEXT))sql",
};

// Version 2: what this implementation adds to the original schema, and the indexes behind its
// lookups (every lookup is by stream key or by job id).
constexpr std::string_view kMigration2[] = {
    "ALTER TABLE stream_jobs ADD COLUMN owner TEXT",
    "ALTER TABLE destination_cursors ADD COLUMN destination_state TEXT",
    ("CREATE INDEX IF NOT EXISTS stream_jobs_by_key"
     " ON stream_jobs (name, source_name, stream_name, status, created_at)"),
    "CREATE INDEX IF NOT EXISTS source_cursors_by_job ON source_cursors (job_id)",
    ("CREATE INDEX IF NOT EXISTS destination_cursors_by_job"
     " ON destination_cursors (job_id, success, to_source_iteration)"),
    ("CREATE INDEX IF NOT EXISTS stream_resets_by_key"
     " ON stream_resets (name, source_name, stream_name, consumed_at)"),
    "CREATE INDEX IF NOT EXISTS stream_resets_by_job ON stream_resets (consumed_by_job_id)",
};

// Version 3: whether a cursor's NULL pagination means "the source is exhausted". This binary
// writes 0 or 1; the original leaves it NULL, and its stream runner never stores a pagination at
// all (its sources keep their own position), so there NULL means "continue". Rows of jobs this
// binary created before version 3 (owner set) get the value their pagination implies.
constexpr std::string_view kMigration3[] = {
    "ALTER TABLE destination_cursors ADD COLUMN source_exhausted INTEGER",
    "UPDATE destination_cursors SET source_exhausted = (pagination IS NULL)"
    " WHERE job_id IN (SELECT id FROM stream_jobs WHERE owner IS NOT NULL)",
};

// Version 4: the partition ledger (Backend::ClaimPartitions), ours only: the original has no
// notion of several processes sharing a stream.
constexpr std::string_view kMigration4[] = {
    R"sql(CREATE TABLE IF NOT EXISTS partition_positions (
      name TEXT NOT NULL,
      source_name TEXT NOT NULL,
      stream_name TEXT NOT NULL,
      partition_id TEXT NOT NULL,
      position INTEGER,
      owner TEXT NOT NULL,
      epoch INTEGER NOT NULL,
      updated_at TEXT NOT NULL,
      PRIMARY KEY (name, source_name, stream_name, partition_id)
    ))sql",
};

constexpr std::span<const std::string_view> kMigrations[] = {kMigration1, kMigration2, kMigration3,
                                                             kMigration4};

// A single row (id = 1) holding the version the schema was migrated to.
constexpr std::string_view kCreateVersionTable =
    "CREATE TABLE IF NOT EXISTS bizon_schema_version ("
    " id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)";

// ---------------------------------------------------------------------------------------------
// sqlite3 C API wrappers.

StatusCode CodeForSqliteError(int rc) {
  switch (rc & 0xff) {  // The primary code; extended codes only refine it.
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return StatusCode::kUnavailable;  // Another writer held the database for too long.
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return StatusCode::kDataLoss;
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_AUTH:
      // The file system is in the way (permissions, full disk, missing directory): retrying does
      // not help until someone fixes it.
      return StatusCode::kFailedPrecondition;
    default:
      return StatusCode::kInternal;  // Misuse, constraint violations, bad SQL: our bug.
  }
}

Status SqliteError(sqlite3* db, int rc, std::string_view what) {
  // sqlite3_errmsg describes the last failure on the connection, which is this one.
  return Status(CodeForSqliteError(rc), fmt::format("could not {}: {}", what, sqlite3_errmsg(db)),
                FailureClass::kBackend);
}

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

// Waits out conflicts that the busy handler does not cover, until the busy timeout:
// * shared-cache connections report table-level conflicts as SQLITE_LOCKED, never calling it;
// * some file paths (switching to WAL, WAL recovery) return SQLITE_BUSY at once.
// A BUSY is retried only outside an explicit transaction: inside one it can mean a deadlock that
// only a rollback resolves. When the busy handler already waited, the deadline has passed too.
class ConflictRetry {
 public:
  explicit ConflictRetry(sqlite3* db)
      : db_(db),
        deadline_(std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs)) {}

  /// Sleeps and returns true when `rc` is a conflict that may still clear in time.
  bool ShouldRetry(int rc) {
    int primary = rc & 0xff;  // Extended codes only refine the primary one.
    bool retryable =
        primary == SQLITE_LOCKED || (primary == SQLITE_BUSY && sqlite3_get_autocommit(db_) != 0);
    if (!retryable || std::chrono::steady_clock::now() >= deadline_) return false;
    std::this_thread::sleep_for(delay_);
    delay_ = std::min(delay_ * 2, std::chrono::microseconds(20'000));
    return true;
  }

 private:
  sqlite3* db_;
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::microseconds delay_{100};
};

/// One prepared statement; finalized on destruction. `what` names the operation in errors.
class Statement {
 public:
  static Result<Statement> Prepare(sqlite3* db, std::string_view sql, std::string_view what) {
    sqlite3_stmt* raw = nullptr;
    ConflictRetry retry(db);
    for (;;) {
      int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
      if (rc == SQLITE_OK) break;
      // Reading the schema of a shared cache can conflict with another connection's DDL.
      if (retry.ShouldRetry(rc)) continue;
      return Fail(SqliteError(db, rc, what));
    }
    return Statement(db, raw, what);
  }

  Statement(Statement&& other) noexcept
      : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)), what_(other.what_) {}
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  /// Binds the arguments to parameters 1..n. Integers bind as INTEGER, strings as TEXT and
  /// nullopt (or an empty optional) as NULL.
  template <typename... Args>
  Status Bind(const Args&... args) {
    [[maybe_unused]] int index = 0;
    Status status;
    ((status.ok() ? (status = BindOne(++index, args), 0) : 0), ...);
    return status;
  }

  /// Advances to the next row: true when there is one, false when the statement is done. Only
  /// the first step is retried on a lock conflict, since a retry restarts the statement.
  Result<bool> Step() {
    ConflictRetry retry(db_);
    for (;;) {
      int rc = sqlite3_step(stmt_);
      if (rc == SQLITE_ROW) {
        stepped_ = true;
        return true;
      }
      if (rc == SQLITE_DONE) return false;
      if (!stepped_ && retry.ShouldRetry(rc)) {
        sqlite3_reset(stmt_);
        continue;
      }
      return Fail(SqliteError(db_, rc, what_));
    }
  }

  /// Runs the statement to completion, discarding any rows (pragmas return one).
  Status Run() {
    for (;;) {
      BIZON_ASSIGN_OR_RETURN(bool has_row, Step());
      if (!has_row) return Status::Ok();
    }
  }

  bool IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

  int64_t Int64(int column) const { return sqlite3_column_int64(stmt_, column); }

  std::optional<int64_t> OptionalInt64(int column) const {
    if (IsNull(column)) return std::nullopt;
    return Int64(column);
  }

  std::string Text(int column) const {
    const unsigned char* text = sqlite3_column_text(stmt_, column);
    if (text == nullptr) return {};
    return std::string(reinterpret_cast<const char*>(text),
                       static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
  }

  std::optional<std::string> OptionalText(int column) const {
    if (IsNull(column)) return std::nullopt;
    return Text(column);
  }

  Result<int64_t> Timestamp(int column) const {
    std::string text = Text(column);
    Result<int64_t> micros = ParseTimestamp(text);
    if (!micros.has_value()) {
      return Fail(BackendError(StatusCode::kDataLoss,
                               fmt::format("a stored timestamp is malformed: '{}'", text)));
    }
    return *micros;
  }

  Result<std::optional<int64_t>> OptionalTimestamp(int column) const {
    if (IsNull(column)) return std::nullopt;
    BIZON_ASSIGN_OR_RETURN(int64_t micros, Timestamp(column));
    return micros;
  }

 private:
  Statement(sqlite3* db, sqlite3_stmt* stmt, std::string_view what)
      : db_(db), stmt_(stmt), what_(what) {}

  template <typename T>
  Status BindOne(int index, const T& value) {
    int rc = SQLITE_OK;
    if constexpr (std::is_same_v<T, std::nullopt_t>) {
      rc = sqlite3_bind_null(stmt_, index);
    } else if constexpr (IsOptional<T>::value) {
      if (!value.has_value()) return BindOne(index, std::nullopt);
      return BindOne(index, *value);
    } else if constexpr (std::is_integral_v<T>) {
      rc = sqlite3_bind_int64(stmt_, index, static_cast<sqlite3_int64>(value));
    } else {
      std::string_view text(value);
      // A null data pointer would bind NULL instead of the empty string.
      rc = sqlite3_bind_text64(stmt_, index, text.empty() ? "" : text.data(), text.size(),
                               SQLITE_TRANSIENT, SQLITE_UTF8);
    }
    if (rc != SQLITE_OK) return SqliteError(db_, rc, what_);
    return Status::Ok();
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_;
  std::string_view what_;  // Always a string literal.
  bool stepped_ = false;
};

Status Execute(sqlite3* db, std::string_view sql, std::string_view what) {
  BIZON_ASSIGN_OR_RETURN(Statement statement, Statement::Prepare(db, sql, what));
  return statement.Run();
}

/// Prepares `sql`, binds `args` and runs it to completion.
template <typename... Args>
Status Run(sqlite3* db, std::string_view sql, std::string_view what, const Args&... args) {
  BIZON_ASSIGN_OR_RETURN(Statement statement, Statement::Prepare(db, sql, what));
  BIZON_RETURN_IF_ERROR(statement.Bind(args...));
  return statement.Run();
}

/// Like Run, for an UPDATE of one job by id: fails with kNotFound when no row matched.
template <typename... Args>
Status UpdateJob(sqlite3* db, std::string_view sql, std::string_view what, std::string_view job_id,
                 const Args&... args) {
  BIZON_RETURN_IF_ERROR(Run(db, sql, what, args..., job_id));
  if (sqlite3_changes(db) == 0) {
    return BackendError(StatusCode::kNotFound,
                        fmt::format("no stream job has this id: {}", job_id));
  }
  return Status::Ok();
}

/// Rolls back the open transaction unless Release() was called after a successful COMMIT.
class RollbackGuard {
 public:
  explicit RollbackGuard(sqlite3* db) : db_(db) {}
  RollbackGuard(const RollbackGuard&) = delete;
  RollbackGuard& operator=(const RollbackGuard&) = delete;
  // Only an allocation failure can throw in here, and terminating is then right.
  // NOLINTNEXTLINE(bugprone-exception-escape)
  ~RollbackGuard() {
    // Some errors roll the transaction back on their own; ROLLBACK would then fail.
    if (db_ != nullptr && sqlite3_get_autocommit(db_) == 0) {
      // Ignored: the caller is already returning the error that made us roll back, and a failed
      // ROLLBACK leaves nothing committed either.
      Execute(db_, "ROLLBACK", "roll back the transaction").IgnoreError();
    }
  }
  void Release() { db_ = nullptr; }

 private:
  sqlite3* db_;
};

/// Empty paginations are stored as NULL (stored_pagination.h).
std::optional<std::string_view> PaginationForStorage(std::optional<std::string_view> json) {
  if (!json.has_value() || IsEmptyPagination(*json)) return std::nullopt;
  return json;
}

/// Escapes a name for the path of a "file:" URI.
std::string PercentEncode(std::string_view text) {
  std::string encoded;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    bool unreserved = (byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') ||
                      (byte >= '0' && byte <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      encoded += c;
    } else {
      encoded += fmt::format("%{:02X}", byte);
    }
  }
  return encoded;
}

Result<int> ReadSchemaVersion(sqlite3* db) {
  {
    BIZON_ASSIGN_OR_RETURN(
        Statement exists,
        Statement::Prepare(db,
                           "SELECT 1 FROM sqlite_master"
                           " WHERE type = 'table' AND name = 'bizon_schema_version'",
                           "look up the schema version table"));
    BIZON_ASSIGN_OR_RETURN(bool has_table, exists.Step());
    if (!has_table) return 0;
  }
  BIZON_ASSIGN_OR_RETURN(Statement select,
                         Statement::Prepare(db, "SELECT version FROM bizon_schema_version",
                                            "read the schema version"));
  BIZON_ASSIGN_OR_RETURN(bool has_row, select.Step());
  if (!has_row) return 0;
  return static_cast<int>(select.Int64(0));
}

// ---------------------------------------------------------------------------------------------
// Row mapping. Each kXColumns list matches the column indexes its ReadX function reads.

constexpr std::string_view kJobColumns =
    "id, name, source_name, stream_name, sync_mode, total_records_to_fetch, created_at,"
    " updated_at, incremental_state, status, error_message, owner";

Result<StreamJob> ReadJob(const Statement& row) {
  StreamJob job;
  job.id = row.Text(0);
  job.key = {row.Text(1), row.Text(2), row.Text(3)};
  job.sync_mode = row.Text(4);
  job.total_records_to_fetch = row.OptionalInt64(5);
  BIZON_ASSIGN_OR_RETURN(job.created_at_us, row.Timestamp(6));
  // Rows written by the Python bizon may never have been updated.
  BIZON_ASSIGN_OR_RETURN(std::optional<int64_t> updated_at, row.OptionalTimestamp(7));
  job.updated_at_us = updated_at.value_or(job.created_at_us);
  job.incremental_state = row.OptionalText(8);
  std::string status = row.Text(9);
  Result<JobStatus> parsed = ParseJobStatus(status);
  if (!parsed.has_value()) {
    return Fail(
        BackendError(StatusCode::kDataLoss,
                     fmt::format("a stored stream job has an unknown status: '{}'", status)));
  }
  job.status = *parsed;
  job.error_message = row.OptionalText(10);
  job.owner = row.Text(11);
  return job;
}

template <typename... Args>
Result<std::optional<StreamJob>> QueryJob(sqlite3* db, std::string_view where_and_order,
                                          std::string_view what, const Args&... args) {
  std::string sql =
      fmt::format("SELECT {} FROM stream_jobs {} LIMIT 1", kJobColumns, where_and_order);
  BIZON_ASSIGN_OR_RETURN(Statement select, Statement::Prepare(db, sql, what));
  BIZON_RETURN_IF_ERROR(select.Bind(args...));
  BIZON_ASSIGN_OR_RETURN(bool has_row, select.Step());
  if (!has_row) return std::nullopt;
  BIZON_ASSIGN_OR_RETURN(StreamJob job, ReadJob(select));
  return job;
}

// A stream cursor written by the original has no pagination and no source_exhausted: it reads
// back as the empty pagination, so the stream continues (see kMigration3).
constexpr std::string_view kDestinationCursorColumns =
    "id, job_id, name, source_name, stream_name, destination_name, from_source_iteration,"
    " to_source_iteration, rows_written, success,"
    " CASE WHEN pagination IS NULL AND source_exhausted IS NULL AND (SELECT sync_mode FROM"
    " stream_jobs WHERE stream_jobs.id = destination_cursors.job_id) = 'stream' THEN '{}'"
    " ELSE pagination END, destination_state, error_message, created_at,"
    " source_exhausted IS NULL AND destination_state IS NULL";

Result<DestinationCursor> ReadDestinationCursor(const Statement& row) {
  DestinationCursor cursor;
  cursor.id = row.Text(0);
  cursor.job_id = row.Text(1);
  cursor.key = {row.Text(2), row.Text(3), row.Text(4)};
  cursor.destination_name = row.Text(5);
  cursor.from_source_iteration = row.Int64(6);
  cursor.to_source_iteration = row.Int64(7);
  cursor.rows_written = row.Int64(8);
  cursor.success = row.Int64(9) != 0;
  cursor.pagination = row.OptionalText(10);
  cursor.destination_state = row.OptionalText(11);
  cursor.error_message = row.OptionalText(12);
  BIZON_ASSIGN_OR_RETURN(cursor.created_at_us, row.Timestamp(13));
  if (row.Int64(14) != 0) cursor.destination_state = std::string(kOriginalCursorState);
  return cursor;
}

constexpr std::string_view kResetColumns =
    "id, name, source_name, stream_name, requested_at, consumed_at, consumed_by_job_id";

Result<StreamReset> ReadReset(const Statement& row) {
  StreamReset reset;
  reset.id = row.Text(0);
  reset.key = {row.Text(1), row.Text(2), row.Text(3)};
  BIZON_ASSIGN_OR_RETURN(reset.requested_at_us, row.Timestamp(4));
  BIZON_ASSIGN_OR_RETURN(reset.consumed_at_us, row.OptionalTimestamp(5));
  reset.consumed_by_job_id = row.OptionalText(6);
  return reset;
}

template <typename... Args>
Result<std::optional<StreamReset>> QueryReset(sqlite3* db, std::string_view where_and_order,
                                              std::string_view what, const Args&... args) {
  std::string sql =
      fmt::format("SELECT {} FROM stream_resets {} LIMIT 1", kResetColumns, where_and_order);
  BIZON_ASSIGN_OR_RETURN(Statement select, Statement::Prepare(db, sql, what));
  BIZON_RETURN_IF_ERROR(select.Bind(args...));
  BIZON_ASSIGN_OR_RETURN(bool has_row, select.Step());
  if (!has_row) return std::nullopt;
  BIZON_ASSIGN_OR_RETURN(StreamReset reset, ReadReset(select));
  return reset;
}

constexpr std::string_view kWhereKey = "WHERE name = ? AND source_name = ? AND stream_name = ?";

}  // namespace

// -----------------------------------------------------------------------------------------------
// Opening.

Result<std::unique_ptr<SqliteBackend>> SqliteBackend::Open(std::string path) {
  if (path.empty()) {
    // SQLite would open a private temporary file, which is never what a config means.
    return Fail(InvalidArgumentError("the sqlite backend needs a database path"));
  }
  // FULLMUTEX guards the connection if a caller breaks the one-thread-at-a-time contract;
  // PRIVATECACHE keeps the connection out of any shared cache.
  int flags =
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_PRIVATECACHE;
  bool is_file = path != ":memory:";
  // Builds with SQLITE_USE_URI read any name starting with "file:" as a URI; "./" keeps it a path.
  if (path.starts_with("file:")) path = "./" + path;
  return OpenWithFlags(path, flags, is_file);
}

Result<std::unique_ptr<SqliteBackend>> SqliteBackend::OpenSharedInMemory(const std::string& name) {
  if (name.empty()) {
    return Fail(InvalidArgumentError("a shared in-memory sqlite backend needs a name"));
  }
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_URI;
  return OpenWithFlags(fmt::format("file:{}?mode=memory&cache=shared", PercentEncode(name)), flags,
                       /*is_file=*/false);
}

Result<std::unique_ptr<SqliteBackend>> SqliteBackend::OpenWithFlags(const std::string& location,
                                                                    int flags, bool is_file) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(location.c_str(), &db, flags, nullptr);
  // Owned from here on: sqlite3_open_v2 returns a handle even when it fails, and it must be closed.
  std::unique_ptr<SqliteBackend> backend(new SqliteBackend(db));
  if (is_file) backend->lock_path_ = location;
  if (rc != SQLITE_OK) {
    // A null handle means sqlite could not even allocate one.
    const char* detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    return Fail(
        BackendError(CodeForSqliteError(rc),
                     fmt::format("could not open the sqlite database: {}: {}", detail, location)));
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  BIZON_RETURN_IF_ERROR(Execute(db, "PRAGMA foreign_keys = ON", "enable foreign keys"));
  if (is_file) {
    // WAL lets readers run while a writer commits, so the producer and consumer of one run (and
    // other runs sharing the file) do not block each other. The mode is stored in the file.
    BIZON_RETURN_IF_ERROR(Execute(db, "PRAGMA journal_mode = WAL", "enable WAL journal mode"));
  }
  // FULL syncs the WAL on every commit: a cursor must survive a crash once a method returned.
  BIZON_RETURN_IF_ERROR(
      Execute(db, "PRAGMA synchronous = FULL", "set the sqlite synchronous mode"));
  return backend;
}

Status SqliteBackend::AcquireRunLock(const StreamKey& key) {
  if (lock_path_.empty()) return Status::Ok();
  BIZON_ASSIGN_OR_RETURN(RunLock lock, RunLock::Acquire(lock_path_, key));
  run_locks_.push_back(std::move(lock));
  return Status::Ok();
}

SqliteBackend::~SqliteBackend() {
  // close_v2 never fails on a connection whose statements are all finalized, which every method
  // guarantees before it returns.
  sqlite3_close_v2(db_);
}

// -----------------------------------------------------------------------------------------------
// Schema.

int SqliteBackend::LatestSchemaVersion() { return static_cast<int>(std::size(kMigrations)); }

Result<int> SqliteBackend::SchemaVersion() { return ReadSchemaVersion(db_); }

Status SqliteBackend::Migrate() {
  // Fast path without the write lock: the common case is a database that is already current.
  BIZON_ASSIGN_OR_RETURN(int version, ReadSchemaVersion(db_));
  while (version < LatestSchemaVersion()) {
    // IMMEDIATE takes the write lock up front, so a concurrent migrator waits here and then sees
    // the version this one committed instead of applying the same migration twice.
    BIZON_RETURN_IF_ERROR(
        Execute(db_, "BEGIN IMMEDIATE", "begin the schema migration transaction"));
    RollbackGuard rollback(db_);
    BIZON_RETURN_IF_ERROR(Execute(db_, kCreateVersionTable, "create the schema version table"));
    BIZON_ASSIGN_OR_RETURN(version, ReadSchemaVersion(db_));
    if (version < LatestSchemaVersion()) {
      for (std::string_view sql : kMigrations[version]) {
        BIZON_RETURN_IF_ERROR(Execute(db_, sql, "apply a schema migration"));
      }
      ++version;
      BIZON_RETURN_IF_ERROR(Run(db_,
                                "INSERT INTO bizon_schema_version (id, version) VALUES (1, ?)"
                                " ON CONFLICT (id) DO UPDATE SET version = excluded.version",
                                "record the schema version", int64_t{version}));
    }
    BIZON_RETURN_IF_ERROR(Execute(db_, "COMMIT", "commit the schema migration"));
    rollback.Release();
  }
  if (version > LatestSchemaVersion()) {
    return BackendError(
        StatusCode::kFailedPrecondition,
        fmt::format("the sqlite backend schema is newer than this bizon supports; upgrade bizon "
                    "(database version, supported version): {}, {}",
                    version, LatestSchemaVersion()));
  }
  return Status::Ok();
}

// -----------------------------------------------------------------------------------------------
// Jobs.

Result<StreamJob> SqliteBackend::CreateStreamJob(const StreamKey& key, std::string_view sync_mode,
                                                 std::optional<int64_t> total_records,
                                                 std::string_view owner) {
  StreamJob job = NewStreamJob(key, sync_mode, total_records, owner);
  std::string now = FormatSqlTimestamp(job.created_at_us);
  BIZON_RETURN_IF_ERROR(Run(db_,
                            "INSERT INTO stream_jobs (id, name, source_name, stream_name,"
                            " sync_mode, attempt, total_records_to_fetch, created_at, updated_at,"
                            " status, owner) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)",
                            "insert the stream job", job.id, key.name, key.source_name,
                            key.stream_name, sync_mode, total_records, now, now,
                            ToString(job.status), owner));
  return job;
}

Status SqliteBackend::UpdateStreamJobStatus(std::string_view job_id, JobStatus status,
                                            std::optional<std::string> error_message) {
  return UpdateJob(db_,
                   "UPDATE stream_jobs SET status = ?, error_message = ?, updated_at = ?"
                   " WHERE id = ?",
                   "update the stream job status", job_id, ToString(status), error_message,
                   FormatSqlTimestamp(NowMicros()));
}

Status SqliteBackend::SetIncrementalState(std::string_view job_id, std::string_view state_json) {
  return UpdateJob(db_, "UPDATE stream_jobs SET incremental_state = ?, updated_at = ? WHERE id = ?",
                   "store the incremental state", job_id, state_json,
                   FormatSqlTimestamp(NowMicros()));
}

Status SqliteBackend::SetJobOwner(std::string_view job_id, std::string_view owner) {
  return UpdateJob(db_, "UPDATE stream_jobs SET owner = ?, updated_at = ? WHERE id = ?",
                   "update the stream job owner", job_id, owner, FormatSqlTimestamp(NowMicros()));
}

Result<std::optional<StreamJob>> SqliteBackend::GetStreamJobById(std::string_view job_id) {
  return QueryJob(db_, "WHERE id = ?", "read the stream job", job_id);
}

Result<std::optional<StreamJob>> SqliteBackend::NewestJobIn(const StreamKey& key, JobStatus status,
                                                            std::string_view what) {
  // rowid breaks created_at ties in insertion order.
  return QueryJob(db_,
                  fmt::format("{} AND status = ? ORDER BY created_at DESC, rowid DESC", kWhereKey),
                  what, key.name, key.source_name, key.stream_name, ToString(status));
}

Result<std::optional<StreamJob>> SqliteBackend::GetRunningStreamJob(const StreamKey& key) {
  // The original raised on two running jobs (concurrent starts); the newest one wins here.
  return NewestJobIn(key, JobStatus::kRunning, "read the running stream job");
}

Result<std::optional<StreamJob>> SqliteBackend::GetStartedStreamJob(const StreamKey& key) {
  return NewestJobIn(key, JobStatus::kStarted, "read the started stream job");
}

Result<std::optional<StreamJob>> SqliteBackend::GetLastSuccessfulStreamJob(const StreamKey& key) {
  return NewestJobIn(key, JobStatus::kSucceeded, "read the last successful stream job");
}

// -----------------------------------------------------------------------------------------------
// Cursors.

Status SqliteBackend::CreateSourceCursor(const SourceCursorRow& cursor) {
  std::string now = FormatSqlTimestamp(NowMicros());
  return Run(db_,
             "INSERT INTO source_cursors (id, job_id, name, source_name, stream_name, iteration,"
             " rows_fetched, next_pagination, attempt, status, created_at, updated_at)"
             " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 'pulling', ?, ?)",
             "insert the source cursor", NewUuidHex(), cursor.job_id, cursor.key.name,
             cursor.key.source_name, cursor.key.stream_name, cursor.iteration, cursor.rows_fetched,
             PaginationForStorage(cursor.next_pagination), now, now);
}

Status SqliteBackend::CreateDestinationCursor(const DestinationCursor& cursor) {
  std::string now =
      FormatSqlTimestamp(cursor.created_at_us != 0 ? cursor.created_at_us : NowMicros());
  std::optional<std::string_view> pagination;
  if (cursor.pagination.has_value()) pagination = PaginationForStorage(*cursor.pagination);
  return Run(db_,
             "INSERT INTO destination_cursors (id, job_id, name, source_name, stream_name,"
             " destination_name, from_source_iteration, to_source_iteration, rows_written,"
             " success, attempt, error_message, created_at, updated_at, pagination,"
             " destination_state, source_exhausted)"
             " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?)",
             "insert the destination cursor", cursor.id.empty() ? NewUuidHex() : cursor.id,
             cursor.job_id, cursor.key.name, cursor.key.source_name, cursor.key.stream_name,
             cursor.destination_name, cursor.from_source_iteration, cursor.to_source_iteration,
             cursor.rows_written, int64_t{cursor.success ? 1 : 0}, cursor.error_message, now, now,
             pagination, cursor.destination_state, int64_t{pagination.has_value() ? 0 : 1});
}

// -----------------------------------------------------------------------------------------------
// Partition ledger.

Result<std::vector<PartitionClaim>> SqliteBackend::ClaimPartitions(
    const StreamKey& key, std::string_view owner, const std::vector<std::string>& partitions) {
  BIZON_RETURN_IF_ERROR(Execute(db_, "BEGIN IMMEDIATE", "begin the partition claim"));
  RollbackGuard rollback(db_);
  std::string now = FormatSqlTimestamp(NowMicros());
  std::vector<PartitionClaim> claims;
  for (const std::string& partition : partitions) {
    BIZON_ASSIGN_OR_RETURN(
        Statement select,
        Statement::Prepare(db_,
                           fmt::format("SELECT position, owner, epoch FROM partition_positions {}"
                                       " AND partition_id = ?",
                                       kWhereKey),
                           "read the partition ledger"));
    BIZON_RETURN_IF_ERROR(select.Bind(key.name, key.source_name, key.stream_name, partition));
    BIZON_ASSIGN_OR_RETURN(bool found, select.Step());
    PartitionClaim claim{.partition = partition, .epoch = 1};
    if (found) {
      claim.position = select.OptionalInt64(0);
      claim.previous_owner = select.Text(1);
      claim.epoch = select.Int64(2) + 1;
    }
    BIZON_RETURN_IF_ERROR(
        Run(db_,
            "INSERT INTO partition_positions (name, source_name, stream_name,"
            " partition_id, position, owner, epoch, updated_at)"
            " VALUES (?, ?, ?, ?, NULL, ?, ?, ?)"
            " ON CONFLICT (name, source_name, stream_name, partition_id) DO UPDATE"
            " SET owner = excluded.owner, epoch = excluded.epoch,"
            " updated_at = excluded.updated_at",
            "claim a partition", key.name, key.source_name, key.stream_name, partition, owner,
            claim.epoch, now));
    claims.push_back(std::move(claim));
  }
  BIZON_RETURN_IF_ERROR(Execute(db_, "COMMIT", "commit the partition claim"));
  rollback.Release();
  return claims;
}

Status SqliteBackend::CreateDestinationCursorAndAdvance(
    const DestinationCursor& cursor, const StreamKey& key, std::string_view owner,
    const std::vector<PartitionAdvance>& advances) {
  BIZON_RETURN_IF_ERROR(Execute(db_, "BEGIN IMMEDIATE", "begin the fenced cursor"));
  RollbackGuard rollback(db_);
  std::string now = FormatSqlTimestamp(NowMicros());
  for (const PartitionAdvance& advance : advances) {
    BIZON_RETURN_IF_ERROR(Run(db_,
                              fmt::format("UPDATE partition_positions SET position = ?,"
                                          " updated_at = ? {} AND partition_id = ? AND owner = ?"
                                          " AND epoch = ?",
                                          kWhereKey),
                              "advance a partition", advance.position, now, key.name,
                              key.source_name, key.stream_name, advance.partition, owner,
                              advance.epoch));
    if (sqlite3_changes(db_) == 0) {
      return BackendError(StatusCode::kAborted,
                          fmt::format("partition {} was claimed by another member after epoch {}; "
                                      "this member's write is not recorded",
                                      advance.partition, advance.epoch));
    }
  }
  BIZON_RETURN_IF_ERROR(CreateDestinationCursor(cursor));
  BIZON_RETURN_IF_ERROR(Execute(db_, "COMMIT", "commit the fenced cursor"));
  rollback.Release();
  return Status::Ok();
}

Result<std::optional<DestinationCursor>> SqliteBackend::GetLastDestinationCursor(
    std::string_view job_id) {
  // A stream job's newest cursor is its position: the original's stream runner numbers its
  // iterations from 0 on every run, so after it wrote to a job the highest iteration is older.
  std::string sql = fmt::format(
      "SELECT {} FROM destination_cursors WHERE job_id = ? AND success = 1 ORDER BY CASE WHEN"
      " (SELECT sync_mode FROM stream_jobs WHERE id = ?) = 'stream' THEN rowid ELSE"
      " to_source_iteration END DESC, created_at DESC, rowid DESC LIMIT 1",
      kDestinationCursorColumns);
  BIZON_ASSIGN_OR_RETURN(Statement select,
                         Statement::Prepare(db_, sql, "read the last destination cursor"));
  BIZON_RETURN_IF_ERROR(select.Bind(job_id, job_id));
  BIZON_ASSIGN_OR_RETURN(bool has_row, select.Step());
  if (!has_row) return std::nullopt;
  BIZON_ASSIGN_OR_RETURN(DestinationCursor cursor, ReadDestinationCursor(select));
  return cursor;
}

Result<int64_t> SqliteBackend::GetWrittenRowCount(std::string_view job_id) {
  BIZON_ASSIGN_OR_RETURN(
      Statement select,
      Statement::Prepare(db_,
                         "SELECT COALESCE(SUM(rows_written), 0) FROM destination_cursors"
                         " WHERE job_id = ? AND success = 1",
                         "count the written rows"));
  BIZON_RETURN_IF_ERROR(select.Bind(job_id));
  BIZON_ASSIGN_OR_RETURN(bool has_row, select.Step());
  return has_row ? select.Int64(0) : 0;
}

// -----------------------------------------------------------------------------------------------
// Resets.

Result<StreamReset> SqliteBackend::CreateStreamReset(const StreamKey& key) {
  StreamReset reset;
  reset.id = NewUuidHex();
  reset.key = key;
  reset.requested_at_us = NowMicros();
  BIZON_RETURN_IF_ERROR(Run(db_,
                            "INSERT INTO stream_resets (id, name, source_name, stream_name,"
                            " requested_at) VALUES (?, ?, ?, ?, ?)",
                            "insert the stream reset", reset.id, key.name, key.source_name,
                            key.stream_name, FormatSqlTimestamp(reset.requested_at_us)));
  return reset;
}

Result<std::optional<StreamReset>> SqliteBackend::GetPendingStreamReset(const StreamKey& key) {
  return QueryReset(
      db_,
      fmt::format("{} AND consumed_at IS NULL ORDER BY requested_at DESC, rowid DESC", kWhereKey),
      "read the pending stream reset", key.name, key.source_name, key.stream_name);
}

Result<std::optional<StreamReset>> SqliteBackend::GetStreamResetByJobId(std::string_view job_id) {
  return QueryReset(db_, "WHERE consumed_by_job_id = ? ORDER BY consumed_at DESC, rowid DESC",
                    "read the stream reset of the job", job_id);
}

Status SqliteBackend::ConsumeStreamReset(std::string_view reset_id, std::string_view job_id) {
  // Only a pending reset can be consumed, so two runs racing for one reset cannot both take it.
  BIZON_RETURN_IF_ERROR(Run(db_,
                            "UPDATE stream_resets SET consumed_at = ?, consumed_by_job_id = ?"
                            " WHERE id = ? AND consumed_at IS NULL",
                            "consume the stream reset", FormatSqlTimestamp(NowMicros()), job_id,
                            reset_id));
  if (sqlite3_changes(db_) != 0) return Status::Ok();
  // Nothing changed: tell a retry of our own success apart from losing the race.
  BIZON_ASSIGN_OR_RETURN(std::optional<StreamReset> reset,
                         QueryReset(db_, "WHERE id = ?", "read the stream reset", reset_id));
  return UnchangedResetOutcome(reset, job_id, reset_id);
}

Result<int64_t> SqliteBackend::CancelPendingStreamResets(const StreamKey& key) {
  // A cancelled reset is one consumed by no job (consumed_at set, consumed_by_job_id NULL).
  BIZON_RETURN_IF_ERROR(Run(db_,
                            fmt::format("UPDATE stream_resets SET consumed_at = ? {}"
                                        " AND consumed_at IS NULL",
                                        kWhereKey),
                            "cancel the pending stream resets", FormatSqlTimestamp(NowMicros()),
                            key.name, key.source_name, key.stream_name));
  return int64_t{sqlite3_changes(db_)};
}

}  // namespace bizon
