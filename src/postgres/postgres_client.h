// PgConnection: one libpq connection, with Status errors, RAII results, parameters and COPY.
//
// Shared by the postgres destination (connectors/destinations/postgres/) and the postgres backend
// (engine/backend/postgres_backend.cc). libpq-fe.h is included by this folder's .cc only: the
// header forward-declares libpq's two handle types.
//
// Errors: each carries the failure class the connection was opened with (kBackend or
// kDestination) and a code chosen from the SQLSTATE: a lost or refused connection, an admin
// shutdown or a full disk is kUnavailable (retry later), a serialization failure or deadlock is
// kAborted (retry the batch), bad data is kInvalidArgument, missing privileges or objects are
// kFailedPrecondition, the rest kInternal. Messages carry the server's primary message, never
// the password.
//
// Reconnection: a call made while the connection is broken (the server restarted, the network
// dropped) first reconnects, retrying for up to 10 s while the server is unreachable or starting
// up (once that window has run out, later calls try once each, without waiting, until one
// succeeds), then runs the reconnect hook (the backend re-takes its advisory locks there). A call
// that discovered the break fails when it ran inside a transaction (the server rolled it back); a
// statement run on its own (autocommit) is sent once more over the new connection, so every such
// statement must be idempotent or an INSERT keyed by a client-chosen id, whose unique violation
// on the resend means the first send had committed (and counts as success).
//
// Thread safety: none; one thread at a time, like the libpq connection underneath.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "bizon/config_spec.h"
#include "bizon/status.h"
#include "bizon/value.h"

struct pg_conn;
struct pg_result;

namespace bizon {

struct PgConnectionSettings {
  std::string host = "localhost";
  int64_t port = 5432;
  std::string database;
  std::string user;
  std::string password;  // Empty: libpq's own sources (PGPASSWORD, ~/.pgpass).
  std::string application_name = "bizon";
  int connect_timeout_s = 10;
  // TLS, under libpq's own names; empty: libpq's default (PGSSLMODE etc., else sslmode prefer).
  std::string sslmode;
  std::string sslrootcert;  // CA certificate(s) the server's certificate must chain to.
  std::string sslcert;      // Client certificate, for a server that asks for one.
  std::string sslkey;       // Its private key (owner-only permissions, as libpq demands).
};

/// Reads host, port, database, username, password and the ssl* keys from a backend or
/// destination config block (the keys of both are the same).
PgConnectionSettings PgSettingsFromConfig(const Value& config);

/// The TLS keys (sslmode, sslrootcert, sslcert, sslkey) both the backend's and the destination's
/// config declare.
std::vector<FieldSpec> PgTlsFields();

/// A 64-bit FNV-1a hash of `text`, as the signed key PostgreSQL advisory locks take. Stable
/// across processes, hosts and bizon versions: two processes locking the same name collide.
int64_t AdvisoryLockKey(std::string_view text);

/// The result of one statement. Move-only; clears the libpq result on destruction.
class PgResult {
 public:
  explicit PgResult(pg_result* result) : result_(result) {}
  PgResult(PgResult&& other) noexcept;
  PgResult& operator=(PgResult&& other) noexcept;
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;
  ~PgResult();

  int rows() const;
  bool IsNull(int row, int column) const;
  std::string_view Text(int row, int column) const;
  std::optional<std::string> OptionalText(int row, int column) const;
  int64_t Int64(int row, int column) const;
  std::optional<int64_t> OptionalInt64(int row, int column) const;
  /// A boolean column ('t' or 'f' in the text format).
  bool Bool(int row, int column) const;
  /// Rows an INSERT, UPDATE or DELETE touched.
  int64_t AffectedRows() const;
  /// The command tag: "COMMIT", "INSERT 0 1"...
  std::string_view CommandTag() const;

