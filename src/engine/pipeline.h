// Runs one pipeline end to end: resolve the config, open the backend and the source, init the
// job, hand it to the runner, and turn the sides' results into the run's outcome.
#pragma once

#include <memory>
#include <string>

#include "bizon/registry.h"
#include "config/pipeline_config.h"
#include "engine/runner/outcome.h"

namespace bizon {

class TransformChain;

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
