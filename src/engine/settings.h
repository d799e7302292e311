// The engine's view of a validated config: typed fields read once at start-up.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "bizon/backend.h"
#include "bizon/destination.h"
#include "bizon/value.h"
#include "config/pipeline_config.h"
#include "engine/queue/memory_queue.h"

namespace bizon {

/// engine.runner.type (or `bizon run --runner`): parsed once, here.
enum class RunnerKind { kThread, kProcess, kStream };
std::string_view ToString(RunnerKind kind);
std::optional<RunnerKind> ParseRunnerKind(std::string_view text);

/// ReadSettings fills every field from the config, each default being its declaration's (the
/// config's specs, engine_options.h, backend/ and queue/). The initial values below are for
/// settings built in code (tests): no limit, no buffering, a cursor every iteration.
struct PipelineSettings {
  StreamKey key;
  std::string pipeline_name;
  std::string destination_name;
  SyncMode sync_mode = SyncMode::kFullRefresh;
  bool reset_requested = false;  // --reset or source.reset.
  bool force_ignore_checkpoint = false;
  int64_t max_iterations = 0;  // 0: unlimited.
  int64_t sync_cursor_every = 1;
  RunnerKind runner = RunnerKind::kThread;
  int transform_workers = 1;  // engine.runner.config.max_workers (process runner).
  /// engine.runner.config.python_timeout: longest custom-source call or per-record transform;
  /// 0: no limit.
  std::chrono::milliseconds python_timeout{0};
  QueueLimits queue_limits;
  int64_t buffer_bytes = 0;           // destination.config.buffer_size; 0: each iteration.
  double buffer_flush_timeout_s = 0;  // destination.config.buffer_flush_timeout; 0: never.
  bool has_transforms = false;
  Value source_config;
  Value destination_config;
  Value backend_config;
};

Result<PipelineSettings> ReadSettings(const LoadedConfig& config);

}  // namespace bizon
