#include "postgres/postgres_client.h"

#include <fmt/format.h>
#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

namespace bizon {
namespace {

/// What the caller should do next, from the SQLSTATE (PostgreSQL manual, appendix A).
StatusCode CodeForSqlState(std::string_view state) {
  if (state.size() != 5) return StatusCode::kInternal;
  std::string_view error_class = state.substr(0, 2);
  if (error_class == "08") return StatusCode::kUnavailable;  // Connection exception.
  if (state == "57P01" || state == "57P02" || state == "57P03") {
    return StatusCode::kUnavailable;  // Admin shutdown, crash shutdown, cannot connect now.
  }
  if (error_class == "53") return StatusCode::kUnavailable;      // Disk full, out of memory...
  if (error_class == "40") return StatusCode::kAborted;          // Serialization failure, deadlock.
  if (state == "55P03") return StatusCode::kAborted;             // Lock not available.
  if (state == "57014") return StatusCode::kCancelled;           // Query cancelled.
  if (error_class == "22") return StatusCode::kInvalidArgument;  // Data exception: bad input.
  if (error_class == "28" || error_class == "3D" || error_class == "3F" || state == "42501") {
    // Credentials, missing database or schema, missing privilege: a human must fix them.
    return StatusCode::kFailedPrecondition;
  }
  if (error_class == "23" || error_class == "42") {
    // Constraint violations and undefined or conflicting objects: the database holds objects
    // that are not what bizon expects (a table changed by hand, a column of another type).
    return StatusCode::kFailedPrecondition;
  }
  return StatusCode::kInternal;
}

/// One line: libpq messages end with a newline and may hold several, indented with tabs.
std::string OneLine(std::string_view text) {
  std::string line;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\t' || c == '\r' || c == ' ') {
      space = !line.empty();
      continue;
    }
    if (space) line.push_back(' ');
    space = false;
    line.push_back(c);
  }
  return line;
}

// A lost connection is re-opened for this long (the server restarting, a network blip) before
// the call fails: long enough for a restart, short enough that a dead server fails the run soon.
constexpr auto kReconnectFor = std::chrono::seconds(10);

void LogNotice(void* /*unused*/, const char* message) {
  spdlog::debug("PostgreSQL: {}", OneLine(message));
}

