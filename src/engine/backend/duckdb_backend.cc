#include "engine/backend/duckdb_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <mutex>
#include <set>
#include <utility>

#include "bizon/clock.h"
#include "engine/backend/backend_support.h"
#include "engine/backend/original_state.h"
#include "engine/backend/stored_pagination.h"

namespace bizon {
namespace {

constexpr int kSchemaVersion = 1;

// The original's four tables and column names, with what this implementation adds (owner,
// destination_state, source_exhausted). Ties are broken by insertion order, DuckDB's rowid, as in
// the sqlite backend (rows are never deleted, so rowids only grow). Timestamps are text,
// `YYYY-MM-DD HH:MM:SS.ffffff` UTC, as in the sqlite backend. No foreign keys: a cursor's job is
// checked by the insert itself.
constexpr std::string_view kCreateTables = R"sql(
  CREATE SCHEMA IF NOT EXISTS {0};
  CREATE TABLE IF NOT EXISTS {0}.stream_jobs (
    id VARCHAR NOT NULL PRIMARY KEY, name VARCHAR NOT NULL, source_name VARCHAR NOT NULL,
    stream_name VARCHAR NOT NULL, sync_mode VARCHAR NOT NULL, attempt BIGINT DEFAULT 0,
    total_records_to_fetch BIGINT, created_at VARCHAR NOT NULL, updated_at VARCHAR,
    incremental_state VARCHAR, status VARCHAR DEFAULT 'started', error_message VARCHAR,
    owner VARCHAR);
  CREATE TABLE IF NOT EXISTS {0}.source_cursors (
    id VARCHAR NOT NULL PRIMARY KEY, job_id VARCHAR NOT NULL, name VARCHAR NOT NULL,
    source_name VARCHAR NOT NULL, stream_name VARCHAR NOT NULL, iteration BIGINT NOT NULL,
    rows_fetched BIGINT NOT NULL, next_pagination VARCHAR, attempt BIGINT DEFAULT 0,
    status VARCHAR DEFAULT 'pulling', error_message VARCHAR, created_at VARCHAR NOT NULL,
    updated_at VARCHAR);
  CREATE TABLE IF NOT EXISTS {0}.destination_cursors (
    id VARCHAR NOT NULL PRIMARY KEY, job_id VARCHAR NOT NULL, name VARCHAR NOT NULL,
    source_name VARCHAR NOT NULL, stream_name VARCHAR NOT NULL, destination_name VARCHAR NOT NULL,
    from_source_iteration BIGINT NOT NULL, to_source_iteration BIGINT NOT NULL,
    rows_written BIGINT NOT NULL, success BOOLEAN NOT NULL, attempt BIGINT DEFAULT 0,
    error_message VARCHAR, created_at VARCHAR NOT NULL, updated_at VARCHAR, pagination VARCHAR,
    destination_state VARCHAR, source_exhausted BOOLEAN);
  CREATE TABLE IF NOT EXISTS {0}.stream_resets (
    id VARCHAR NOT NULL PRIMARY KEY, name VARCHAR NOT NULL, source_name VARCHAR NOT NULL,
    stream_name VARCHAR NOT NULL, requested_at VARCHAR NOT NULL, consumed_at VARCHAR,
    consumed_by_job_id VARCHAR);
  CREATE TABLE IF NOT EXISTS {0}.bizon_schema_version (
    id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
)sql";

/// The statements of every DuckdbBackend of this process, one at a time.
std::mutex& StatementMutex() {
  static std::mutex mutex;
  return mutex;
}

/// The run locks this process holds: "<path>\x1f<name>\x1f<source>\x1f<stream>".
std::set<std::string>& HeldRunLocks() {
  static auto* held = new std::set<std::string>();
  return *held;
}

std::string RunLockName(const std::string& path, const StreamKey& key) {
  return fmt::format("{}\x1f{}\x1f{}\x1f{}", path, key.name, key.source_name, key.stream_name);
}

int64_t Integer(const std::optional<std::string>& text) {
  int64_t value = 0;
  // A malformed number stays 0: the columns read this way are DuckDB's own BIGINTs.
  if (text) (void)std::from_chars(text->data(), text->data() + text->size(), value);
  return value;
}

std::optional<int64_t> OptionalInteger(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  return Integer(text);
}

Result<int64_t> Timestamp(const std::optional<std::string>& text) {
  Result<int64_t> micros = ParseTimestamp(text.value_or(""));
  if (!micros.has_value()) {
    return Fail(BackendError(StatusCode::kDataLoss, fmt::format("a stored timestamp is malformed: "
                                                                "'{}'",
                                                                text.value_or(""))));
  }
  return *micros;
}

Result<std::optional<int64_t>> OptionalTimestamp(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  BIZON_ASSIGN_OR_RETURN(int64_t micros, Timestamp(text));
  return micros;
}

/// Empty paginations are stored as NULL (stored_pagination.h).
DuckParam PaginationParam(const std::optional<std::string>& json) {
  if (!json.has_value() || IsEmptyPagination(*json)) return nullptr;
  return *json;
}

DuckParam Optional(const std::optional<std::string>& text) {
  if (!text) return nullptr;
  return *text;
}

std::vector<DuckParam> KeyParams(const StreamKey& key) {
  return {key.name, key.source_name, key.stream_name};
}

constexpr std::string_view kWhereKey = "WHERE name = $1 AND source_name = $2 AND stream_name = $3";

constexpr std::string_view kJobColumns =
    "id, name, source_name, stream_name, sync_mode, total_records_to_fetch, created_at,"
    " updated_at, incremental_state, status, error_message, owner";

Result<StreamJob> ReadJob(const std::vector<std::optional<std::string>>& row) {
  StreamJob job;
  job.id = row[0].value_or("");
  job.key = {row[1].value_or(""), row[2].value_or(""), row[3].value_or("")};
  job.sync_mode = row[4].value_or("");
  job.total_records_to_fetch = OptionalInteger(row[5]);
  BIZON_ASSIGN_OR_RETURN(job.created_at_us, Timestamp(row[6]));
  BIZON_ASSIGN_OR_RETURN(std::optional<int64_t> updated_at, OptionalTimestamp(row[7]));
  job.updated_at_us = updated_at.value_or(job.created_at_us);
  job.incremental_state = row[8];
  std::string status = row[9].value_or("");
  Result<JobStatus> parsed = ParseJobStatus(status);
  if (!parsed.has_value()) {
    return Fail(
        BackendError(StatusCode::kDataLoss,
                     fmt::format("a stored stream job has an unknown status: '{}'", status)));
  }
  job.status = *parsed;
  job.error_message = row[10];
  job.owner = row[11].value_or("");
  return job;
}

// A cursor the original could have written has no pagination and no source_exhausted: as in the
// other backends, a stream's reads back as the empty pagination and records no state.
constexpr std::string_view kDestinationCursorColumns =
    "id, job_id, name, source_name, stream_name, destination_name, from_source_iteration,"
    " to_source_iteration, rows_written, success,"
    " CASE WHEN pagination IS NULL AND source_exhausted IS NULL AND (SELECT sync_mode FROM {0}"
    " WHERE {0}.id = c.job_id) = 'stream' THEN '{{}}' ELSE pagination END,"
    " destination_state, error_message, created_at,"
    " source_exhausted IS NULL AND destination_state IS NULL";

Result<DestinationCursor> ReadDestinationCursor(
    const std::vector<std::optional<std::string>>& row) {
  DestinationCursor cursor;
  cursor.id = row[0].value_or("");
  cursor.job_id = row[1].value_or("");
  cursor.key = {row[2].value_or(""), row[3].value_or(""), row[4].value_or("")};
  cursor.destination_name = row[5].value_or("");
  cursor.from_source_iteration = Integer(row[6]);
  cursor.to_source_iteration = Integer(row[7]);
  cursor.rows_written = Integer(row[8]);
  cursor.success = row[9] == "true";
  cursor.pagination = row[10];
  cursor.destination_state = row[11];
  cursor.error_message = row[12];
  BIZON_ASSIGN_OR_RETURN(cursor.created_at_us, Timestamp(row[13]));
  if (row[14] == "true") cursor.destination_state = std::string(kOriginalCursorState);
  return cursor;
}

constexpr std::string_view kResetColumns =
    "id, name, source_name, stream_name, requested_at, consumed_at, consumed_by_job_id";

Result<StreamReset> ReadReset(const std::vector<std::optional<std::string>>& row) {
  StreamReset reset;
  reset.id = row[0].value_or("");
  reset.key = {row[1].value_or(""), row[2].value_or(""), row[3].value_or("")};
  BIZON_ASSIGN_OR_RETURN(reset.requested_at_us, Timestamp(row[4]));
  BIZON_ASSIGN_OR_RETURN(reset.consumed_at_us, OptionalTimestamp(row[5]));
  reset.consumed_by_job_id = row[6];
  return reset;
}

/// The status of a statement whose rows are not wanted.
Status Discard(const Result<DuckRows>& rows) { return rows ? Status::Ok() : rows.error(); }

/// The count a DML statement returns.
int64_t Changed(const DuckRows& rows) {
  return rows.empty() || rows.front().empty() ? 0 : Integer(rows.front().front());
}

}  // namespace

// -----------------------------------------------------------------------------------------------
// Opening.

DuckdbBackend::DuckdbBackend(DuckConnection connection, std::string schema)
    : connection_(std::move(connection)), schema_(std::move(schema)) {}

DuckdbBackend::~DuckdbBackend() {
  std::lock_guard lock(StatementMutex());
  for (const std::string& name : run_locks_) HeldRunLocks().erase(name);
}

Result<std::unique_ptr<DuckdbBackend>> DuckdbBackend::Open(const std::string& path,
                                                           const std::string& schema) {
  if (path.empty() || path == ":memory:") {
    return Fail(BackendError(StatusCode::kInvalidArgument,
                             "the duckdb backend needs a database file path"));
  }
  BIZON_ASSIGN_OR_RETURN(std::shared_ptr<DuckDatabase> database,
                         DuckDatabase::Open(path, FailureClass::kBackend));
  BIZON_ASSIGN_OR_RETURN(DuckConnection connection,
                         DuckConnection::Connect(std::move(database), FailureClass::kBackend));
  return std::unique_ptr<DuckdbBackend>(
      new DuckdbBackend(std::move(connection), schema.empty() ? "main" : schema));
}

std::string DuckdbBackend::Table(std::string_view name) const {
  return DuckQuoteIdentifier(schema_) + "." + std::string(name);
}

Result<DuckRows> DuckdbBackend::Run(std::string_view sql, const std::vector<DuckParam>& params) {
  std::lock_guard lock(StatementMutex());
  return connection_.Query(sql, params);
}

Status DuckdbBackend::Migrate() {
  std::lock_guard lock(StatementMutex());
  std::string quoted = DuckQuoteIdentifier(schema_);
  BIZON_RETURN_IF_ERROR(connection_.Begin());
  Status migrated = [&]() -> Status {
    BIZON_RETURN_IF_ERROR(connection_.Execute(fmt::format(kCreateTables, quoted)));
    BIZON_ASSIGN_OR_RETURN(
        std::optional<std::string> version,
        connection_.QueryValue(fmt::format("SELECT version FROM {}.bizon_schema_version", quoted)));
    if (version && Integer(version) > kSchemaVersion) {
      return BackendError(
          StatusCode::kFailedPrecondition,
          fmt::format("the duckdb backend schema is newer than this bizon supports; upgrade bizon "
                      "(database version, supported version): {}, {}",
                      *version, kSchemaVersion));
    }
    if (!version) {
      BIZON_RETURN_IF_ERROR(connection_.Execute(
          fmt::format("INSERT INTO {}.bizon_schema_version VALUES (1, $1)", quoted),
          {int64_t{kSchemaVersion}}));
    }
    return connection_.Commit();
  }();
  if (!migrated.ok()) connection_.RollbackQuietly();
  return migrated;
}

Status DuckdbBackend::AcquireRunLock(const StreamKey& key) {
  std::lock_guard lock(StatementMutex());
  std::string name = RunLockName(connection_.database().path(), key);
  if (!HeldRunLocks().insert(name).second) {
    return BackendError(
        StatusCode::kFailedPrecondition,
        fmt::format("another run of this pipeline stream holds the duckdb backend {} in this "
                    "process: {}/{}/{}",
                    connection_.database().path(), key.name, key.source_name, key.stream_name));
  }
  run_locks_.push_back(std::move(name));
  return Status::Ok();
}

// -----------------------------------------------------------------------------------------------
// Jobs.

Result<StreamJob> DuckdbBackend::CreateStreamJob(const StreamKey& key, std::string_view sync_mode,
                                                 std::optional<int64_t> total_records,
                                                 std::string_view owner) {
  StreamJob job = NewStreamJob(key, sync_mode, total_records, owner);
  std::string now = FormatSqlTimestamp(job.created_at_us);
  DuckParam total = total_records ? DuckParam(*total_records) : DuckParam(nullptr);
  BIZON_RETURN_IF_ERROR(
      Discard(Run(fmt::format("INSERT INTO {} (id, name, source_name, stream_name,"
                              " sync_mode, attempt, total_records_to_fetch, created_at,"
                              " updated_at, status, owner)"
                              " VALUES ($1, $2, $3, $4, $5, 0, $6, $7, $8, $9, $10)",
                              Table("stream_jobs")),
                  {job.id, key.name, key.source_name, key.stream_name, std::string(sync_mode),
                   total, now, now, std::string(ToString(job.status)), std::string(owner)})));
  return job;
}

Status DuckdbBackend::UpdateJob(std::string_view assignments, std::vector<DuckParam> params,
                                std::string_view job_id) {
  params.emplace_back(FormatSqlTimestamp(NowMicros()));
  params.emplace_back(std::string(job_id));
  size_t now = params.size() - 1;
  BIZON_ASSIGN_OR_RETURN(DuckRows changed,
                         Run(fmt::format("UPDATE {} SET {}, updated_at = ${} WHERE id = ${}",
                                         Table("stream_jobs"), assignments, now, now + 1),
                             params));
  if (Changed(changed) == 0) {
    return BackendError(StatusCode::kNotFound,
                        fmt::format("no stream job has this id: {}", job_id));
  }
  return Status::Ok();
}

Status DuckdbBackend::UpdateStreamJobStatus(std::string_view job_id, JobStatus status,
                                            std::optional<std::string> error_message) {
  return UpdateJob("status = $1, error_message = $2",
                   {std::string(ToString(status)), Optional(error_message)}, job_id);
}

Status DuckdbBackend::SetIncrementalState(std::string_view job_id, std::string_view state_json) {
  return UpdateJob("incremental_state = $1", {std::string(state_json)}, job_id);
}

Status DuckdbBackend::SetJobOwner(std::string_view job_id, std::string_view owner) {
  return UpdateJob("owner = $1", {std::string(owner)}, job_id);
}

Result<std::optional<StreamJob>> DuckdbBackend::QueryJob(std::string_view where_and_order,
                                                         const std::vector<DuckParam>& params) {
  BIZON_ASSIGN_OR_RETURN(DuckRows rows, Run(fmt::format("SELECT {} FROM {} {} LIMIT 1", kJobColumns,
                                                        Table("stream_jobs"), where_and_order),
                                            params));
  if (rows.empty()) return std::nullopt;
  BIZON_ASSIGN_OR_RETURN(StreamJob job, ReadJob(rows.front()));
  return job;
}

Result<std::optional<StreamJob>> DuckdbBackend::GetStreamJobById(std::string_view job_id) {
  return QueryJob("WHERE id = $1", {std::string(job_id)});
}

Result<std::optional<StreamJob>> DuckdbBackend::NewestJobIn(const StreamKey& key, JobStatus status,
                                                            std::string_view what) {
  (void)what;  // DuckDB's errors name the statement already.
  std::vector<DuckParam> params = KeyParams(key);
  params.emplace_back(std::string(ToString(status)));
  return QueryJob(fmt::format("{} AND status = $4 ORDER BY created_at DESC, rowid DESC", kWhereKey),
                  params);
}

Result<std::optional<StreamJob>> DuckdbBackend::GetRunningStreamJob(const StreamKey& key) {
  return NewestJobIn(key, JobStatus::kRunning, "read the running stream job");
}

Result<std::optional<StreamJob>> DuckdbBackend::GetStartedStreamJob(const StreamKey& key) {
  return NewestJobIn(key, JobStatus::kStarted, "read the started stream job");
}

Result<std::optional<StreamJob>> DuckdbBackend::GetLastSuccessfulStreamJob(const StreamKey& key) {
  return NewestJobIn(key, JobStatus::kSucceeded, "read the last successful stream job");
}

// -----------------------------------------------------------------------------------------------
// Cursors.

Status DuckdbBackend::CreateSourceCursor(const SourceCursorRow& cursor) {
  std::string now = FormatSqlTimestamp(NowMicros());
  // Inserted only when the job exists: the other backends refuse an orphan with a foreign key.
  BIZON_ASSIGN_OR_RETURN(
      DuckRows inserted,
      Run(fmt::format("INSERT INTO {} (id, job_id, name, source_name, stream_name, iteration,"
                      " rows_fetched, next_pagination, attempt, status, created_at, updated_at)"
                      " SELECT $1, $2, $3, $4, $5, $6, $7, $8, 0, 'pulling', $9, $9"
                      " WHERE EXISTS (SELECT 1 FROM {} WHERE id = $2)",
                      Table("source_cursors"), Table("stream_jobs")),
          {NewUuidHex(), cursor.job_id, cursor.key.name, cursor.key.source_name,
           cursor.key.stream_name, cursor.iteration, cursor.rows_fetched,
           PaginationParam(cursor.next_pagination), now}));
  if (Changed(inserted) == 0) {
    return BackendError(
        StatusCode::kFailedPrecondition,
        fmt::format("a source cursor names no stored stream job: {}", cursor.job_id));
  }
  return Status::Ok();
}

Status DuckdbBackend::CreateDestinationCursor(const DestinationCursor& cursor) {
  std::string now =
      FormatSqlTimestamp(cursor.created_at_us != 0 ? cursor.created_at_us : NowMicros());
  DuckParam pagination = PaginationParam(cursor.pagination);
  bool exhausted = std::holds_alternative<std::nullptr_t>(pagination);
  BIZON_ASSIGN_OR_RETURN(
      DuckRows inserted,
      Run(fmt::format("INSERT INTO {} (id, job_id, name, source_name, stream_name,"
                      " destination_name, from_source_iteration, to_source_iteration, rows_written,"
                      " success, attempt, error_message, created_at, updated_at, pagination,"
                      " destination_state, source_exhausted)"
                      " SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0, $11, $12, $12, $13, $14,"
                      " $15 WHERE EXISTS (SELECT 1 FROM {} WHERE id = $2)",
                      Table("destination_cursors"), Table("stream_jobs")),
          {cursor.id.empty() ? NewUuidHex() : cursor.id, cursor.job_id, cursor.key.name,
           cursor.key.source_name, cursor.key.stream_name, cursor.destination_name,
           cursor.from_source_iteration, cursor.to_source_iteration, cursor.rows_written,
           cursor.success, Optional(cursor.error_message), now, pagination,
           Optional(cursor.destination_state), exhausted}));
  if (Changed(inserted) == 0) {
    return BackendError(
        StatusCode::kFailedPrecondition,
        fmt::format("a destination cursor names no stored stream job: {}", cursor.job_id));
  }
  return Status::Ok();
}

Result<std::optional<DestinationCursor>> DuckdbBackend::GetLastDestinationCursor(
    std::string_view job_id) {
  // A stream job's newest cursor is its position (see the sqlite backend).
  std::string columns = fmt::format(kDestinationCursorColumns, Table("stream_jobs"));
  BIZON_ASSIGN_OR_RETURN(
      DuckRows rows,
      Run(fmt::format("SELECT {} FROM {} c WHERE job_id = $1 AND success ORDER BY CASE WHEN"
                      " (SELECT sync_mode FROM {} WHERE id = $1) = 'stream' THEN rowid ELSE"
                      " to_source_iteration END DESC, created_at DESC, rowid DESC LIMIT 1",
                      columns, Table("destination_cursors"), Table("stream_jobs")),
          {std::string(job_id)}));
  if (rows.empty()) return std::nullopt;
  BIZON_ASSIGN_OR_RETURN(DestinationCursor cursor, ReadDestinationCursor(rows.front()));
  return cursor;
}

Result<int64_t> DuckdbBackend::GetWrittenRowCount(std::string_view job_id) {
  BIZON_ASSIGN_OR_RETURN(DuckRows rows,
                         Run(fmt::format("SELECT COALESCE(SUM(rows_written), 0) FROM {}"
                                         " WHERE job_id = $1 AND success",
                                         Table("destination_cursors")),
                             {std::string(job_id)}));
  return Changed(rows);
}

// -----------------------------------------------------------------------------------------------
// Resets.

Result<StreamReset> DuckdbBackend::CreateStreamReset(const StreamKey& key) {
  StreamReset reset{.id = NewUuidHex(), .key = key, .requested_at_us = NowMicros()};
  BIZON_RETURN_IF_ERROR(
      Discard(Run(fmt::format("INSERT INTO {} (id, name, source_name, stream_name,"
                              " requested_at) VALUES ($1, $2, $3, $4, $5)",
                              Table("stream_resets")),
                  {reset.id, key.name, key.source_name, key.stream_name,
                   FormatSqlTimestamp(reset.requested_at_us)})));
  return reset;
}

Result<std::optional<StreamReset>> DuckdbBackend::QueryReset(std::string_view where_and_order,
                                                             const std::vector<DuckParam>& params) {
  BIZON_ASSIGN_OR_RETURN(DuckRows rows,
                         Run(fmt::format("SELECT {} FROM {} {} LIMIT 1", kResetColumns,
                                         Table("stream_resets"), where_and_order),
                             params));
  if (rows.empty()) return std::nullopt;
  BIZON_ASSIGN_OR_RETURN(StreamReset reset, ReadReset(rows.front()));
  return reset;
}

Result<std::optional<StreamReset>> DuckdbBackend::GetPendingStreamReset(const StreamKey& key) {
  return QueryReset(
      fmt::format("{} AND consumed_at IS NULL ORDER BY requested_at DESC, rowid DESC", kWhereKey),
      KeyParams(key));
}

Result<std::optional<StreamReset>> DuckdbBackend::GetStreamResetByJobId(std::string_view job_id) {
  return QueryReset("WHERE consumed_by_job_id = $1 ORDER BY consumed_at DESC, rowid DESC",
                    {std::string(job_id)});
}

Status DuckdbBackend::ConsumeStreamReset(std::string_view reset_id, std::string_view job_id) {
  // Only a pending reset can be consumed, so two runs racing for one reset cannot both take it.
  BIZON_ASSIGN_OR_RETURN(
      DuckRows changed,
      Run(fmt::format("UPDATE {} SET consumed_at = $1, consumed_by_job_id = $2"
                      " WHERE id = $3 AND consumed_at IS NULL",
                      Table("stream_resets")),
          {FormatSqlTimestamp(NowMicros()), std::string(job_id), std::string(reset_id)}));
  if (Changed(changed) != 0) return Status::Ok();
  // Nothing changed: tell a retry of our own success apart from losing the race.
  BIZON_ASSIGN_OR_RETURN(std::optional<StreamReset> reset,
                         QueryReset("WHERE id = $1", {std::string(reset_id)}));
  return UnchangedResetOutcome(reset, job_id, reset_id);
}

Result<int64_t> DuckdbBackend::CancelPendingStreamResets(const StreamKey& key) {
  // A cancelled reset is one consumed by no job (consumed_at set, consumed_by_job_id NULL).
  std::vector<DuckParam> params = KeyParams(key);
  params.emplace_back(FormatSqlTimestamp(NowMicros()));
  BIZON_ASSIGN_OR_RETURN(
      DuckRows changed, Run(fmt::format("UPDATE {} SET consumed_at = $4 {} AND consumed_at IS NULL",
                                        Table("stream_resets"), kWhereKey),
                            params));
  return Changed(changed);
}

}  // namespace bizon
