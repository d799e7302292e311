#include "duckdb/duckdb_client.h"

#include <duckdb.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <utility>

namespace bizon {
namespace {

/// Open file databases by path, so that one process opens each file once.
std::mutex& OpenFilesMutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<std::string, std::weak_ptr<DuckDatabase>>& OpenFiles() {
  static auto* files = new std::map<std::string, std::weak_ptr<DuckDatabase>>();
  return *files;
}

bool InMemory(const std::string& path) { return path.empty() || path == ":memory:"; }

/// The key of a file in OpenFiles(): its absolute path with symlinks, `.` and `..` resolved, so
/// that `x.duckdb` and `./x.duckdb` are one file. DuckDB's own lock does not stop a second open
/// by the same process (POSIX locks belong to the process), which would corrupt the file.
std::string FileKey(const std::string& path) {
  std::error_code error;
  std::filesystem::path canonical = std::filesystem::weakly_canonical(path, error);
  return error ? path : canonical.string();
}

StatusCode CodeFor(int error_type) {
  switch (error_type) {
    case DUCKDB_ERROR_CONSTRAINT:
    case DUCKDB_ERROR_CONVERSION:
    case DUCKDB_ERROR_OUT_OF_RANGE:
    case DUCKDB_ERROR_INVALID_INPUT:
    case DUCKDB_ERROR_MISMATCH_TYPE:
      return StatusCode::kInvalidArgument;
    case DUCKDB_ERROR_TRANSACTION:
      return StatusCode::kAborted;
    case DUCKDB_ERROR_IO:
    case DUCKDB_ERROR_OUT_OF_MEMORY:
      return StatusCode::kUnavailable;
    case DUCKDB_ERROR_CATALOG:
    case DUCKDB_ERROR_BINDER:
    case DUCKDB_ERROR_PERMISSION:
      return StatusCode::kFailedPrecondition;
    default:
      return StatusCode::kInternal;
  }
}

/// Owns a duckdb_result.
struct ResultGuard {
  duckdb_result result{};
  ~ResultGuard() { duckdb_destroy_result(&result); }
};

/// Owns a prepared statement.
struct PreparedGuard {
  duckdb_prepared_statement statement = nullptr;
  ~PreparedGuard() { duckdb_destroy_prepare(&statement); }
};

duckdb_state Bind(duckdb_prepared_statement statement, idx_t index, const DuckParam& param) {
  if (std::holds_alternative<std::nullptr_t>(param)) return duckdb_bind_null(statement, index);
  if (const auto* integer = std::get_if<int64_t>(&param)) {
    return duckdb_bind_int64(statement, index, *integer);
  }
  if (const auto* real = std::get_if<double>(&param)) {
    return duckdb_bind_double(statement, index, *real);
  }
  if (const auto* flag = std::get_if<bool>(&param)) {
    return duckdb_bind_boolean(statement, index, *flag);
  }
  const auto& text = std::get<std::string>(param);
  return duckdb_bind_varchar_length(statement, index, text.data(), text.size());
}

}  // namespace

Result<std::shared_ptr<DuckDatabase>> DuckDatabase::Open(const std::string& path,
                                                         FailureClass failure_class) {
  std::lock_guard lock(OpenFilesMutex());
  if (!InMemory(path)) {
    auto found = OpenFiles().find(FileKey(path));
    if (found != OpenFiles().end()) {
      auto database = found->second.lock();
      if (database && database->opened_by_ == ::getpid()) return database;
    }
  }
  duckdb_database handle = nullptr;
  char* error = nullptr;
  const char* file = InMemory(path) ? nullptr : path.c_str();
  if (duckdb_open_ext(file, &handle, nullptr, &error) != DuckDBSuccess) {
    std::string message = error != nullptr ? error : "unknown error";
    duckdb_free(error);
    // DuckDB lets one process write a file; another one holding it open is the usual cause.
    return Fail(Status(StatusCode::kUnavailable,
                       fmt::format("cannot open DuckDB database {}: {}", path, message),
                       failure_class));
  }
  std::shared_ptr<DuckDatabase> database(new DuckDatabase(path, failure_class, handle));
  if (!InMemory(path)) OpenFiles()[FileKey(path)] = database;
  return database;
}

DuckDatabase::DuckDatabase(std::string path, FailureClass failure_class, _duckdb_database* handle)
    : path_(std::move(path)),
      failure_class_(failure_class),
      handle_(handle),
      opened_by_(::getpid()) {}

DuckDatabase::~DuckDatabase() {
  // A forked child's copy of its parent's handle is left alone: closing it would checkpoint the
  // parent's file from a process that holds no lock on it.
  if (opened_by_ != ::getpid()) return;
  {
    std::lock_guard lock(OpenFilesMutex());
    auto found = OpenFiles().find(FileKey(path_));
    if (found != OpenFiles().end() && found->second.expired()) OpenFiles().erase(found);
  }
  duckdb_close(&handle_);
}

Result<DuckConnection> DuckConnection::Connect(std::shared_ptr<DuckDatabase> database) {
  FailureClass failure_class = database->failure_class();
  return Connect(std::move(database), failure_class);
}

Result<DuckConnection> DuckConnection::Connect(std::shared_ptr<DuckDatabase> database,
                                               FailureClass failure_class) {
  duckdb_connection handle = nullptr;
  if (duckdb_connect(database->handle(), &handle) != DuckDBSuccess) {
    return Fail(Status(StatusCode::kInternal,
                       fmt::format("cannot connect to DuckDB database {}", database->path()),
                       failure_class));
  }
  return DuckConnection(std::move(database), handle, failure_class);
}

DuckConnection::DuckConnection(DuckConnection&& other) noexcept
    : database_(std::move(other.database_)),
      handle_(std::exchange(other.handle_, nullptr)),
      failure_class_(other.failure_class_) {}

DuckConnection& DuckConnection::operator=(DuckConnection&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) duckdb_disconnect(&handle_);
    database_ = std::move(other.database_);
    handle_ = std::exchange(other.handle_, nullptr);
    failure_class_ = other.failure_class_;
  }
  return *this;
}

