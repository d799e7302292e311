// DuckDatabase, DuckConnection, DuckAppender: DuckDB's C API with Status errors and RAII.
//
// Shared by the duckdb destination, the duckdb backend and the parquet writer. duckdb.h is
// included by this folder's .cc only: the header forward-declares DuckDB's handle types.
//
// One file, one handle: DuckDB lets a single process open a database file for writing, so
// DuckDatabase::Open() hands every caller of one process the same handle for the same path (the
// backend and the destination of a pipeline whose state and rows share a file). Connections are
// per user, and a connection is used by one thread at a time.
//
// Errors carry the failure class the database was opened with (kBackend or kDestination). A file
// another process holds open is kUnavailable, naming the path; a constraint or conversion
// failure is kInvalidArgument; a transaction conflict is kAborted; the rest kInternal.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "bizon/status.h"

// DuckDB's own handle types, declared so that duckdb.h stays out of this header.
// NOLINTBEGIN(bugprone-reserved-identifier,readability-identifier-naming)
struct _duckdb_database;
struct _duckdb_connection;
struct _duckdb_appender;
// NOLINTEND(bugprone-reserved-identifier,readability-identifier-naming)

namespace bizon {

/// A database (file or in-memory). Shared by every DuckConnection made from it.
class DuckDatabase {
 public:
  /// Opens (creates) the database at `path`; an empty path or ":memory:" is a private in-memory
  /// database. Within one process, the same file path gives the same handle while it is open. A
  /// forked child never gets a handle its parent opened (its memory is a copy, its threads are
  /// gone): it opens the file itself, which fails while the parent holds it.
  static Result<std::shared_ptr<DuckDatabase>> Open(const std::string& path,
                                                    FailureClass failure_class);
  ~DuckDatabase();
  DuckDatabase(const DuckDatabase&) = delete;
  DuckDatabase& operator=(const DuckDatabase&) = delete;

  const std::string& path() const { return path_; }
  FailureClass failure_class() const { return failure_class_; }
  _duckdb_database* handle() const { return handle_; }

 private:
  DuckDatabase(std::string path, FailureClass failure_class, _duckdb_database* handle);
  std::string path_;
  FailureClass failure_class_;
  _duckdb_database* handle_;
  int opened_by_;  // The pid of the process that opened it.
};

/// A parameter of DuckConnection::Execute/Query: NULL, integer, double, boolean or text.
using DuckParam = std::variant<std::nullptr_t, int64_t, double, bool, std::string>;

/// Rows of a query, every value as DuckDB's text form (nullopt for NULL).
using DuckRows = std::vector<std::vector<std::optional<std::string>>>;

class DuckConnection {
 public:
  static Result<DuckConnection> Connect(std::shared_ptr<DuckDatabase> database);
  /// The same, with this connection's errors in `failure_class` whatever the database was opened
  /// with (a destination sharing the file of a duckdb backend reports destination errors).
  static Result<DuckConnection> Connect(std::shared_ptr<DuckDatabase> database,
                                        FailureClass failure_class);
  DuckConnection(DuckConnection&& other) noexcept;
  DuckConnection& operator=(DuckConnection&& other) noexcept;
  DuckConnection(const DuckConnection&) = delete;
  DuckConnection& operator=(const DuckConnection&) = delete;
  ~DuckConnection();

  /// Runs `sql` (several statements separated by `;` are fine without parameters).
  Status Execute(std::string_view sql, const std::vector<DuckParam>& params = {});
  /// Runs one statement and returns its rows.
  Result<DuckRows> Query(std::string_view sql, const std::vector<DuckParam>& params = {});
  /// The first column of the first row; nullopt when there is no row or it is NULL.
  Result<std::optional<std::string>> QueryValue(std::string_view sql,
                                                const std::vector<DuckParam>& params = {});

  /// BEGIN / COMMIT / ROLLBACK.
  Status Begin() { return Execute("BEGIN TRANSACTION"); }
  Status Commit() { return Execute("COMMIT"); }
  /// Rolls back an open transaction; does nothing (and succeeds) when none is open.
  void RollbackQuietly();

  DuckDatabase& database() const { return *database_; }
  _duckdb_connection* handle() const { return handle_; }
  FailureClass failure_class() const { return failure_class_; }

 private:
  DuckConnection(std::shared_ptr<DuckDatabase> database, _duckdb_connection* handle,
                 FailureClass failure_class)
      : database_(std::move(database)), handle_(handle), failure_class_(failure_class) {}
  Status Error(std::string_view what, std::string_view detail, int error_type) const;
  std::shared_ptr<DuckDatabase> database_;
  _duckdb_connection* handle_;
  FailureClass failure_class_;
};

/// Appends rows to one table in DuckDB's fastest way: values are given column by column, in the
/// table's column order, and each row ends with EndRow(). Rows reach the table at Flush() or
/// Close() (DuckDB also flushes on its own every few thousand rows).
class DuckAppender {
 public:
  static Result<DuckAppender> Open(DuckConnection& connection, std::string_view schema,
                                   std::string_view table);
  DuckAppender(DuckAppender&& other) noexcept;
  DuckAppender& operator=(DuckAppender&& other) noexcept;
  DuckAppender(const DuckAppender&) = delete;
  DuckAppender& operator=(const DuckAppender&) = delete;
  /// Destroys without flushing what is still buffered: call Close() to keep it.
  ~DuckAppender();

  // A value DuckDB refuses makes EndRow() fail with its error.
  void Null();
  void Text(std::string_view value);
  void Int64(int64_t value);
  void Double(double value);
  void Bool(bool value);
  /// Microseconds since the Unix epoch (TIMESTAMP / TIMESTAMPTZ columns).
  void TimestampMicros(int64_t micros);
  /// Days since the Unix epoch (DATE columns).
  void Date(int32_t days);

  Status EndRow();
  Status Flush();
  Status Close();

 private:
  DuckAppender(const DuckConnection* connection, _duckdb_appender* handle)
      : connection_(connection), handle_(handle) {}
  void Check(int state);
  Status Error(std::string_view what);
  const DuckConnection* connection_;
  _duckdb_appender* handle_;
  bool failed_ = false;
};

/// `"name"` with embedded quotes doubled.
std::string DuckQuoteIdentifier(std::string_view name);
/// `'text'` with embedded quotes doubled.
std::string DuckQuoteLiteral(std::string_view text);

/// The DuckDB library's version ("v1.5.6").
std::string_view DuckLibraryVersion();

}  // namespace bizon
