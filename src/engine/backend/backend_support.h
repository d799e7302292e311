// What the backends (sqlite, postgres, bigquery) share beyond the public Backend contract.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "bizon/backend.h"
#include "bizon/status.h"

namespace bizon {

/// A failure of the state store: failure class backend.
Status BackendError(StatusCode code, std::string message);

/// The outcome of ConsumeStreamReset when its conditional update changed no row: `reset` is the
/// row read back (nullopt: no such id). Our own earlier success (a retry) is Ok; a missing reset
/// is kNotFound; one consumed by another job, or cancelled, is kAborted.
Status UnchangedResetOutcome(const std::optional<StreamReset>& reset, std::string_view job_id,
                             std::string_view reset_id);

}  // namespace bizon
