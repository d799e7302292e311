// Runs one pipeline end to end: init job, producer, queue, consumer, finalize.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bizon/registry.h"
#include "bizon/status.h"
#include "config/pipeline_config.h"

namespace bizon {

/// The original's PipelineReturnStatus values.
enum class ReturnStatus {
  kSuccess,
  kRunning,
  kSourceError,
  kDestinationError,
  kBackendError,
  kQueueError,
  kTransformError,
  kStreamError,
  kKilledByRunner,
};
std::string_view ToString(ReturnStatus status);

/// What a run produced: the fields of --result-json, and the exit status.
struct RunOutcome {
  bool success = false;
  FailureClass failure_class = FailureClass::kNone;
  std::string job_id;
  std::optional<ReturnStatus> producer;
  std::optional<ReturnStatus> consumer;
  std::optional<ReturnStatus> stream;
  int64_t records_written = 0;
  int64_t started_at_us = 0;
  double duration_s = 0;
  std::string error;  // The first error of the run.

  /// "Pipeline finished with status Failure (Producer: source_error, Consumer: source_error)".
  std::string StatusText() const;
  /// The --result-json document.
  std::string ToJson() const;
};

struct RunOptions {
  /// Path of this binary, for runners that start worker processes.
  std::string executable;
};

RunOutcome RunPipeline(const LoadedConfig& config, const ConnectorRegistry& registry,
                       const RunOptions& options);

}  // namespace bizon
