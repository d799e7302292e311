#include "engine/settings.h"

#include <fmt/format.h>

#include "config/pipeline_spec.h"
#include "engine/backend/backend_factory.h"
#include "engine/backend/backend_options.h"
#include "engine/engine_options.h"
#include "engine/queue/queue_options.h"

namespace bizon {

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

  OptionReader source(Option::Object("source", CommonSourceFields()), settings.source_config);
  BIZON_ASSIGN_OR_RETURN(settings.sync_mode, ParseSyncMode(source.String("sync_mode")));
  settings.reset_requested = source.Boolean("reset");
  settings.force_ignore_checkpoint = source.Boolean("force_ignore_checkpoint");
  // Declared without a default: unset (or null) means no limit.
  const Value* max_iterations = source.Find("max_iterations");
  settings.max_iterations =
      max_iterations != nullptr && max_iterations->is_integer() ? max_iterations->AsInteger() : 0;
  BIZON_RETURN_IF_ERROR(source.status());

  BIZON_ASSIGN_OR_RETURN(settings.sync_cursor_every, ReadSyncCursorEvery(settings.backend_config));
  std::string runner_type = config.FindPath("engine.runner.type")->AsString();
  std::optional<RunnerKind> kind = ParseRunnerKind(runner_type);
  if (!kind) {
    return Fail(InvalidArgumentError(
        fmt::format("{}: engine.runner.type: unknown runner '{}'", loaded.file_name, runner_type)));
  }
  settings.runner = *kind;
  const Value* runner = config.FindPath("engine.runner");
  BIZON_ASSIGN_OR_RETURN(RunnerOptions runner_options,
                         ReadRunnerOptions(runner != nullptr ? *runner : Value()));
  settings.transform_workers = runner_options.max_workers;
  settings.python_timeout = runner_options.python_timeout;
  const Value* queue = config.FindPath("engine.queue");
  BIZON_ASSIGN_OR_RETURN(settings.queue_limits,
                         ReadQueueLimits(queue != nullptr ? *queue : Value()));

  OptionReader destination(Option::Object("config", CommonDestinationFields()),
                           settings.destination_config);
  settings.buffer_bytes = static_cast<int64_t>(destination.Number("buffer_size") * 1024 * 1024);
  settings.buffer_flush_timeout_s = destination.Number("buffer_flush_timeout");
  BIZON_RETURN_IF_ERROR(destination.status());
  const Value* transforms = config.Find("transforms");
  settings.has_transforms =
      transforms != nullptr && transforms->is_list() && !transforms->AsList().empty();
  return settings;
}

}  // namespace bizon