/// A TLS failure that retrying cannot mend: a certificate the other side does not accept, a
/// key or certificate file libpq cannot use, or a server without TLS when sslmode requires it.
bool IsTlsRefusal(const std::string& detail) {
  for (const char* sign : {"certificate", "SSL error", "server does not support SSL",
                           "private key file", "root certificate file", "unknown ca"}) {
    if (detail.find(sign) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

PgConnectionSettings PgSettingsFromConfig(const Value& config) {
  PgConnectionSettings settings;
  settings.host = config.GetString("host", "localhost");
  settings.port = config.GetInteger("port", 5432);
  if (const Value* port = config.Find("port"); port != nullptr && port->is_string()) {
    settings.port = std::strtoll(port->AsString().c_str(), nullptr, 10);
  }
  settings.database = config.GetString("database");
  settings.user = config.GetString("username");
  settings.password = config.GetString("password");
  settings.sslmode = config.GetString("sslmode");
  settings.sslrootcert = config.GetString("sslrootcert");
  settings.sslcert = config.GetString("sslcert");
  settings.sslkey = config.GetString("sslkey");
  return settings;
}

int64_t AdvisoryLockKey(std::string_view text) {
  uint64_t hash = 14695981039346656037ULL;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return static_cast<int64_t>(hash);
}

// ---------------------------------------------------------------------------------------------
// PgResult.

PgResult::PgResult(PgResult&& other) noexcept : result_(std::exchange(other.result_, nullptr)) {}

PgResult& PgResult::operator=(PgResult&& other) noexcept {
  if (this != &other) {
    PQclear(result_);
    result_ = std::exchange(other.result_, nullptr);
  }
  return *this;
}

PgResult::~PgResult() { PQclear(result_); }

int PgResult::rows() const { return result_ == nullptr ? 0 : PQntuples(result_); }

bool PgResult::IsNull(int row, int column) const { return PQgetisnull(result_, row, column) != 0; }

std::string_view PgResult::Text(int row, int column) const {
  return std::string_view(PQgetvalue(result_, row, column),
                          static_cast<size_t>(PQgetlength(result_, row, column)));
}

std::optional<std::string> PgResult::OptionalText(int row, int column) const {
  if (IsNull(row, column)) return std::nullopt;
  return std::string(Text(row, column));
}

int64_t PgResult::Int64(int row, int column) const {
  return std::strtoll(PQgetvalue(result_, row, column), nullptr, 10);
}

std::optional<int64_t> PgResult::OptionalInt64(int row, int column) const {
  if (IsNull(row, column)) return std::nullopt;
  return Int64(row, column);
}

bool PgResult::Bool(int row, int column) const {
  std::string_view text = Text(row, column);
  return !text.empty() && (text[0] == 't' || text[0] == '1');
}

std::string_view PgResult::CommandTag() const {
  const char* tag = result_ != nullptr ? PQcmdStatus(result_) : nullptr;
  return tag != nullptr ? std::string_view(tag) : std::string_view();
}

int64_t PgResult::AffectedRows() const {
  const char* text = PQcmdTuples(result_);
  return text == nullptr || *text == '\0' ? 0 : std::strtoll(text, nullptr, 10);
}

// ---------------------------------------------------------------------------------------------
// PgConnection.

Result<std::unique_ptr<PgConnection>> PgConnection::Connect(PgConnectionSettings settings,
                                                            FailureClass failure_class) {
  if (settings.database.empty()) {
    return Fail(Status(StatusCode::kInvalidArgument, "the postgres connection needs a database",
                       FailureClass::kConfig));
  }
  std::unique_ptr<PgConnection> connection(new PgConnection(std::move(settings), failure_class));
  BIZON_RETURN_IF_ERROR(connection->Open());
  return connection;
}

PgConnection::~PgConnection() {
  // PQfinish also ends the session, which releases its session-level advisory locks.
  if (conn_ != nullptr) PQfinish(conn_);
}

std::string PgConnection::Describe() const {
  return fmt::format("{}:{}/{}", settings_.host, settings_.port, settings_.database);
}

Status PgConnection::Open() {
  if (conn_ != nullptr) {
    PQfinish(conn_);
    conn_ = nullptr;
  }
  std::string port = std::to_string(settings_.port);
  std::string timeout = std::to_string(settings_.connect_timeout_s);
  // Keyword arrays, not a connection string: no quoting rules for the password to get wrong.
  std::vector<const char*> keywords = {"host",
                                       "port",
                                       "dbname",
                                       "user",
                                       "application_name",
                                       "connect_timeout",
                                       "client_encoding",
                                       "keepalives",
                                       "keepalives_idle"};
  std::vector<const char*> values = {settings_.host.c_str(),
                                     port.c_str(),
                                     settings_.database.c_str(),
                                     settings_.user.c_str(),
                                     settings_.application_name.c_str(),
                                     timeout.c_str(),
                                     "UTF8",
                                     "1",
                                     "30"};
  if (!settings_.password.empty()) {
    keywords.push_back("password");
    values.push_back(settings_.password.c_str());
  }
  for (const auto& [keyword, value] :
       {std::pair{"sslmode", &settings_.sslmode}, std::pair{"sslrootcert", &settings_.sslrootcert},
        std::pair{"sslcert", &settings_.sslcert}, std::pair{"sslkey", &settings_.sslkey}}) {
    if (value->empty()) continue;
    keywords.push_back(keyword);
    values.push_back(value->c_str());
  }
  keywords.push_back(nullptr);
  values.push_back(nullptr);
  conn_ = PQconnectdbParams(keywords.data(), values.data(), /*expand_dbname=*/0);
  if (conn_ == nullptr) {
    return Status(StatusCode::kUnavailable, "could not allocate a PostgreSQL connection",
                  failure_class_);
  }
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string detail = OneLine(PQerrorMessage(conn_));
    PQfinish(conn_);
    conn_ = nullptr;
    // The server answered and said no: the configuration must change, retrying will not help.
    bool refused = detail.find("authentication failed") != std::string::npos ||
                   detail.find("does not exist") != std::string::npos ||
                   detail.find("no pg_hba.conf entry") != std::string::npos ||
                   detail.find("pg_hba.conf rejects") != std::string::npos ||
                   detail.find("password") != std::string::npos || IsTlsRefusal(detail);
    return Status(refused ? StatusCode::kFailedPrecondition : StatusCode::kUnavailable,
                  fmt::format("could not connect to PostgreSQL at {}: {}", Describe(), detail),
                  failure_class_);
  }
  // NOTICEs ("relation already exists, skipping") would go to stderr; they are expected chatter.
  PQsetNoticeProcessor(conn_, &LogNotice, nullptr);
  // Results are read as text in a fixed form whatever the server's or role's defaults are.
  PGresult* set = PQexec(conn_,
                         "SET datestyle = 'ISO, YMD'; SET timezone = 'UTC'; "
                         "SET extra_float_digits = 3");
  PgResult setup(set);
  if (PQresultStatus(set) != PGRES_COMMAND_OK) return ErrorFrom(set, "set up the session");
  return Status::Ok();
}

Status PgConnection::EnsureConnected() {
  if (conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK) return Status::Ok();
  // After a whole reconnect window failed, each later call tries once: a run failing because
  // the server is down must not wait out the window again for every bookkeeping call.
  auto deadline =
      std::chrono::steady_clock::now() + (server_down_ ? std::chrono::seconds(0) : kReconnectFor);
  if (!server_down_) {
    spdlog::warn("The PostgreSQL connection to {} was lost; reconnecting", Describe());
  }
  auto delay = std::chrono::milliseconds(100);
  for (;;) {
    Status opened = Open();
    if (opened.ok()) break;
    if (opened.code() != StatusCode::kUnavailable ||
        std::chrono::steady_clock::now() + delay > deadline) {
      if (opened.code() == StatusCode::kUnavailable) server_down_ = true;
      return opened;
    }
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::milliseconds(1000));
  }
  server_down_ = false;
  spdlog::info("Reconnected to PostgreSQL at {}", Describe());
  if (reconnect_hook_) BIZON_RETURN_IF_ERROR(reconnect_hook_(*this));
  return Status::Ok();
}

Status PgConnection::ErrorFrom(const pg_result* result, std::string_view what) const {
  const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  const char* primary =
      result != nullptr ? PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  std::string detail = primary != nullptr ? std::string(primary) : OneLine(PQerrorMessage(conn_));
  StatusCode code = state != nullptr ? CodeForSqlState(state) : StatusCode::kInternal;
  if (PQstatus(conn_) != CONNECTION_OK) code = StatusCode::kUnavailable;
  if (state != nullptr) detail += fmt::format(" (SQLSTATE {})", state);
  if (code == StatusCode::kUnavailable) {
    // Server-side texts such as "terminating connection due to administrator command" do not
    // say which server went away.
    detail += fmt::format("; the PostgreSQL server at {} is unavailable", Describe());
  }
  return Status(code, fmt::format("could not {}: {}", what, detail), failure_class_);
}

Result<PgResult> PgConnection::Execute(std::string_view sql, std::string_view what,
                                       const std::vector<PgParam>& params) {
  BIZON_RETURN_IF_ERROR(EnsureConnected());
  std::string text(sql);
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const PgParam& param : params) values.push_back(param ? param->c_str() : nullptr);
  // Outside a transaction a statement is resent once over a new connection when the old one
  // died under it (see the header: such statements are idempotent or keyed by a client id).
  // Inside one, the server rolled the transaction back with the session: the caller must fail.
  bool may_resend = !InTransaction();
  for (int attempt = 0;; ++attempt) {
    PGresult* raw =
        params.empty() ? PQexec(conn_, text.c_str())
                       : PQexecParams(conn_, text.c_str(), static_cast<int>(values.size()), nullptr,
                                      values.data(), nullptr, nullptr, /*resultFormat=*/0);
    PgResult result(raw);
    ExecStatusType status = raw != nullptr ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result;
    if (attempt == 0 && may_resend && PQstatus(conn_) != CONNECTION_OK) {
      BIZON_RETURN_IF_ERROR(EnsureConnected());
      continue;
    }
    const char* state = raw != nullptr ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : nullptr;
    if (attempt > 0 && state != nullptr && std::string_view(state) == "23505") {
      // Unique violation on the resend: the first send committed before the connection died.
      return PgResult(PQmakeEmptyPGresult(conn_, PGRES_COMMAND_OK));
    }
    return Fail(ErrorFrom(raw, what));
  }
}

