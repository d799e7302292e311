#include "engine/backend/backend_factory.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "bizon/build_features.h"
#include "common/connector_families.h"
#include "engine/backend/backend_options.h"
#include "engine/backend/sqlite_backend.h"
#if BIZON_WITH_BIGQUERY
#include "engine/backend/bigquery_backend.h"
#endif
#if BIZON_WITH_DUCKDB
#include "engine/backend/duckdb_backend.h"
#endif
#if BIZON_WITH_POSTGRES
#include "engine/backend/postgres_backend.h"
#endif

namespace bizon {
namespace {

std::string SqliteDatabaseName(const Value& backend) {
  const Value* database = backend.FindPath("config.database");
  return database != nullptr ? database->ToDisplayString() : std::string();
}

// Always `<database>.sqlite3`, as the original names it (`state.db` is `state.db.sqlite3`), so
// both implementations open the same file whatever the name ends with.
std::string SqlitePath(const Value& backend) { return SqliteDatabaseName(backend) + ".sqlite3"; }

// Before it matched the original, this binary opened a `database` ending in .sqlite3, .sqlite or
// .db as is. Opening the new name next to such a file would silently start from no state, so a
// run refuses until the operator renames it.
Status CheckNoEarlierSqliteFile(const Value& backend) {
  std::string database = SqliteDatabaseName(backend);
  bool had_suffix =
      database.ends_with(".sqlite3") || database.ends_with(".sqlite") || database.ends_with(".db");
  std::error_code error;
  if (!had_suffix || !std::filesystem::exists(database, error) ||
      std::filesystem::exists(SqlitePath(backend), error)) {
    return Status::Ok();
  }
  return Status(StatusCode::kFailedPrecondition,
                fmt::format("the sqlite backend file is <database>.sqlite3, as in the original "
                            "bizon; an earlier version of this binary used <database> itself. "
                            "Rename the state file to resume from it (found, expected): {}, {}",
                            database, SqlitePath(backend)),
                FailureClass::kBackend);
}

// The backends of the optional families, or the refusal of one left out of the build.
Result<std::unique_ptr<Backend>> OpenOptionalBackend(const std::string& type,
                                                     [[maybe_unused]] const Value& backend) {
  if (type == "postgres") {
#if BIZON_WITH_POSTGRES
    BIZON_ASSIGN_OR_RETURN(auto opened, PostgresBackend::OpenFromConfig(backend));
    return std::unique_ptr<Backend>(std::move(opened));
#endif
  } else if (type == "bigquery") {
#if BIZON_WITH_BIGQUERY
    BIZON_ASSIGN_OR_RETURN(auto opened, BigQueryBackend::OpenFromConfig(backend));
    return std::unique_ptr<Backend>(std::move(opened));
#endif
  } else if (type == "duckdb") {
#if BIZON_WITH_DUCKDB
    const Value* config = backend.Find("config");
    BIZON_ASSIGN_OR_RETURN(
        auto opened, DuckdbBackend::Open(SqliteDatabaseName(backend),
                                         config != nullptr ? config->GetString("schema") : ""));
    return std::unique_ptr<Backend>(std::move(opened));
#endif
  }
  return Fail(NotBuiltError(fmt::format("the '{}' backend", type), type));
}

}  // namespace

Result<std::unique_ptr<Backend>> OpenBackend(const Value& backend) {
  std::string type = BackendType(backend);
  if (type == "sqlite") {
    BIZON_RETURN_IF_ERROR(CheckNoEarlierSqliteFile(backend));
    BIZON_ASSIGN_OR_RETURN(auto opened, SqliteBackend::Open(SqlitePath(backend)));
    std::unique_ptr<Backend> result = std::move(opened);
    BIZON_RETURN_IF_ERROR(result->Migrate());
    return result;
  }
  if (type == "sqlite_in_memory") {
    // Shared by every Backend of this process (init, producer, consumer), unlike the original's
    // one-database-per-instance which cannot run a whole pipeline.
    BIZON_ASSIGN_OR_RETURN(auto opened,
                           SqliteBackend::OpenSharedInMemory(fmt::format("bizon-{}", getpid())));
    std::unique_ptr<Backend> result = std::move(opened);
    BIZON_RETURN_IF_ERROR(result->Migrate());
    return result;
  }
  if (type == "postgres" || type == "bigquery" || type == "duckdb") {
    BIZON_ASSIGN_OR_RETURN(std::unique_ptr<Backend> opened, OpenOptionalBackend(type, backend));
    BIZON_RETURN_IF_ERROR(opened->Migrate());
    return opened;
  }
  return Fail(Status(StatusCode::kUnimplemented,
                     fmt::format("the '{}' backend is declared but not built into this binary "
                                 "yet; use sqlite",
                                 type),
                     FailureClass::kBackend));
}

Value BackendConfigOf(const Value& config) {
  const Value* found = config.FindPath("engine.backend");
  Value backend = found != nullptr ? *found : *BackendField().default_value;
  const Value* backend_config = backend.Find("config");
  const Value* destination = config.FindPath("destination.config");
  const Value* destination_name = config.FindPath("destination.name");
  if (BackendType(backend) != "bigquery" || backend_config == nullptr || destination == nullptr ||
      destination_name == nullptr || !destination_name->is_string() ||
      !destination_name->AsString().starts_with("bigquery")) {
    return backend;
  }
  std::string database = backend_config->Find("database") != nullptr
                             ? backend_config->Find("database")->ToDisplayString()
                             : "";
  bool shared = backend_config->GetBool("create_schema") &&
                destination->GetBool("create_dataset") &&
                backend_config->GetString("schema_location").empty() &&
                destination->GetString("project_id") == database &&
                destination->GetString("dataset_id") == backend_config->GetString("schema");
  std::string location = destination->GetString("dataset_location");
  if (shared && !location.empty()) {
    backend.GetOrCreateMap("config").Set("schema_location", Value(location));
  }
  return backend;
}

std::optional<std::string> SqliteFilePath(const Value& backend) {
  if (BackendType(backend) != "sqlite") return std::nullopt;
  return SqlitePath(backend);
}

bool IsProcessLocal(const Value& backend) {
  // DuckDB lets one process open a file: the process runner's forked producer cannot.
  std::string type = BackendType(backend);
  return type == "sqlite_in_memory" || type == "duckdb";
}

std::string DescribeBackend(const Value& backend) {
  std::string type = BackendType(backend);
  if (type == "sqlite") return "sqlite file " + SqlitePath(backend);
  if (type == "duckdb") return "duckdb file " + SqliteDatabaseName(backend);
  return type;
}

}  // namespace bizon
