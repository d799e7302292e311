#include "engine/resolve.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/backend/backend_factory.h"

namespace bizon {
namespace {

/// The streams the source serves: a custom Python source's, after checking that it has the
/// configured one, or the registered connector's.
Result<std::vector<StreamSpec>> StreamsOf(const LoadedConfig& config, const ResolvedRun& run) {
  const PipelineSettings& settings = run.settings;
  if (run.python_source_path.empty()) {
    if (run.source_descriptor == nullptr || !run.source_descriptor->factory) {
      return Fail(InvalidArgumentError(fmt::format(
          "source '{}' is declared but not implemented in this build", settings.key.source_name)));
    }
    return run.source_descriptor->streams;
  }
  BIZON_ASSIGN_OR_RETURN(PythonSourceInfo info,
                         InspectPythonSource(run.python_source_path, settings.key.source_name));
  std::string available;
  bool known = false;
  for (const StreamSpec& stream : info.streams) {
    known |= stream.name == settings.key.stream_name;
    available += fmt::format("{}'{}'", available.empty() ? "" : ", ", stream.name);
  }
  if (!known) {
    return Fail(InvalidArgumentError(fmt::format(
        "{}: source.stream: Stream {} not found. Available streams are [{}] "
        "(custom source {})",
        config.file_name, settings.key.stream_name, available, run.python_source_path)));
  }
  return info.streams;
}

Status CheckIncremental(const LoadedConfig& config, const PipelineSettings& settings,
                        const std::vector<StreamSpec>& streams) {
  if (settings.sync_mode != SyncMode::kIncremental) return Status::Ok();
  for (const StreamSpec& stream : streams) {
    if (stream.name == settings.key.stream_name && !stream.supports_incremental) {
      return InvalidArgumentError(fmt::format(
          "{}: source.sync_mode: stream '{}' of source '{}' does not support incremental sync; "
          "use full_refresh (see `bizon stream list {}`)",
          config.file_name, settings.key.stream_name, settings.key.source_name,
          settings.key.source_name));
    }
  }
  return Status::Ok();
}

/// A split role needs a network queue and a backend both processes reach.
Status CheckRole(RunRole role, const LoadedConfig& config, const ResolvedRun& run) {
  if (role == RunRole::kAll) return Status::Ok();
  const Value* queue_type = config.config.FindPath("engine.queue.type");
  std::string type =
      queue_type != nullptr && queue_type->is_string() ? queue_type->AsString() : "python_queue";
  const std::string& file = config.file_name;
  if (type != "kafka" && type != "rabbitmq") {
    return InvalidArgumentError(
        fmt::format("{}: engine.queue.type: --role {} needs a kafka or rabbitmq queue; {} lives "
                    "inside one process",
                    file, ToString(role), type));
  }
  if (run.runner == RunnerKind::kStream) {
    return InvalidArgumentError(
        fmt::format("{}: engine.runner.type: --role {} needs the thread or process runner; the "
                    "stream runner does not use a queue",
                    file, ToString(role)));
  }
  if (IsProcessLocal(run.settings.backend_config)) {
    return InvalidArgumentError(
        fmt::format("{}: engine.backend.type: --role {} needs a backend both processes reach "
                    "(sqlite or postgres); {} lives inside one process",
                    file, ToString(role), DescribeBackend(run.settings.backend_config)));
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Source>> ResolvedRun::MakeSource(const SourceContext& context) const {
  auto source = python_source_path.empty()
                    ? source_descriptor->factory(context)
                    : OpenPythonSource(python_source_path, context, python_options);
  if (!source) return Fail(source.error().WithFailureClass(FailureClass::kSource));
  return source;
}

Result<ResolvedRun> ResolveRun(const LoadedConfig& config, const ConnectorRegistry& registry,
                               RunRole role, std::shared_ptr<TransformChain> transforms) {
  ResolvedRun run;
  BIZON_ASSIGN_OR_RETURN(run.settings, ReadSettings(config));
  const PipelineSettings& settings = run.settings;
  run.python_source_path = settings.source_config.GetString("source_file_path");
  run.python_options.call_timeout = settings.python_timeout;
  if (const Value* streams = config.config.Find("streams"); streams != nullptr) {
    run.python_options.streams = *streams;
  }
  run.transforms_config = config.config.Find("transforms");
  run.source_descriptor = registry.FindSource(settings.key.source_name);
  run.destination_descriptor = registry.FindDestination(settings.destination_name);
  BIZON_ASSIGN_OR_RETURN(std::vector<StreamSpec> streams, StreamsOf(config, run));
  if (run.destination_descriptor == nullptr || !run.destination_descriptor->factory) {
    return Fail(InvalidArgumentError(
        fmt::format("destination '{}' is declared but not implemented in this build",
                    settings.destination_name)));
  }
  run.transforms = std::move(transforms);
  if (settings.has_transforms && run.transforms == nullptr) {
    return Fail(InternalError("the run was started without its compiled transforms"));
  }
  BIZON_RETURN_IF_ERROR(CheckIncremental(config, settings, streams));
  run.runner = settings.runner;
  if (run.runner == RunnerKind::kStream && settings.sync_mode != SyncMode::kStream) {
    // The stream runner writes as it reads and never publishes a staged run; the original ran
    // every pipeline under the thread runner whatever engine.runner.type said.
    spdlog::warn(
        "The stream runner serves sync_mode stream; this {} run uses the thread runner, as the "
        "original ran every pipeline",
        ToString(settings.sync_mode));
    run.runner = RunnerKind::kThread;
  }
  if (run.runner == RunnerKind::kProcess && !run.python_source_path.empty()) {
    // The embedded interpreter is started in this process, and a forked child must not use it.
    spdlog::warn(
        "The process runner cannot run a custom Python source in a forked producer; "
        "using the thread runner");
    run.runner = RunnerKind::kThread;
  }
  if (const Value* queue_block = config.config.FindPath("engine.queue")) {
    run.broker = ReadBrokerQueueConfig(*queue_block);
  }
  BIZON_RETURN_IF_ERROR(CheckRole(role, config, run));
  return run;
}

}  // namespace bizon
