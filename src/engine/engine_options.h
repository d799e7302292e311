// The `engine:` block of a pipeline file: its declaration, assembled from the parts beside their
// readers (backend/backend_options.h, queue/queue_options.h, the runner's below), and the
// runner's typed options.
#pragma once

#include <chrono>
#include <string>

#include "bizon/config_spec.h"
#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

/// `engine:` (backend, queue, runner), for the config loader (config/pipeline_spec.h).
ConfigSection EngineSection();

/// `engine.runner`: how producer and consumer execute.
FieldSpec RunnerField();

/// `engine.runner`, read once. Every value comes from the config or the declaration's default.
struct RunnerOptions {
  /// config.max_workers: transform worker processes (process runner).
  int max_workers = 0;
  /// config.python_timeout: longest custom-source call or per-record transform; 0: no limit.
  std::chrono::milliseconds python_timeout{0};
  /// config.python_env: the user's virtualenv; empty: $VIRTUAL_ENV, if any.
  std::string python_env;
};

/// `runner` is the normalized `engine.runner` block (absent or null: the defaults).
Result<RunnerOptions> ReadRunnerOptions(const Value& runner);

}  // namespace bizon
