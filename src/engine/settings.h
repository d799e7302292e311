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

struct PipelineSettings {
  StreamKey key;
  std::string pipeline_name;
  std::string destination_name;
  SyncMode sync_mode = SyncMode::kFullRefresh;
  bool reset_requested = false;  // --reset or source.reset.
  bool force_ignore_checkpoint = false;
  int64_t max_iterations = 0;  // 0: unlimited.
  int64_t sync_cursor_every = 10;
  RunnerKind runner = RunnerKind::kThread;
  int transform_workers = 2;  // engine.runner.config.max_workers (process runner).
  /// engine.runner.config.python_timeout: longest custom-source call or per-record transform.
  std::chrono::milliseconds python_timeout{300'000};
  QueueLimits queue_limits;
  int64_t buffer_bytes = 50LL * 1024 * 1024;
  double buffer_flush_timeout_s = 600;
  bool has_transforms = false;
  Value source_config;
  Value destination_config;
  Value backend_config;
};

Result<PipelineSettings> ReadSettings(const LoadedConfig& config);

}  // namespace bizon
