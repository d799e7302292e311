#include "engine/backend/backend_factory.h"

#include <fmt/format.h>
#include <unistd.h>

#include "engine/backend/postgres_backend.h"
#include "engine/backend/sqlite_backend.h"

namespace bizon {
namespace {

std::string SqlitePath(const Value& backend) {
  std::string database = backend.FindPath("config.database") != nullptr
                             ? backend.FindPath("config.database")->ToDisplayString()
                             : "bizon";
  auto ends_with = [&](std::string_view suffix) {
    return database.size() >= suffix.size() &&
           database.compare(database.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".sqlite3") || ends_with(".sqlite") || ends_with(".db")) return database;
  return database + ".sqlite3";
}

}  // namespace

Result<std::unique_ptr<Backend>> OpenBackend(const Value& backend) {
  std::string type = backend.GetString("type", "sqlite");
  if (type == "sqlite") {
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
  if (type == "postgres") {
    BIZON_ASSIGN_OR_RETURN(auto opened, PostgresBackend::OpenFromConfig(backend));
    std::unique_ptr<Backend> result = std::move(opened);
    BIZON_RETURN_IF_ERROR(result->Migrate());
    return result;
  }
  return Fail(Status(StatusCode::kUnimplemented,
                     fmt::format("the '{}' backend is declared but not built into this binary "
                                 "yet; use sqlite",
                                 type),
                     FailureClass::kBackend));
}

std::optional<std::string> SqliteFilePath(const Value& backend) {
  if (backend.GetString("type", "sqlite") != "sqlite") return std::nullopt;
  return SqlitePath(backend);
}

bool HasRunLock(const Value& backend) { return backend.GetString("type", "sqlite") == "postgres"; }

bool IsProcessLocal(const Value& backend) {
  return backend.GetString("type", "sqlite") == "sqlite_in_memory";
}

std::string DescribeBackend(const Value& backend) {
  std::string type = backend.GetString("type", "sqlite");
  if (type == "sqlite") return "sqlite file " + SqlitePath(backend);
  return type;
}

}  // namespace bizon
