// Shared by the backend tests: a harness per implementation (how to open one, and how to look at
// what it stored with a separate raw connection), and the helpers every backend test uses.
// backend_conformance_test.cc runs the same contract tests against each harness; the
// sqlite_/postgres_backend_test.cc files keep what only one implementation has.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "bizon/backend.h"
#include "bizon/build_features.h"
#include "bizon/clock.h"
#include "bizon/status.h"
#include "engine/backend/sqlite_backend.h"
#if BIZON_WITH_BIGQUERY
#include "engine/backend/bigquery_backend.h"
#endif
#if BIZON_WITH_DUCKDB
#include "engine/backend/duckdb_backend.h"
#endif
#if BIZON_WITH_POSTGRES
#include "engine/backend/postgres_backend.h"
#include "postgres/postgres_client.h"
#endif

namespace bizon::testing_support {

inline const StreamKey kKey{"pipeline", "dummy", "creatures"};
inline const StreamKey kOtherKey{"pipeline", "dummy", "plants"};

// Unwraps a Result in a test, failing it with the status text when there is no value.
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

/// A successful or failed destination cursor for iterations [from, to].
inline DestinationCursor MakeCursor(const StreamJob& job, std::string destination_name,
                                    int64_t from, int64_t to, int64_t rows, bool success) {
  DestinationCursor cursor;
  cursor.job_id = job.id;
  cursor.key = job.key;
  cursor.destination_name = std::move(destination_name);
  cursor.from_source_iteration = from;
  cursor.to_source_iteration = to;
  cursor.rows_written = rows;
  cursor.success = success;
  cursor.pagination = R"({"cursor": )" + std::to_string(to + 1) + "}";
  return cursor;
}

/// One backend implementation under test, migrated, with raw access to its tables.
class BackendHarness {
 public:
  virtual ~BackendHarness() = default;
  /// Empty when the harness can run; else why the test is skipped.
  virtual std::string SkipReason() const { return ""; }
  virtual Backend& backend() = 0;
  /// A table's name as SQL must write it.
  virtual std::string Table(std::string_view name) const = 0;
  /// A timestamp column as text, `YYYY-MM-DD HH:MM:SS.ffffff`.
  virtual std::string TimestampText(std::string_view column) const = 0;
  /// The first column of the first row as text; nullopt for NULL or no row.
  virtual std::optional<std::string> QueryText(const std::string& sql) = 0;
  virtual void ExecuteRaw(const std::string& sql) = 0;
};

// Runs one query through a separate raw connection to the SQLite file at `path` and returns the
// first column of the first row as text: how the tests look at what was actually stored.
inline std::optional<std::string> SqliteQueryText(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  std::optional<std::string> value;
  if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL) {
    value = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

inline void SqliteExecute(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
            SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error != nullptr ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

/// A SQLite file in a fresh temporary directory.
class SqliteHarness final : public BackendHarness {
 public:
  SqliteHarness() {
    std::string pattern = testing::TempDir() + "/sqlite_backend_test_XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    directory_ = pattern;
    path_ = directory_ + "/bizon.sqlite3";
    backend_ = ValueOrDie(SqliteBackend::Open(path_));
    Status migrated = backend_->Migrate();
    EXPECT_TRUE(migrated.ok()) << migrated.ToString();
  }
  ~SqliteHarness() override {
    backend_.reset();
    std::error_code ignored;  // Leftover temporary files are harmless.
    std::filesystem::remove_all(directory_, ignored);
  }

  Backend& backend() override { return *backend_; }
  std::unique_ptr<SqliteBackend>& sqlite() { return backend_; }
  const std::string& path() const { return path_; }
  const std::string& directory() const { return directory_; }
  std::string Table(std::string_view name) const override { return std::string(name); }
  std::string TimestampText(std::string_view column) const override { return std::string(column); }

  std::optional<std::string> QueryText(const std::string& sql) override {
    return SqliteQueryText(path_, sql);
  }
  void ExecuteRaw(const std::string& sql) override { SqliteExecute(path_, sql); }

 private:
  std::string directory_;
  std::string path_;
  std::unique_ptr<SqliteBackend> backend_;
};

#if BIZON_WITH_POSTGRES
/// The test server's settings (BIZON_PG_HOST, _PORT, _USER, _PASSWORD, _DATABASE, as
/// `scripts/test-servers.sh start postgres` exports them), or nullopt when none is named.
inline std::optional<PgConnectionSettings> PostgresTestServer() {
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

/// A schema of its own on the PostgreSQL test server, dropped at the end.
class PostgresHarness final : public BackendHarness {
 public:
  PostgresHarness() {
    std::optional<PgConnectionSettings> server = PostgresTestServer();
    if (!server) return;
    settings_ = *server;
    // Upper case, a space and a quote: every statement must quote the schema.
    schema_ = "Bizon Test \"" + NewUuidHex().substr(0, 12);
    admin_ = ValueOrDie(PgConnection::Connect(settings_, FailureClass::kBackend));
    backend_ = ValueOrDie(PostgresBackend::Open(settings_, schema_));
    Status migrated = backend_->Migrate();
    EXPECT_TRUE(migrated.ok()) << migrated.ToString();
  }
  ~PostgresHarness() override {
    backend_.reset();
    if (admin_ != nullptr) {
      // Ignored: a leftover schema only costs space on the test server.
      admin_
          ->Run("DROP SCHEMA IF EXISTS " + admin_->QuoteIdentifier(schema_) + " CASCADE",
                "drop the test schema")
          .IgnoreError();
    }
  }

  std::string SkipReason() const override {
    return backend_ != nullptr ? ""
                               : "no PostgreSQL test server: run `eval \"$(scripts/test-servers.sh "
                                 "start postgres)\"` first";
  }
  Backend& backend() override { return *backend_; }
  std::unique_ptr<PostgresBackend>& postgres() { return backend_; }
  PgConnection* admin() { return admin_.get(); }  // Null without a server.
  const PgConnectionSettings& settings() const { return settings_; }
  const std::string& schema() const { return schema_; }
  std::string Table(std::string_view name) const override {
    return admin_->QuoteIdentifier(schema_) + "." + std::string(name);
  }
  std::string TimestampText(std::string_view column) const override {
    return "to_char(" + std::string(column) + ", 'YYYY-MM-DD HH24:MI:SS.US')";
  }

  std::optional<std::string> QueryText(const std::string& sql) override {
    auto result = admin_->Execute(sql, "run a test query");
    EXPECT_TRUE(result.has_value()) << result.error().ToString();
    if (!result || result->rows() == 0) return std::nullopt;
    return result->OptionalText(0, 0);
  }

  void ExecuteRaw(const std::string& sql) override {
    auto result = admin_->Execute(sql, "run a test statement");
    ASSERT_TRUE(result.has_value()) << result.error().ToString();
  }

 private:
  PgConnectionSettings settings_;
  std::string schema_;
  std::unique_ptr<PgConnection> admin_;
  std::unique_ptr<PostgresBackend> backend_;
};

#endif  // BIZON_WITH_POSTGRES
#if BIZON_WITH_BIGQUERY
/// A dataset of its own on the BigQuery emulator (BIGQUERY_EMULATOR_HOST, BIZON_BIGQUERY_PROJECT,
/// as `scripts/test-servers.sh start bigquery` exports them), deleted at the end.
class BigQueryHarness final : public BackendHarness {
 public:
  BigQueryHarness() {
    if (std::getenv("BIGQUERY_EMULATOR_HOST") == nullptr) return;
    const char* project = std::getenv("BIZON_BIGQUERY_PROJECT");
    project_ = project != nullptr ? project : "test-project";
    dataset_ = "bizon_backend_test_" + NewUuidHex().substr(0, 12);
    backend_ = ValueOrDie(
        BigQueryBackend::Open({.project = project_, .dataset = dataset_, .create_schema = true}));
    Status migrated = backend_->Migrate();
    EXPECT_TRUE(migrated.ok()) << migrated.ToString();
  }
  ~BigQueryHarness() override {
    if (backend_ == nullptr) return;
    auto client = BigQueryClient::Make({.project = project_});
    backend_.reset();
    // Ignored: a leftover dataset only costs space on the emulator.
    if (client) (*client)->DeleteDataset(project_, dataset_, true, true).IgnoreError();
  }

  std::string SkipReason() const override {
    return backend_ != nullptr ? ""
                               : "no BigQuery emulator: run `eval \"$(scripts/test-servers.sh "
                                 "start bigquery)\"` first";
  }
  Backend& backend() override { return *backend_; }
  std::unique_ptr<BigQueryBackend>& bigquery() { return backend_; }
  const std::string& project() const { return project_; }
  const std::string& dataset() const { return dataset_; }
  std::string Table(std::string_view name) const override { return backend_->Table(name); }
  std::string TimestampText(std::string_view column) const override {
    return "FORMAT_DATETIME('%Y-%m-%d %H:%M:%E6S', " + std::string(column) + ")";
  }

  std::optional<std::string> QueryText(const std::string& sql) override {
    auto result = Run(sql);
    EXPECT_TRUE(result.has_value()) << result.error().ToString();
    if (!result || result->rows.empty() || result->rows[0].empty()) return std::nullopt;
    const Value& cell = result->rows[0][0];
    if (cell.is_null()) return std::nullopt;
    return cell.is_string() ? cell.AsString() : cell.ToDisplayString();
  }

  void ExecuteRaw(const std::string& sql) override {
    // BigQuery wants a WHERE on every UPDATE and DELETE.
    std::string statement = sql;
    bool mutation = statement.starts_with("UPDATE ") || statement.starts_with("DELETE ");
    if (mutation && statement.find(" WHERE ") == std::string::npos) statement += " WHERE TRUE";
    auto result = Run(statement);
    ASSERT_TRUE(result.has_value()) << result.error().ToString();
  }

 private:
  Result<BigQueryQueryResult> Run(const std::string& sql) {
    return backend_->client().RunQuery({.job_id = BigQueryClient::RandomJobId("bizon_test")},
                                       {.query = sql});
  }

  std::string project_;
  std::string dataset_;
  std::unique_ptr<BigQueryBackend> backend_;
};

#endif  // BIZON_WITH_BIGQUERY
#if BIZON_WITH_DUCKDB
/// A DuckDB file in a fresh temporary directory, its state tables in a schema whose name needs
/// quoting; the raw connection shares the backend's database handle (one per file per process).
class DuckdbHarness final : public BackendHarness {
 public:
  DuckdbHarness() {
    std::string pattern = testing::TempDir() + "/duckdb_backend_test_XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    directory_ = pattern;
    path_ = directory_ + "/state.duckdb";
    backend_ = ValueOrDie(DuckdbBackend::Open(path_, schema_));
    Status migrated = backend_->Migrate();
    EXPECT_TRUE(migrated.ok()) << migrated.ToString();
    raw_.emplace(ValueOrDie(
        DuckConnection::Connect(ValueOrDie(DuckDatabase::Open(path_, FailureClass::kBackend)))));
  }
  ~DuckdbHarness() override {
    raw_.reset();
    backend_.reset();
    std::error_code ignored;  // Leftover temporary files are harmless.
    std::filesystem::remove_all(directory_, ignored);
  }

  Backend& backend() override { return *backend_; }
  std::unique_ptr<DuckdbBackend>& duckdb() { return backend_; }
  const std::string& path() const { return path_; }
  std::string Table(std::string_view name) const override {
    return DuckQuoteIdentifier(schema_) + "." + std::string(name);
  }
  std::string TimestampText(std::string_view column) const override { return std::string(column); }

  std::optional<std::string> QueryText(const std::string& sql) override {
    return ValueOrDie(raw_->QueryValue(sql));
  }
  void ExecuteRaw(const std::string& sql) override {
    Status status = raw_->Execute(sql);
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

 private:
  std::string directory_;
  std::string path_;
  std::string schema_ = "Bizon State \"x";
  std::unique_ptr<DuckdbBackend> backend_;
  std::optional<DuckConnection> raw_;
};

#endif  // BIZON_WITH_DUCKDB
}  // namespace bizon::testing_support
