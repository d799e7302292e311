// What a run produced: the fields of --result-json and the exit status. The original's
// PipelineReturnStatus strings ("source_error") exist here only; inside the engine a side's
// result is a Status whose failure class says which part failed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bizon/status.h"
#include "engine/runner/runner.h"

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

/// Which side a result belongs to: a failure whose class names no side is blamed on the side's
/// own part (the producer's source, the consumer's destination).
enum class Side { kProducer, kConsumer, kStream };
ReturnStatus ReturnStatusOf(const Status& result, Side side);

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
  RunRole role = RunRole::kAll;
  /// The producer role: records it published this run.
  int64_t records_published = 0;

  /// "Pipeline finished with status Failure (Producer: source_error, Consumer: source_error)".
  std::string StatusText() const;
  /// The --result-json document.
  std::string ToJson() const;
};

/// A run that failed before a runner started: `status` tagged with `failure_class` (unless it
/// carries its own), logged.
RunOutcome EarlyFailure(FailureClass failure_class, const Status& status);

/// The outcome of a runner's sides. The real error wins over "killed": a stopped producer beside
/// a failed consumer is the consumer's failure.
RunOutcome OutcomeOf(const RunnerResult& result, RunRole role);

}  // namespace bizon
