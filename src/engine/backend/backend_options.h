// The `engine.backend` block: its declaration, beside the readers of what the engine takes from
// it (each backend reads its connection settings from the block in its OpenFromConfig).
#pragma once

#include <cstdint>
#include <string>

#include "bizon/config_spec.h"
#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

/// `engine.backend`: type (sqlite, sqlite_in_memory, postgres, bigquery) and its `config`.
FieldSpec BackendField();

/// The backend's type: the block's, else the declared default variant (sqlite).
std::string BackendType(const Value& backend);

/// `config.syncCursorInDBEvery`: write the source cursor every N iterations.
Result<int64_t> ReadSyncCursorEvery(const Value& backend);

}  // namespace bizon