DuckConnection::~DuckConnection() {
  if (handle_ != nullptr) duckdb_disconnect(&handle_);
}

Status DuckConnection::Error(std::string_view what, std::string_view detail, int error_type) const {
  return Status(
      CodeFor(error_type),
      fmt::format("DuckDB {} ({}): {}", what,
                  database_->path().empty() ? std::string_view(":memory:") : database_->path(),
                  detail),
      failure_class_);
}

Result<DuckRows> DuckConnection::Query(std::string_view sql, const std::vector<DuckParam>& params) {
  ResultGuard guard;
  std::string text(sql);
  if (params.empty()) {
    if (duckdb_query(handle_, text.c_str(), &guard.result) != DuckDBSuccess) {
      return Fail(Error("query failed", duckdb_result_error(&guard.result),
                        duckdb_result_error_type(&guard.result)));
    }
  } else {
    PreparedGuard prepared;
    if (duckdb_prepare(handle_, text.c_str(), &prepared.statement) != DuckDBSuccess) {
      return Fail(
          Error("query failed", duckdb_prepare_error(prepared.statement), DUCKDB_ERROR_PARSER));
    }
    for (size_t i = 0; i < params.size(); ++i) {
      if (Bind(prepared.statement, i + 1, params[i]) != DuckDBSuccess) {
        return Fail(Error("cannot bind a parameter", fmt::format("${}", i + 1),
                          DUCKDB_ERROR_INVALID_INPUT));
      }
    }
    if (duckdb_execute_prepared(prepared.statement, &guard.result) != DuckDBSuccess) {
      return Fail(Error("query failed", duckdb_result_error(&guard.result),
                        duckdb_result_error_type(&guard.result)));
    }
  }
  DuckRows rows;
  idx_t columns = duckdb_column_count(&guard.result);
  idx_t count = duckdb_row_count(&guard.result);
  rows.reserve(count);
  for (idx_t row = 0; row < count; ++row) {
    auto& values = rows.emplace_back();
    values.reserve(columns);
    for (idx_t column = 0; column < columns; ++column) {
      if (duckdb_value_is_null(&guard.result, column, row)) {
        values.emplace_back(std::nullopt);
        continue;
      }
      char* value = duckdb_value_varchar(&guard.result, column, row);
      values.emplace_back(value != nullptr ? std::string(value) : std::string());
      duckdb_free(value);
    }
  }
  return rows;
}

Status DuckConnection::Execute(std::string_view sql, const std::vector<DuckParam>& params) {
  Result<DuckRows> rows = Query(sql, params);
  if (!rows.has_value()) return std::move(rows).error();
  return Status::Ok();
}