Status PgConnection::BeginCopy(std::string_view copy_sql, std::string_view what) {
  copy_what_ = std::string(what);
  BIZON_RETURN_IF_ERROR(EnsureConnected());
  std::string text(copy_sql);
  PGresult* raw = PQexec(conn_, text.c_str());
  PgResult result(raw);
  if (raw == nullptr || PQresultStatus(raw) != PGRES_COPY_IN) return ErrorFrom(raw, what);
  return Status::Ok();
}

Status PgConnection::PutCopyData(std::string_view data) {
  if (data.empty()) return Status::Ok();
  if (PQputCopyData(conn_, data.data(), static_cast<int>(data.size())) != 1) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("could not {}: {}", copy_what_, OneLine(PQerrorMessage(conn_))),
                  failure_class_);
  }
  return Status::Ok();
}

Result<int64_t> PgConnection::EndCopy() {
  if (PQputCopyEnd(conn_, nullptr) != 1) {
    return Fail(Status(StatusCode::kUnavailable,
                       fmt::format("could not {}: {}", copy_what_, OneLine(PQerrorMessage(conn_))),
                       failure_class_));
  }
  Status failure;
  int64_t rows = 0;
  // The COPY's own result, then null; a broken connection may return a stream of errors.
  while (PGresult* raw = PQgetResult(conn_)) {
    PgResult result(raw);
    if (PQresultStatus(raw) == PGRES_COMMAND_OK) {
      rows = result.AffectedRows();
    } else if (failure.ok()) {
      failure = ErrorFrom(raw, copy_what_);
    }
    if (PQstatus(conn_) != CONNECTION_OK) break;
  }
  if (!failure.ok()) return Fail(std::move(failure));
  return rows;
}

