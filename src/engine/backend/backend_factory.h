// Builds the backend named by `engine.backend` of a validated config.
#pragma once

#include <memory>

#include "bizon/backend.h"
#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

/// `backend` is the normalized `engine.backend` block ({type, config}). For `sqlite` the file is
/// `<database>.sqlite3` in the working directory (or `database` itself when it already ends in
/// .sqlite3, .sqlite or .db, or is an absolute path).
Result<std::unique_ptr<Backend>> OpenBackend(const Value& backend);

/// A short description for logs: "sqlite file ./bizon.sqlite3".
std::string DescribeBackend(const Value& backend);

}  // namespace bizon