Result<std::optional<std::string>> DuckConnection::QueryValue(
    std::string_view sql, const std::vector<DuckParam>& params) {
  BIZON_ASSIGN_OR_RETURN(DuckRows rows, Query(sql, params));
  if (rows.empty() || rows.front().empty()) return std::optional<std::string>();
  return rows.front().front();
}

void DuckConnection::RollbackQuietly() {
  duckdb_result result{};
  duckdb_query(handle_, "ROLLBACK", &result);  // Fails harmlessly when no transaction is open.
  duckdb_destroy_result(&result);
}

Result<DuckAppender> DuckAppender::Open(DuckConnection& connection, std::string_view schema,
                                        std::string_view table) {
  duckdb_appender handle = nullptr;
  std::string schema_text(schema);
  std::string table_text(table);
  if (duckdb_appender_create(connection.handle(),
                             schema_text.empty() ? nullptr : schema_text.c_str(),
                             table_text.c_str(), &handle) != DuckDBSuccess) {
    duckdb_error_data error = duckdb_appender_error_data(handle);
    std::string message = duckdb_error_data_message(error);
    duckdb_destroy_error_data(&error);
    duckdb_appender_destroy(&handle);
    return Fail(Status(StatusCode::kFailedPrecondition,
                       fmt::format("cannot append to DuckDB table {}: {}", table, message),
                       connection.failure_class()));
  }
  return DuckAppender(&connection, handle);
}

DuckAppender::DuckAppender(DuckAppender&& other) noexcept
    : connection_(other.connection_),
      handle_(std::exchange(other.handle_, nullptr)),
      failed_(other.failed_) {}

DuckAppender& DuckAppender::operator=(DuckAppender&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) duckdb_appender_destroy(&handle_);
    connection_ = other.connection_;
    handle_ = std::exchange(other.handle_, nullptr);
    failed_ = other.failed_;
  }
  return *this;
}

DuckAppender::~DuckAppender() {
  if (handle_ != nullptr) duckdb_appender_destroy(&handle_);
}

void DuckAppender::Check(int state) {
  if (state != DuckDBSuccess) failed_ = true;
}

void DuckAppender::Null() { Check(duckdb_append_null(handle_)); }
void DuckAppender::Text(std::string_view value) {
  Check(duckdb_append_varchar_length(handle_, value.data(), value.size()));
}
void DuckAppender::Int64(int64_t value) { Check(duckdb_append_int64(handle_, value)); }
void DuckAppender::Double(double value) { Check(duckdb_append_double(handle_, value)); }
void DuckAppender::Bool(bool value) { Check(duckdb_append_bool(handle_, value)); }
void DuckAppender::TimestampMicros(int64_t micros) {
  Check(duckdb_append_timestamp(handle_, duckdb_timestamp{micros}));
}
void DuckAppender::Date(int32_t days) { Check(duckdb_append_date(handle_, duckdb_date{days})); }

Status DuckAppender::Error(std::string_view what) {
  duckdb_error_data error = duckdb_appender_error_data(handle_);
  std::string message = duckdb_error_data_has_error(error) ? duckdb_error_data_message(error)
                                                           : std::string("unknown error");
  int type = duckdb_error_data_error_type(error);
  duckdb_destroy_error_data(&error);
  return Status(CodeFor(type), fmt::format("DuckDB {}: {}", what, message),
                connection_->failure_class());
}

Status DuckAppender::EndRow() {
  if (failed_) {
    failed_ = false;
    return Error("refused a value");
  }
  if (duckdb_appender_end_row(handle_) != DuckDBSuccess) return Error("refused a row");
  return Status::Ok();
}

Status DuckAppender::Flush() {
  if (duckdb_appender_flush(handle_) != DuckDBSuccess) return Error("append failed");
  return Status::Ok();
}

Status DuckAppender::Close() {
  if (handle_ == nullptr) return Status::Ok();
  Status status = Status::Ok();
  if (duckdb_appender_close(handle_) != DuckDBSuccess) status = Error("append failed");
  duckdb_appender_destroy(&handle_);
  handle_ = nullptr;
  return status;
}

std::string DuckQuoteIdentifier(std::string_view name) {
  std::string quoted = "\"";
  for (char c : name) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string DuckQuoteLiteral(std::string_view text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') quoted += '\'';
    quoted += c;
  }
  return quoted + "'";
}

std::string_view DuckLibraryVersion() { return duckdb_library_version(); }

}  // namespace bizon
