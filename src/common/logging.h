// Logging setup: one stderr sink at the configured level, with every known secret redacted, plus
// the sinks a run adds (Slack alerts).
#pragma once

#include <spdlog/sinks/sink.h>

#include <memory>
#include <string_view>

#include "bizon/status.h"

namespace bizon {

/// Accepts the original's level names (TRACE, DEBUG, INFO, WARNING, ERROR, CRITICAL), any case.
Status ConfigureLogging(std::string_view level);

/// Adds `sink` to the process logger beside stderr. Each sink keeps its own level (stderr the
/// configured one); the logger passes on every record at least one of them wants. Call while no
/// other thread logs (at the start and end of a run).
void AddLogSink(std::shared_ptr<spdlog::sinks::sink> sink);
void RemoveLogSink(const std::shared_ptr<spdlog::sinks::sink>& sink);

}  // namespace bizon
