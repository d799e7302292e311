// Runs one pipeline end to end: init job, producer, queue, consumer, finalize.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "bizon/registry.h"
#include "bizon/status.h"
#include "config/pipeline_config.h"

namespace bizon {

class TransformChain;

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

/// Which side of the pipeline this process runs (`bizon run --role`): both (the default), or
/// one of them, the other running in another process through a kafka or rabbitmq queue.
enum class RunRole { kAll, kProducer, kConsumer };

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
  RunRole role = RunRole::kAll;
  /// The producer role: records it published this run.
  int64_t records_published = 0;

  /// "Pipeline finished with status Failure (Producer: source_error, Consumer: source_error)".
  std::string StatusText() const;
  /// The --result-json document.
  std::string ToJson() const;
};

struct RunOptions {
  /// Path of this binary, for runners that start worker processes.
  std::string executable;
  RunRole role = RunRole::kAll;
  /// The producer role: how long to wait for the consumer to open the job.
  double job_wait_s = 300;
  /// The config's `transforms:`, compiled by the caller (PrepareEmbeddedPython in
  /// engine/embedded_python.h); required when the config has transforms.
  std::shared_ptr<TransformChain> transforms;
};

RunOutcome RunPipeline(const LoadedConfig& config, const ConnectorRegistry& registry,
                       const RunOptions& options);

}  // namespace bizon