std::string PgConnection::QuoteIdentifier(std::string_view name) const {
  if (conn_ != nullptr) {
    if (char* quoted = PQescapeIdentifier(conn_, name.data(), name.size()); quoted != nullptr) {
      std::string result(quoted);
      PQfreemem(quoted);
      return result;
    }
  }
  // Without a usable connection: the same rule by hand (double quotes doubled).
  std::string result = "\"";
  for (char c : name) {
    if (c == '"') result.push_back('"');
    result.push_back(c);
  }
  result.push_back('"');
  return result;
}

bool PgConnection::InTransaction() const {
  if (conn_ == nullptr) return false;
  PGTransactionStatusType status = PQtransactionStatus(conn_);
  return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE;
}

void PgConnection::RollbackQuietly() {
  if (!InTransaction()) return;  // Nothing open, or the connection is gone with it.
  // Draining a COPY or query still in progress comes first: ROLLBACK cannot be sent before.
  if (PQtransactionStatus(conn_) == PQTRANS_ACTIVE) {
    PQputCopyEnd(conn_, "aborted by bizon");
    while (PGresult* raw = PQgetResult(conn_)) PQclear(raw);
  }
  PQclear(PQexec(conn_, "ROLLBACK"));
}

// ---------------------------------------------------------------------------------------------
// PgTransaction.

Result<PgTransaction> PgTransaction::Begin(PgConnection& connection) {
  BIZON_RETURN_IF_ERROR(connection.Run("BEGIN", "begin a transaction"));
  return PgTransaction(connection);
}

PgTransaction::~PgTransaction() {
  if (connection_ != nullptr) connection_->RollbackQuietly();
}

Status PgTransaction::Commit() {
  PgConnection* connection = std::exchange(connection_, nullptr);
  if (connection == nullptr) return InternalError("the transaction was already committed");
  auto committed = connection->Execute("COMMIT", "commit the transaction");
  if (!committed) {
    connection->RollbackQuietly();
    return committed.error();
  }
  // COMMIT of a transaction that failed earlier succeeds as a ROLLBACK: say so.
  if (committed->CommandTag() != "COMMIT") {
    return Status(StatusCode::kAborted,
                  "could not commit the transaction: an earlier statement in it failed",
                  connection->failure_class());
  }
  return Status::Ok();
}

}  // namespace bizon