 private:
  pg_result* result_;
};

/// A statement parameter in the text format; nullopt is SQL NULL.
using PgParam = std::optional<std::string>;

class PgConnection {
 public:
  /// Connects now; fails with kUnavailable when the server cannot be reached and with
  /// kFailedPrecondition when it refuses the credentials or the database.
  static Result<std::unique_ptr<PgConnection>> Connect(PgConnectionSettings settings,
                                                       FailureClass failure_class);

  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  /// Runs `sql` with `$1..$n` bound to `params`. `what` names the operation in errors ("insert
  /// the stream job").
  Result<PgResult> Execute(std::string_view sql, std::string_view what,
                           const std::vector<PgParam>& params = {});

  /// Execute with each argument converted to a parameter: strings as they are, integers in
  /// decimal, bools as true/false, an empty optional (or nullopt) as NULL.
  template <typename... Args>
  Result<PgResult> Query(std::string_view sql, std::string_view what, const Args&... args) {
    return Execute(sql, what, std::vector<PgParam>{ToParam(args)...});
  }

  /// Query, discarding the result.
  template <typename... Args>
  Status Run(std::string_view sql, std::string_view what, const Args&... args) {
    auto result = Execute(sql, what, std::vector<PgParam>{ToParam(args)...});
    if (!result) return result.error();
    return Status::Ok();
  }

  /// Starts `COPY ... FROM STDIN`; then PutCopyData() any number of times and EndCopy().
  Status BeginCopy(std::string_view copy_sql, std::string_view what);
  Status PutCopyData(std::string_view data);
  /// Ends the COPY and returns the rows the server loaded.
  Result<int64_t> EndCopy();

  /// `name` as a quoted identifier ("My Table" with embedded quotes doubled).
  std::string QuoteIdentifier(std::string_view name) const;

  /// True while a transaction is open on the server (also when it has failed).
  bool InTransaction() const;
  /// Rolls back the open transaction, if any; errors are dropped (the caller is already failing).
  void RollbackQuietly();

  /// Runs after every successful reconnection; its error fails the call that reconnected.
  void SetReconnectHook(std::function<Status(PgConnection&)> hook) {
    reconnect_hook_ = std::move(hook);
  }

  /// "host:port/database", for logs and messages.
  std::string Describe() const;

  FailureClass failure_class() const { return failure_class_; }

 private:
  PgConnection(PgConnectionSettings settings, FailureClass failure_class)
      : settings_(std::move(settings)), failure_class_(failure_class) {}

  Status Open();
  Status EnsureConnected();
  Status ErrorFrom(const pg_result* result, std::string_view what) const;

  static PgParam ToParam(std::nullopt_t) { return std::nullopt; }
  static PgParam ToParam(bool value) { return std::string(value ? "true" : "false"); }
  static PgParam ToParam(std::string_view value) { return std::string(value); }
  static PgParam ToParam(const std::string& value) { return value; }
  static PgParam ToParam(const char* value) { return std::string(value); }
  template <typename T>
  requires std::is_integral_v<T>
  static PgParam ToParam(T value) { return std::to_string(value); }
  template <typename T>
  static PgParam ToParam(const std::optional<T>& value) {
    if (!value.has_value()) return std::nullopt;
    return ToParam(*value);
  }

  PgConnectionSettings settings_;
  FailureClass failure_class_;
  pg_conn* conn_ = nullptr;
  bool server_down_ = false;  // The last reconnect window ran out; try once per call.
  std::string copy_what_;
  std::function<Status(PgConnection&)> reconnect_hook_;
};

/// Rolls back on destruction unless Commit() succeeded: every early return of a failed step
/// leaves the server with nothing half-done.
class PgTransaction {
 public:
  static Result<PgTransaction> Begin(PgConnection& connection);
  PgTransaction(PgTransaction&& other) noexcept : connection_(other.connection_) {
    other.connection_ = nullptr;
  }
  PgTransaction& operator=(PgTransaction&&) = delete;
  PgTransaction(const PgTransaction&) = delete;
  PgTransaction& operator=(const PgTransaction&) = delete;
  ~PgTransaction();

  Status Commit();

 private:
  explicit PgTransaction(PgConnection& connection) : connection_(&connection) {}
  PgConnection* connection_;
};

}  // namespace bizon
