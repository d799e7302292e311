#include "engine/backend/bigquery_backend.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <span>
#include <utility>

#include "bizon/clock.h"
#include "engine/backend/backend_support.h"
#include "engine/backend/original_state.h"
#include "engine/backend/stored_pagination.h"

namespace bizon {
namespace {

// ---------------------------------------------------------------------------------------------
// Migrations. `{d}` stands for `project.dataset.` (backticked per table by Qualify()). Every
// statement is idempotent, since BigQuery cannot run a migration and its version bump in one
// transaction: a migrator that dies half-way, or two that run at once, apply it again harmlessly.

// Version 1: the original bizon's four tables and its column names, in BigQuery types
// (SQLAlchemy's String/Text -> STRING, Integer -> INT64, Boolean -> BOOL, DateTime -> DATETIME).
// IF NOT EXISTS adopts the tables the Python bizon created.
constexpr std::string_view kMigration1[] = {
    R"sql(CREATE TABLE IF NOT EXISTS {d:stream_jobs} (
      id STRING NOT NULL,
      name STRING NOT NULL,
      source_name STRING NOT NULL,
      stream_name STRING NOT NULL,
      sync_mode STRING NOT NULL,
      attempt INT64,
      total_records_to_fetch INT64,
      created_at DATETIME NOT NULL,
      updated_at DATETIME,
      incremental_state STRING,
      status STRING,
      error_message STRING))sql",
    R"sql(CREATE TABLE IF NOT EXISTS {d:source_cursors} (
      id STRING NOT NULL,
      job_id STRING NOT NULL,
      name STRING NOT NULL,
      source_name STRING NOT NULL,
      stream_name STRING NOT NULL,
      iteration INT64 NOT NULL,
      rows_fetched INT64 NOT NULL,
      next_pagination STRING,
      attempt INT64,
      status STRING,
      error_message STRING,
      created_at DATETIME NOT NULL,
      updated_at DATETIME))sql",
    R"sql(CREATE TABLE IF NOT EXISTS {d:destination_cursors} (
      id STRING NOT NULL,
      job_id STRING NOT NULL,
      name STRING NOT NULL,
      source_name STRING NOT NULL,
      stream_name STRING NOT NULL,
      destination_name STRING NOT NULL,
      from_source_iteration INT64 NOT NULL,
      to_source_iteration INT64 NOT NULL,
      rows_written INT64 NOT NULL,
      success BOOL NOT NULL,
      attempt INT64,
      error_message STRING,
      created_at DATETIME NOT NULL,
      updated_at DATETIME,
      pagination STRING))sql",
    R"sql(CREATE TABLE IF NOT EXISTS {d:stream_resets} (
      id STRING NOT NULL,
      name STRING NOT NULL,
      source_name STRING NOT NULL,
      stream_name STRING NOT NULL,
      requested_at DATETIME NOT NULL,
      consumed_at DATETIME,
      consumed_by_job_id STRING))sql",
};

// Version 2: our columns (as the other backends' versions 2 and 3), an insertion order where
// PostgreSQL has an identity column (its default covers rows the original inserts), and the run
// lock table.
constexpr std::string_view kMigration2[] = {
    "ALTER TABLE {d:stream_jobs} ADD COLUMN IF NOT EXISTS owner STRING",
    "ALTER TABLE {d:destination_cursors} ADD COLUMN IF NOT EXISTS destination_state STRING",
    "ALTER TABLE {d:destination_cursors} ADD COLUMN IF NOT EXISTS source_exhausted BOOL",
    "ALTER TABLE {d:stream_jobs} ADD COLUMN IF NOT EXISTS insert_order INT64",
    "ALTER TABLE {d:destination_cursors} ADD COLUMN IF NOT EXISTS insert_order INT64",
    "ALTER TABLE {d:stream_resets} ADD COLUMN IF NOT EXISTS insert_order INT64",
    ("ALTER TABLE {d:stream_jobs} ALTER COLUMN insert_order"
     " SET DEFAULT (UNIX_MICROS(CURRENT_TIMESTAMP()) * 1000)"),
    ("ALTER TABLE {d:destination_cursors} ALTER COLUMN insert_order"
     " SET DEFAULT (UNIX_MICROS(CURRENT_TIMESTAMP()) * 1000)"),
    ("ALTER TABLE {d:stream_resets} ALTER COLUMN insert_order"
     " SET DEFAULT (UNIX_MICROS(CURRENT_TIMESTAMP()) * 1000)"),
    R"sql(CREATE TABLE IF NOT EXISTS {d:bizon_run_locks} (
      name STRING NOT NULL,
      source_name STRING NOT NULL,
      stream_name STRING NOT NULL,
      owner STRING,
      token STRING,
      acquired_at DATETIME,
      heartbeat_at DATETIME))sql",
};

constexpr std::span<const std::string_view> kMigrations[] = {kMigration1, kMigration2};

constexpr std::string_view kCreateVersionTable =
    "CREATE TABLE IF NOT EXISTS {d:bizon_schema_version} (id INT64 NOT NULL, version INT64 NOT "
    "NULL)";

template <typename T>
Status StatusOf(const Result<T>& result) {
  return result ? Status::Ok() : result.error();
}

