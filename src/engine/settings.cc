#include "engine/settings.h"

#include <fmt/format.h>

#include "engine/backend/backend_factory.h"

namespace bizon {
namespace {

constexpr int64_t kDefaultQueueBytes = 16LL * 1024 * 1024;

}  // namespace

std::string_view ToString(RunnerKind kind) {
  switch (kind) {
    case RunnerKind::kThread:
      return "thread";
    case RunnerKind::kProcess:
      return "process";
    case RunnerKind::kStream:
      return "stream";
  }
  return "thread";
}

std::optional<RunnerKind> ParseRunnerKind(std::string_view text) {
  for (RunnerKind kind : {RunnerKind::kThread, RunnerKind::kProcess, RunnerKind::kStream}) {
    if (ToString(kind) == text) return kind;
  }
  return std::nullopt;
}

Result<PipelineSettings> ReadSettings(const LoadedConfig& loaded) {
  const Value& config = loaded.config;
  PipelineSettings settings;
  settings.source_config = *config.Find("source");
  settings.destination_config = *config.FindPath("destination.config");
  settings.backend_config = BackendConfigOf(config);
  settings.pipeline_name = config.GetString("name");
  settings.key = {loaded.PipelineId(), settings.source_config.GetString("name"),
                  settings.source_config.GetString("stream")};
  settings.destination_name = config.FindPath("destination.name")->AsString();
  BIZON_ASSIGN_OR_RETURN(settings.sync_mode,
                         ParseSyncMode(settings.source_config.GetString("sync_mode")));
  settings.reset_requested = settings.source_config.GetBool("reset");
  settings.force_ignore_checkpoint = settings.source_config.GetBool("force_ignore_checkpoint");
  settings.max_iterations = settings.source_config.GetInteger("max_iterations", 0);
  settings.sync_cursor_every = std::max<int64_t>(
      1, settings.backend_config.Find("config") != nullptr
             ? settings.backend_config.Find("config")->GetInteger("syncCursorInDBEvery", 10)
             : 10);
  std::string runner = config.FindPath("engine.runner.type")->AsString();
  std::optional<RunnerKind> kind = ParseRunnerKind(runner);
  if (!kind) {
    return Fail(InvalidArgumentError(
        fmt::format("{}: engine.runner.type: unknown runner '{}'", loaded.file_name, runner)));
  }
  settings.runner = *kind;
  if (const Value* runner_config = config.FindPath("engine.runner.config");
      runner_config != nullptr && runner_config->is_map()) {
    settings.transform_workers =
        static_cast<int>(std::max<int64_t>(1, runner_config->GetInteger("max_workers", 2)));
    settings.python_timeout = std::chrono::milliseconds(
        static_cast<int64_t>(runner_config->GetDouble("python_timeout", 300) * 1000));
  }

  const Value* queue_config = config.FindPath("engine.queue.config");
  if (queue_config != nullptr && queue_config->is_map()) {
    settings.queue_limits.max_records = queue_config->GetInteger("max_nb_messages", 1'000'000);
    // Beyond the original: without max_bytes the queue is still bounded in bytes, so a fast
    // source cannot fill memory with a million large records before the consumer catches up.
    settings.queue_limits.max_bytes = queue_config->GetInteger("max_bytes", kDefaultQueueBytes);
    if (const Value* queue = queue_config->Find("queue")) {
      settings.queue_limits.max_iterations = queue->GetInteger("max_size", 0);
    }
  }
  settings.buffer_bytes =
      static_cast<int64_t>(settings.destination_config.GetDouble("buffer_size", 50) * 1024 * 1024);
  settings.buffer_flush_timeout_s =
      settings.destination_config.GetDouble("buffer_flush_timeout", 600);
  const Value* transforms = config.Find("transforms");
  settings.has_transforms =
      transforms != nullptr && transforms->is_list() && !transforms->AsList().empty();
  return settings;
}

}  // namespace bizon
