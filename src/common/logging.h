// Logging setup: one stderr sink at the configured level, with every known secret redacted.
#pragma once

#include <string_view>

#include "bizon/status.h"

namespace bizon {

/// Accepts the original's level names (TRACE, DEBUG, INFO, WARNING, ERROR, CRITICAL), any case.
Status ConfigureLogging(std::string_view level);

}  // namespace bizon