// Project ids: letters, digits, '-', and the domain-scoped forms' '.' and ':'; dataset ids:
// letters, digits and '_'. Anything else would change the statement around the backticks.
bool IsProjectId(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == ':';
    if (!ok) return false;
  }
  return true;
}

bool IsDatasetId(std::string_view id) {
  if (id.empty() || id.size() > 1024) return false;
  for (char c : id) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

BigQueryParameter DateTime(std::string name, std::optional<int64_t> micros) {
  BigQueryParameter out{.name = std::move(name), .type = "DATETIME"};
  if (micros) out.value = FormatSqlTimestamp(*micros);
  return out;
}

BigQueryParameter String(std::string name, std::optional<std::string_view> value) {
  return BigQueryParameter::String(
      std::move(name), value ? std::optional<std::string>(std::string(*value)) : std::nullopt);
}

// Later inserts sort after earlier ones within this process, and near the server's default for
// rows the original inserts.
int64_t NextInsertOrder() {
  static std::atomic<int64_t> last{0};
  int64_t candidate = NowMicros() * 1000;
  int64_t previous = last.load();
  while (true) {
    int64_t next = std::max(candidate, previous + 1);
    if (last.compare_exchange_weak(previous, next)) return next;
  }
}

/// Empty paginations are stored as NULL (stored_pagination.h).
std::optional<std::string> PaginationForStorage(std::optional<std::string_view> json) {
  if (!json.has_value() || IsEmptyPagination(*json)) return std::nullopt;
  return std::string(*json);
}

std::optional<std::string> OptionalText(const Value& cell) {
  if (cell.is_null()) return std::nullopt;
  return cell.is_string() ? cell.AsString() : cell.ToDisplayString();
}

std::string Text(const Value& cell) { return OptionalText(cell).value_or(""); }

std::optional<int64_t> OptionalInt(const Value& cell) {
  if (cell.is_null()) return std::nullopt;
  if (cell.is_integer()) return cell.AsInteger();
  std::string text = Text(cell);
  int64_t out = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return out;
}

int64_t Int(const Value& cell) { return OptionalInt(cell).value_or(0); }

bool Bool(const Value& cell) {
  if (cell.is_bool()) return cell.AsBool();
  std::string text = Text(cell);
  return text == "true" || text == "TRUE" || text == "1";
}

std::string Micros(std::string_view column) {
  return fmt::format("UNIX_MICROS(TIMESTAMP({0})) AS {0}_us", column);
}

std::string JobColumns() {
  return fmt::format(
      "id, name, source_name, stream_name, sync_mode, total_records_to_fetch, {}, {},"
      " incremental_state, status, error_message, owner",
      Micros("created_at"), Micros("updated_at"));
}

Result<StreamJob> ReadJob(const BigQueryQueryResult& rows, size_t row) {
  auto cell = [&](std::string_view column) -> const Value& { return rows.Cell(row, column); };
  StreamJob job;
  job.id = Text(cell("id"));
  job.key = {Text(cell("name")), Text(cell("source_name")), Text(cell("stream_name"))};
  job.sync_mode = Text(cell("sync_mode"));
  job.total_records_to_fetch = OptionalInt(cell("total_records_to_fetch"));
  job.created_at_us = Int(cell("created_at_us"));
  job.updated_at_us = OptionalInt(cell("updated_at_us")).value_or(job.created_at_us);
  job.incremental_state = OptionalText(cell("incremental_state"));
  std::string status = OptionalText(cell("status")).value_or("started");
  Result<JobStatus> parsed = ParseJobStatus(status);
  if (!parsed.has_value()) {
    return Fail(
        BackendError(StatusCode::kDataLoss,
                     fmt::format("a stored stream job has an unknown status: '{}'", status)));
  }
  job.status = *parsed;
  job.error_message = OptionalText(cell("error_message"));
  job.owner = OptionalText(cell("owner")).value_or("");
  return job;
}

std::string ResetColumns() {
  return fmt::format("id, name, source_name, stream_name, {}, {}, consumed_by_job_id",
                     Micros("requested_at"), Micros("consumed_at"));
}

StreamReset ReadReset(const BigQueryQueryResult& rows, size_t row) {
  auto cell = [&](std::string_view column) -> const Value& { return rows.Cell(row, column); };
  StreamReset reset;
  reset.id = Text(cell("id"));
  reset.key = {Text(cell("name")), Text(cell("source_name")), Text(cell("stream_name"))};
  reset.requested_at_us = Int(cell("requested_at_us"));
  reset.consumed_at_us = OptionalInt(cell("consumed_at_us"));
  reset.consumed_by_job_id = OptionalText(cell("consumed_by_job_id"));
  return reset;
}

constexpr std::string_view kWhereKey =
    "WHERE name = @name AND source_name = @source_name AND stream_name = @stream_name";

std::vector<BigQueryParameter> KeyParams(const StreamKey& key) {
  return {BigQueryParameter::String("name", key.name),
          BigQueryParameter::String("source_name", key.source_name),
          BigQueryParameter::String("stream_name", key.stream_name)};
}

std::string LockDescription(const StreamKey& key) {
  return fmt::format("pipeline '{}' ({}.{})", key.name, key.source_name, key.stream_name);
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

std::string ThisOwner() { return fmt::format("{}@{}", getpid(), HostName()); }

/// False only when `owner` ("pid@host") is a process of this host that no longer exists.
bool MayBeAlive(const std::string& owner) {
  size_t at = owner.find('@');
  if (at == std::string::npos || owner.substr(at + 1) != HostName()) return true;
  pid_t pid = static_cast<pid_t>(std::strtol(owner.substr(0, at).c_str(), nullptr, 10));
  if (pid <= 0) return true;
  return kill(pid, 0) == 0 || errno == EPERM;
}

}  // namespace

// -----------------------------------------------------------------------------------------------
// Opening.

Result<std::unique_ptr<BigQueryBackend>> BigQueryBackend::Open(BigQueryBackendOptions options) {
  if (!IsProjectId(options.project)) {
    return Fail(InvalidArgumentError(fmt::format(
        "engine.backend.config.database must be a GCP project id (letters, digits, '-', '.', "
        "':') for the bigquery backend: '{}'",
        options.project)));
  }
  if (!IsDatasetId(options.dataset)) {
    return Fail(InvalidArgumentError(fmt::format(
        "engine.backend.config.schema must be a BigQuery dataset id (letters, digits, '_') for "
        "the bigquery backend: '{}'",
        options.dataset)));
  }
  BigQueryClientOptions client = options.client;
  client.project = options.project;
  client.location = options.location;
  if (!options.service_account_key.empty() && !client.credentials &&
      !BigQueryEmulatorEndpoint(client.env)) {
    auto credentials =
        MakeGoogleCredentials({.inline_key = options.service_account_key,
                               .inline_key_origin = options.service_account_key_origin,
                               .scopes = {std::string(kBigQueryScope)},
                               .sleep = client.sleep,
                               .env = client.env});
    if (!credentials) return Fail(credentials.error());
    client.credentials = std::move(*credentials);
  }
  auto made = BigQueryClient::Make(std::move(client));
  if (!made) return Fail(std::move(made.error()).WithFailureClass(FailureClass::kBackend));
  return std::unique_ptr<BigQueryBackend>(
      new BigQueryBackend(std::move(options), std::move(*made)));
}

Result<std::unique_ptr<BigQueryBackend>> BigQueryBackend::OpenFromConfig(const Value& backend) {
  const Value* config = backend.Find("config");
  if (config == nullptr || !config->is_map()) {
    return Fail(InvalidArgumentError("the bigquery backend needs engine.backend.config"));
  }
  BigQueryBackendOptions options{.project = config->Find("database") != nullptr
                                                ? config->Find("database")->ToDisplayString()
                                                : "",
                                 .dataset = config->GetString("schema"),
                                 .create_schema = config->GetBool("create_schema", false),
                                 .location = config->GetString("schema_location"),
                                 .service_account_key = config->GetString("service_account_key")};
  if (const Value* key = config->Find("service_account_key"); key != nullptr && key->is_map()) {
    options.service_account_key = key->ToJson();  // Written as a YAML mapping.
  }
  return Open(std::move(options));
}

BigQueryBackend::BigQueryBackend(BigQueryBackendOptions options,
                                 std::unique_ptr<BigQueryClient> client)
    : options_(std::move(options)), client_(std::move(client)) {}

// A mutex or a join that throws here means the process is broken: terminating is right.
// NOLINTNEXTLINE(bugprone-exception-escape)
BigQueryBackend::~BigQueryBackend() {
  {
    std::lock_guard guard(lock_mutex_);
    stopping_ = true;
  }
  lock_wakeup_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  ReleaseRunLocks();
}

std::string BigQueryBackend::Table(std::string_view name) const {
  return fmt::format("`{}.{}.{}`", options_.project, options_.dataset, name);
}

Result<BigQueryQueryResult> BigQueryBackend::Run(std::string_view what, std::string sql,
                                                 std::vector<BigQueryParameter> parameters) {
  // `{d:name}` -> the backticked table.
  std::string expanded;
  expanded.reserve(sql.size() + 64);
  for (size_t i = 0; i < sql.size(); ++i) {
    if (sql.compare(i, 3, "{d:") == 0) {
      size_t end = sql.find('}', i);
      expanded += Table(std::string_view(sql).substr(i + 3, end - i - 3));
      i = end;
    } else {
      expanded.push_back(sql[i]);
    }
  }
  auto result =
      client_->RunQuery({.job_id = BigQueryClient::RandomJobId("bizon_state")},
                        {.query = std::move(expanded), .parameters = std::move(parameters)});
  if (!result) {
    return Fail(Status(result.error().code(),
                       fmt::format("BigQuery backend could not {} (dataset {}.{}): {}", what,
                                   options_.project, options_.dataset, result.error().message()),
                       FailureClass::kBackend));
  }
  return result;
}

Result<int64_t> BigQueryBackend::Dml(std::string_view what, std::string sql,
                                     std::vector<BigQueryParameter> parameters) {
  BIZON_ASSIGN_OR_RETURN(BigQueryQueryResult result,
                         Run(what, std::move(sql), std::move(parameters)));
  return result.num_dml_affected_rows.value_or(0);
}

// -----------------------------------------------------------------------------------------------
// Schema.

int BigQueryBackend::LatestSchemaVersion() { return static_cast<int>(std::size(kMigrations)); }

Status BigQueryBackend::EnsureDataset() {
  auto dataset = client_->GetDataset(options_.project, options_.dataset);
  if (dataset) return Status::Ok();
  if (dataset.error().code() != StatusCode::kNotFound) {
    return BackendError(dataset.error().code(),
                        fmt::format("BigQuery backend could not read dataset {}.{}: {}",
                                    options_.project, options_.dataset, dataset.error().message()));
  }
  if (!options_.create_schema) {
    return BackendError(
        StatusCode::kFailedPrecondition,
        fmt::format("Schema or dataset {}.{} does not exist in the database, you need to create "
                    "it first (or set engine.backend.config.create_schema: true).",
                    options_.project, options_.dataset));
  }
  auto created = client_->InsertDataset(
      {.project = options_.project, .dataset = options_.dataset, .location = options_.location},
      /*exists_ok=*/true);
  if (!created) {
    return BackendError(created.error().code(),
                        fmt::format("BigQuery backend could not create dataset {}.{}: {}",
                                    options_.project, options_.dataset, created.error().message()));
  }
  spdlog::info("Backend: created BigQuery dataset {}.{}{}", options_.project, options_.dataset,
               options_.location.empty() ? "" : " in " + options_.location);
  return Status::Ok();
}

Result<int> BigQueryBackend::SchemaVersion() {
  auto table = client_->GetTable(
      {.project = options_.project, .dataset = options_.dataset, .table = "bizon_schema_version"});
  if (!table) {
    if (table.error().code() == StatusCode::kNotFound) return 0;
    return Fail(BackendError(table.error().code(), table.error().message()));
  }
  BIZON_ASSIGN_OR_RETURN(BigQueryQueryResult rows,
                         Run("read the schema version",
                             "SELECT MAX(version) AS version FROM {d:bizon_schema_version}"));
  return static_cast<int>(rows.rows.empty() ? 0 : Int(rows.Cell(0, "version")));
}

Status BigQueryBackend::Migrate() {
  BIZON_RETURN_IF_ERROR(EnsureDataset());
  BIZON_ASSIGN_OR_RETURN(int version, SchemaVersion());
  if (version < LatestSchemaVersion()) {
    BIZON_RETURN_IF_ERROR(
        StatusOf(Run("create the schema version table", std::string(kCreateVersionTable))));
    // The single row, inserted once even when two migrators race (both may insert: MAX() reads
    // through duplicates, and the UPDATE below moves them all).
    BIZON_RETURN_IF_ERROR(StatusOf(Run("initialise the schema version",
                                       "INSERT INTO {d:bizon_schema_version} (id, version)"
                                       " SELECT 1, 0 FROM (SELECT 1) WHERE NOT EXISTS"
                                       " (SELECT 1 FROM {d:bizon_schema_version})")));
  }
  while (version < LatestSchemaVersion()) {
    for (std::string_view sql : kMigrations[version]) {
      BIZON_RETURN_IF_ERROR(StatusOf(Run("apply a schema migration", std::string(sql))));
    }
    BIZON_RETURN_IF_ERROR(StatusOf(Dml("record the schema version",
                                       "UPDATE {d:bizon_schema_version} SET version = @next"
                                       " WHERE version < @next",
                                       {BigQueryParameter::Int64("next", version + 1)})));
    ++version;
  }
  if (version > LatestSchemaVersion()) {
    return BackendError(
        StatusCode::kFailedPrecondition,
        fmt::format("the bigquery backend dataset is newer than this bizon supports; upgrade "
                    "bizon (dataset, version, supported version): {}.{}, {}, {}",
                    options_.project, options_.dataset, version, LatestSchemaVersion()));
  }
  return Status::Ok();
}

// -----------------------------------------------------------------------------------------------
// Run lock.

Status BigQueryBackend::AcquireRunLock(const StreamKey& key) {
  {
    std::lock_guard guard(lock_mutex_);
    for (const HeldLock& held : run_locks_) {
      if (held.key.name == key.name && held.key.source_name == key.source_name &&
          held.key.stream_name == key.stream_name) {
        return Status::Ok();
      }
    }
  }
  // The stream's row, made once (a duplicate from a race is harmless: every statement below
  // moves all of the key's rows at once).
  std::vector<BigQueryParameter> key_params = KeyParams(key);
  BIZON_RETURN_IF_ERROR(
      StatusOf(Run("create the run lock row",
                   fmt::format("INSERT INTO {{d:bizon_run_locks}} (name, source_name,"
                               " stream_name) SELECT @name, @source_name, @stream_name"
                               " FROM (SELECT 1) WHERE NOT EXISTS (SELECT 1 FROM"
                               " {{d:bizon_run_locks}} {})",
                               kWhereKey),
                   key_params)));
  BIZON_ASSIGN_OR_RETURN(
      BigQueryQueryResult holder,
      Run("read the run lock",
          fmt::format("SELECT owner, token, UNIX_MICROS(TIMESTAMP(heartbeat_at)) AS heartbeat_us"
                      " FROM {{d:bizon_run_locks}} {} ORDER BY token IS NULL, heartbeat_at DESC"
                      " LIMIT 1",
                      kWhereKey),
          key_params));
  std::optional<std::string> token =
      holder.rows.empty() ? std::nullopt : OptionalText(holder.Cell(0, "token"));
  std::string condition = "token IS NULL";
  std::vector<BigQueryParameter> params = key_params;
  if (token) {
    std::string owner = Text(holder.Cell(0, "owner"));
    double age_s =
        static_cast<double>(NowMicros() - Int(holder.Cell(0, "heartbeat_us"))) / 1000000.0;
    bool gone = !MayBeAlive(owner) || age_s > options_.lock_lease_s;
    if (!gone) {
      return BackendError(
          StatusCode::kFailedPrecondition,
          fmt::format("another run of {} is in progress: it holds the BigQuery run lock in {}.{} "
                      "(owner {}, renewed {:.0f} s ago); wait for it to finish or stop it",
                      LockDescription(key), options_.project, options_.dataset, owner, age_s));
    }
    spdlog::warn(
        "Backend: taking over the run lock of {} from {}, which is gone (last renewed {:.0f} s "
        "ago)",
        LockDescription(key), owner, age_s);
    condition = "token = @previous_token";
    params.push_back(BigQueryParameter::String("previous_token", token));
  }
  std::string mine = NewUuidHex();
  params.push_back(BigQueryParameter::String("token", mine));
  params.push_back(BigQueryParameter::String("owner", ThisOwner()));
  params.push_back(DateTime("now", NowMicros()));
  // The one statement that decides: of two runs racing, one updates the row(s) and the other
  // finds its condition false (or fails on BigQuery's concurrent-update check).
  auto taken = Dml("take the run lock",
                   fmt::format("UPDATE {{d:bizon_run_locks}} SET owner = @owner, token = @token,"
                               " acquired_at = @now, heartbeat_at = @now {} AND {}",
                               kWhereKey, condition),
                   params);
  if (!taken || *taken == 0) {
    return BackendError(
        StatusCode::kFailedPrecondition,
        fmt::format("another run of {} took the BigQuery run lock in {}.{} at the same time{}",
                    LockDescription(key), options_.project, options_.dataset,
                    taken ? "" : ": " + taken.error().message()));
  }
  std::lock_guard guard(lock_mutex_);
  run_locks_.push_back({key, mine});
  if (!heartbeat_.joinable()) heartbeat_ = std::thread([this] { Heartbeat(); });
  return Status::Ok();
}

void BigQueryBackend::Heartbeat() {
  std::unique_lock guard(lock_mutex_);
  auto period = std::chrono::duration<double>(options_.lock_heartbeat_s);
  while (!lock_wakeup_.wait_for(guard, period, [this] { return stopping_; })) {
    std::vector<HeldLock> held = run_locks_;
    guard.unlock();
    for (const HeldLock& lock : held) {
      std::vector<BigQueryParameter> params = KeyParams(lock.key);
      params.push_back(BigQueryParameter::String("token", lock.token));
      params.push_back(DateTime("now", NowMicros()));
      auto renewed = Dml("renew the run lock",
                         fmt::format("UPDATE {{d:bizon_run_locks}} SET heartbeat_at = @now {} AND"
                                     " token = @token",
                                     kWhereKey),
                         params);
      if (renewed && *renewed == 0) {
        spdlog::error("Backend: the BigQuery run lock of {} was taken by another run",
                      LockDescription(lock.key));
        std::lock_guard lost(lock_mutex_);
        lost_lock_ = fmt::format("lost the BigQuery run lock of {} to another run",
                                 LockDescription(lock.key));
      } else if (!renewed) {
        spdlog::warn("Backend: could not renew the BigQuery run lock of {}: {}",
                     LockDescription(lock.key), renewed.error().message());
      }
    }
    guard.lock();
  }
}

void BigQueryBackend::ReleaseRunLocks() {
  std::vector<HeldLock> held;
  {
    std::lock_guard guard(lock_mutex_);
    held.swap(run_locks_);
  }
  for (const HeldLock& lock : held) {
    std::vector<BigQueryParameter> params = KeyParams(lock.key);
    params.push_back(BigQueryParameter::String("token", lock.token));
    auto released = Dml("release the run lock",
                        fmt::format("UPDATE {{d:bizon_run_locks}} SET owner = NULL, token = NULL,"
                                    " heartbeat_at = NULL {} AND token = @token",
                                    kWhereKey),
                        params);
    if (!released) {
      // The next run takes it over once the lease has run out, or at once on this host.
      spdlog::warn("Backend: could not release the BigQuery run lock of {}: {}",
                   LockDescription(lock.key), released.error().message());
    }
  }
}

// -----------------------------------------------------------------------------------------------
// Jobs.

Status BigQueryBackend::UpdateJob(std::string_view set_clause, std::string_view what,
                                  std::string_view job_id,
                                  std::vector<BigQueryParameter> parameters) {
  {
    std::lock_guard guard(lock_mutex_);
    if (lost_lock_) return BackendError(StatusCode::kAborted, *lost_lock_);
  }
  parameters.push_back(String("job_id", job_id));
  BIZON_ASSIGN_OR_RETURN(
      int64_t updated,
      Dml(what, fmt::format("UPDATE {{d:stream_jobs}} SET {} WHERE id = @job_id", set_clause),
          std::move(parameters)));
  if (updated == 0) {
    return BackendError(StatusCode::kNotFound,
                        fmt::format("no stream job has this id: {}", job_id));
  }
  return Status::Ok();
}

Result<StreamJob> BigQueryBackend::CreateStreamJob(const StreamKey& key, std::string_view sync_mode,
                                                   std::optional<int64_t> total_records,
                                                   std::string_view owner) {
  StreamJob job = NewStreamJob(key, sync_mode, total_records, owner);
  std::vector<BigQueryParameter> params = KeyParams(key);
  params.push_back(BigQueryParameter::String("id", job.id));
  params.push_back(String("sync_mode", sync_mode));
  params.push_back(BigQueryParameter::Int64("total", total_records));
  params.push_back(DateTime("now", job.created_at_us));
  params.push_back(BigQueryParameter::String("status", std::string(ToString(job.status))));
  params.push_back(String("owner", owner));
  params.push_back(BigQueryParameter::Int64("insert_order", NextInsertOrder()));
  BIZON_RETURN_IF_ERROR(StatusOf(
      Run("insert the stream job",
          "INSERT INTO {d:stream_jobs} (id, name, source_name, stream_name, sync_mode, attempt,"
          " total_records_to_fetch, created_at, updated_at, status, owner, insert_order)"
          " VALUES (@id, @name, @source_name, @stream_name, @sync_mode, 0, @total, @now, @now,"
          " @status, @owner, @insert_order)",
          std::move(params))));
  return job;
}

Status BigQueryBackend::UpdateStreamJobStatus(std::string_view job_id, JobStatus status,
                                              std::optional<std::string> error_message) {
  return UpdateJob(
      "status = @status, error_message = @error, updated_at = @now", "update the stream job status",
      job_id,
      {BigQueryParameter::String("status", std::string(ToString(status))),
       BigQueryParameter::String("error", std::move(error_message)), DateTime("now", NowMicros())});
}

Status BigQueryBackend::SetIncrementalState(std::string_view job_id, std::string_view state_json) {
  return UpdateJob("incremental_state = @state, updated_at = @now", "store the incremental state",
                   job_id, {String("state", state_json), DateTime("now", NowMicros())});
}

Status BigQueryBackend::SetJobOwner(std::string_view job_id, std::string_view owner) {
  return UpdateJob("owner = @owner, updated_at = @now", "update the stream job owner", job_id,
                   {String("owner", owner), DateTime("now", NowMicros())});
}

Result<std::optional<StreamJob>> BigQueryBackend::QueryJob(
    std::string_view where_and_order, std::string_view what,
    std::vector<BigQueryParameter> parameters) {
  BIZON_ASSIGN_OR_RETURN(
      BigQueryQueryResult rows,
      Run(what,
          fmt::format("SELECT {} FROM {{d:stream_jobs}} {} LIMIT 1", JobColumns(), where_and_order),
          std::move(parameters)));
  if (rows.rows.empty()) return std::nullopt;
  BIZON_ASSIGN_OR_RETURN(StreamJob job, ReadJob(rows, 0));
  return job;
}

Result<std::optional<StreamJob>> BigQueryBackend::GetStreamJobById(std::string_view job_id) {
  return QueryJob("WHERE id = @job_id", "read the stream job", {String("job_id", job_id)});
}

Result<std::optional<StreamJob>> BigQueryBackend::NewestJobIn(const StreamKey& key,
                                                              JobStatus status,
                                                              std::string_view what) {
  std::vector<BigQueryParameter> params = KeyParams(key);
  params.push_back(BigQueryParameter::String("status", std::string(ToString(status))));
  return QueryJob(
      fmt::format("{} AND status = @status ORDER BY created_at DESC, insert_order DESC", kWhereKey),
      what, std::move(params));
}

Result<std::optional<StreamJob>> BigQueryBackend::GetRunningStreamJob(const StreamKey& key) {
  return NewestJobIn(key, JobStatus::kRunning, "read the running stream job");
}

Result<std::optional<StreamJob>> BigQueryBackend::GetStartedStreamJob(const StreamKey& key) {
  return NewestJobIn(key, JobStatus::kStarted, "read the started stream job");
}

Result<std::optional<StreamJob>> BigQueryBackend::GetLastSuccessfulStreamJob(const StreamKey& key) {
  return NewestJobIn(key, JobStatus::kSucceeded, "read the last successful stream job");
}

// -----------------------------------------------------------------------------------------------
// Cursors.

Status BigQueryBackend::CreateSourceCursor(const SourceCursorRow& cursor) {
  std::vector<BigQueryParameter> params = KeyParams(cursor.key);
  params.push_back(BigQueryParameter::String("id", NewUuidHex()));
  params.push_back(BigQueryParameter::String("job_id", cursor.job_id));
  params.push_back(BigQueryParameter::Int64("iteration", cursor.iteration));
  params.push_back(BigQueryParameter::Int64("rows_fetched", cursor.rows_fetched));
  params.push_back(
      BigQueryParameter::String("pagination", PaginationForStorage(cursor.next_pagination)));
  params.push_back(DateTime("now", NowMicros()));
  // The job must exist (the foreign key of the other backends).
  BIZON_ASSIGN_OR_RETURN(
      int64_t inserted,
      Dml("insert the source cursor",
          "INSERT INTO {d:source_cursors} (id, job_id, name, source_name, stream_name, iteration,"
          " rows_fetched, next_pagination, attempt, status, created_at, updated_at)"
          " SELECT @id, @job_id, @name, @source_name, @stream_name, @iteration, @rows_fetched,"
          " @pagination, 0, 'pulling', @now, @now FROM (SELECT 1)"
          " WHERE EXISTS (SELECT 1 FROM {d:stream_jobs} WHERE id = @job_id)",
          std::move(params)));
  if (inserted == 0) {
    return BackendError(
        StatusCode::kFailedPrecondition,
        fmt::format("cannot insert a source cursor: no stream job has this id: {}", cursor.job_id));
  }
  return Status::Ok();
}

Status BigQueryBackend::CreateDestinationCursor(const DestinationCursor& cursor) {
  {
    std::lock_guard guard(lock_mutex_);
    if (lost_lock_) return BackendError(StatusCode::kAborted, *lost_lock_);
  }
  std::optional<std::string> pagination;
  if (cursor.pagination.has_value()) pagination = PaginationForStorage(*cursor.pagination);
  std::vector<BigQueryParameter> params = KeyParams(cursor.key);
  params.push_back(BigQueryParameter::String("id", cursor.id.empty() ? NewUuidHex() : cursor.id));
  params.push_back(BigQueryParameter::String("job_id", cursor.job_id));
  params.push_back(BigQueryParameter::String("destination_name", cursor.destination_name));
  params.push_back(BigQueryParameter::Int64("from_iteration", cursor.from_source_iteration));
  params.push_back(BigQueryParameter::Int64("to_iteration", cursor.to_source_iteration));
  params.push_back(BigQueryParameter::Int64("rows_written", cursor.rows_written));
  params.push_back(BigQueryParameter::Bool("success", cursor.success));
  params.push_back(BigQueryParameter::String("error", cursor.error_message));
  params.push_back(DateTime("now", cursor.created_at_us != 0 ? cursor.created_at_us : NowMicros()));
  params.push_back(BigQueryParameter::String("pagination", pagination));
  params.push_back(BigQueryParameter::String("destination_state", cursor.destination_state));
  params.push_back(BigQueryParameter::Bool("source_exhausted", !pagination.has_value()));
  params.push_back(BigQueryParameter::Int64("insert_order", NextInsertOrder()));
  BIZON_ASSIGN_OR_RETURN(
      int64_t inserted,
      Dml("insert the destination cursor",
          "INSERT INTO {d:destination_cursors} (id, job_id, name, source_name, stream_name,"
          " destination_name, from_source_iteration, to_source_iteration, rows_written, success,"
          " attempt, error_message, created_at, updated_at, pagination, destination_state,"
          " source_exhausted, insert_order)"
          " SELECT @id, @job_id, @name, @source_name, @stream_name, @destination_name,"
          " @from_iteration, @to_iteration, @rows_written, @success, 0, @error, @now, @now,"
          " @pagination, @destination_state, @source_exhausted, @insert_order FROM (SELECT 1)"
          " WHERE EXISTS (SELECT 1 FROM {d:stream_jobs} WHERE id = @job_id)",
          std::move(params)));
  if (inserted == 0) {
    return BackendError(StatusCode::kFailedPrecondition,
                        fmt::format("cannot insert a destination cursor: no stream job has this "
                                    "id: {}",
                                    cursor.job_id));
  }
  return Status::Ok();
}

Result<std::optional<DestinationCursor>> BigQueryBackend::GetLastDestinationCursor(
    std::string_view job_id) {
  // As the other backends: a cursor the original's stream runner wrote (no pagination, no
  // source_exhausted) continues the stream with the empty pagination, and a stream job's newest
  // cursor is its position.
  BIZON_ASSIGN_OR_RETURN(
      BigQueryQueryResult rows,
      Run("read the last destination cursor",
          fmt::format(
              "SELECT c.id, c.job_id, c.name, c.source_name, c.stream_name, c.destination_name,"
              " c.from_source_iteration, c.to_source_iteration, c.rows_written, c.success,"
              " CASE WHEN c.pagination IS NULL AND c.source_exhausted IS NULL AND j.sync_mode ="
              " 'stream' THEN '{{}}' ELSE c.pagination END AS pagination, c.destination_state,"
              " c.error_message, UNIX_MICROS(TIMESTAMP(c.created_at)) AS created_at_us,"
              " (c.source_exhausted IS NULL AND c.destination_state IS NULL) AS original"
              " FROM {{d:destination_cursors}} c JOIN {{d:stream_jobs}} j ON j.id = c.job_id"
              " WHERE c.job_id = @job_id AND c.success ORDER BY CASE WHEN j.sync_mode = 'stream'"
              " THEN c.insert_order ELSE c.to_source_iteration END DESC, c.created_at DESC,"
              " c.insert_order DESC LIMIT 1"),
          {String("job_id", job_id)}));
  if (rows.rows.empty()) return std::nullopt;
  auto cell = [&](std::string_view column) -> const Value& { return rows.Cell(0, column); };
  DestinationCursor cursor;
  cursor.id = Text(cell("id"));
  cursor.job_id = Text(cell("job_id"));
  cursor.key = {Text(cell("name")), Text(cell("source_name")), Text(cell("stream_name"))};
  cursor.destination_name = Text(cell("destination_name"));
  cursor.from_source_iteration = Int(cell("from_source_iteration"));
  cursor.to_source_iteration = Int(cell("to_source_iteration"));
  cursor.rows_written = Int(cell("rows_written"));
  cursor.success = Bool(cell("success"));
  cursor.pagination = OptionalText(cell("pagination"));
  cursor.destination_state = OptionalText(cell("destination_state"));
  cursor.error_message = OptionalText(cell("error_message"));
  cursor.created_at_us = Int(cell("created_at_us"));
  if (Bool(cell("original"))) cursor.destination_state = std::string(kOriginalCursorState);
  return cursor;
}

Result<int64_t> BigQueryBackend::GetWrittenRowCount(std::string_view job_id) {
  BIZON_ASSIGN_OR_RETURN(BigQueryQueryResult rows,
                         Run("count the written rows",
                             "SELECT COALESCE(SUM(rows_written), 0) AS n FROM"
                             " {d:destination_cursors} WHERE job_id = @job_id AND success",
                             {String("job_id", job_id)}));
  return rows.rows.empty() ? 0 : Int(rows.Cell(0, "n"));
}

// -----------------------------------------------------------------------------------------------
// Resets.

Result<std::optional<StreamReset>> BigQueryBackend::QueryReset(
    std::string_view where_and_order, std::string_view what,
    std::vector<BigQueryParameter> parameters) {
  BIZON_ASSIGN_OR_RETURN(BigQueryQueryResult rows,
                         Run(what,
                             fmt::format("SELECT {} FROM {{d:stream_resets}} {} LIMIT 1",
                                         ResetColumns(), where_and_order),
                             std::move(parameters)));
  if (rows.rows.empty()) return std::nullopt;
  return ReadReset(rows, 0);
}

Result<StreamReset> BigQueryBackend::CreateStreamReset(const StreamKey& key) {
  StreamReset reset;
  reset.id = NewUuidHex();
  reset.key = key;
  reset.requested_at_us = NowMicros();
  std::vector<BigQueryParameter> params = KeyParams(key);
  params.push_back(BigQueryParameter::String("id", reset.id));
  params.push_back(DateTime("now", reset.requested_at_us));
  params.push_back(BigQueryParameter::Int64("insert_order", NextInsertOrder()));
  BIZON_RETURN_IF_ERROR(
      StatusOf(Run("insert the stream reset",
                   "INSERT INTO {d:stream_resets} (id, name, source_name, stream_name,"
                   " requested_at, insert_order) VALUES (@id, @name, @source_name,"
                   " @stream_name, @now, @insert_order)",
                   std::move(params))));
  return reset;
}

Result<std::optional<StreamReset>> BigQueryBackend::GetPendingStreamReset(const StreamKey& key) {
  return QueryReset(
      fmt::format("{} AND consumed_at IS NULL ORDER BY requested_at DESC, insert_order DESC",
                  kWhereKey),
      "read the pending stream reset", KeyParams(key));
}

Result<std::optional<StreamReset>> BigQueryBackend::GetStreamResetByJobId(std::string_view job_id) {
  return QueryReset(
      "WHERE consumed_by_job_id = @job_id ORDER BY consumed_at DESC,"
      " insert_order DESC",
      "read the stream reset of the job", {String("job_id", job_id)});
}

Status BigQueryBackend::ConsumeStreamReset(std::string_view reset_id, std::string_view job_id) {
  // Only a pending reset can be consumed: of two runs racing for it, one statement changes it.
  BIZON_ASSIGN_OR_RETURN(
      int64_t updated,
      Dml("consume the stream reset",
          "UPDATE {d:stream_resets} SET consumed_at = @now,"
          " consumed_by_job_id = @job_id WHERE id = @id AND consumed_at IS NULL",
          {DateTime("now", NowMicros()), String("job_id", job_id), String("id", reset_id)}));
  if (updated != 0) return Status::Ok();
  BIZON_ASSIGN_OR_RETURN(
      std::optional<StreamReset> reset,
      QueryReset("WHERE id = @id", "read the stream reset", {String("id", reset_id)}));
  return UnchangedResetOutcome(reset, job_id, reset_id);
}

Result<int64_t> BigQueryBackend::CancelPendingStreamResets(const StreamKey& key) {
  std::vector<BigQueryParameter> params = KeyParams(key);
  params.push_back(DateTime("now", NowMicros()));
  return Dml("cancel the pending stream resets",
             fmt::format("UPDATE {{d:stream_resets}} SET consumed_at = @now {} AND consumed_at IS"
                         " NULL",
                         kWhereKey),
             std::move(params));
}

}  // namespace bizon
