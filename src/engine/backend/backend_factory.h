// Builds the backend named by `engine.backend` of a validated config.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "bizon/backend.h"
#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

/// `backend` is the normalized `engine.backend` block ({type, config}). For `sqlite` the file is
/// `<database>.sqlite3` whatever `database` ends with (as the original), relative to the working
/// directory unless absolute. A run refuses (kFailedPrecondition) when only the file an earlier
/// version of this binary used exists: `database` itself, when it ends in .sqlite3, .sqlite or .db.
Result<std::unique_ptr<Backend>> OpenBackend(const Value& backend);

/// The `engine.backend` block of a validated pipeline config, with what it takes from the rest: a
/// `bigquery` backend with create_schema and no schema_location that shares its dataset with a
/// bigquery destination creating it (create_dataset) inherits the destination's
/// dataset_location, so both create the dataset in the same place.
Value BackendConfigOf(const Value& config);

/// The database file of a `sqlite` backend; nullopt for any other type.
std::optional<std::string> SqliteFilePath(const Value& backend);

/// True when another process, such as the process runner's producer, cannot reach the backend:
/// `sqlite_in_memory` lives in this process's memory, and a `duckdb` file is held open by it.
bool IsProcessLocal(const Value& backend);

/// A short description for logs: "sqlite file ./bizon.sqlite3".
std::string DescribeBackend(const Value& backend);

}  // namespace bizon
