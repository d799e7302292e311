// `bizon stream list <source>` and `bizon stream reset <config>`.
#include <fmt/format.h>

#include <cstdio>

#include "bizon/secret_mask.h"
#include "cli/cli_context.h"
#include "config/pipeline_config.h"
#include "engine/backend/backend_factory.h"

namespace bizon {
namespace {

struct ResetArgs {
  std::string file;
  std::string env_file;
  std::string stream;
  bool cancel = false;
};

void RunReset(const ResetArgs& args, CliContext& context) {
  LoadOptions options{.env_file = args.env_file};
  if (!args.stream.empty()) options.stream = args.stream;
  auto loaded = LoadPipelineConfig(args.file, context.declaration, options);
  if (!loaded) {
    std::fprintf(stderr, "error: %s\n",
                 SecretMask::Global().Redact(loaded.error().message()).c_str());
    context.exit_code = 1;
    return;
  }
  const Value& config = loaded->config;
  std::string sync_mode = config.FindPath("source.sync_mode")->AsString();
  if (sync_mode != "incremental") {
    std::fprintf(stderr,
                 "Error: only incremental streams can be reset, but sync_mode is '%s'; a '%s' "
                 "stream already rebuilds its destination on every run.\n",
                 sync_mode.c_str(), sync_mode.c_str());
    context.exit_code = 1;
    return;
  }
  const Value backend_config = BackendConfigOf(config);
  auto backend = OpenBackend(backend_config);
  if (!backend) {
    std::fprintf(stderr, "error: %s\n", backend.error().message().c_str());
    context.exit_code = 1;
    return;
  }
  if (backend_config.GetString("type") == "sqlite") {
    std::printf(
        "Warning: the sqlite backend is a local file (%s), so this request is only "
        "visible to runs using the same file.\n",
        DescribeBackend(backend_config).c_str());
  }
  StreamKey key{loaded->PipelineId(), config.FindPath("source.name")->AsString(),
                config.FindPath("source.stream")->AsString()};
  std::string label = key.source_name + " - " + key.stream_name;
  auto fail = [&](const Status& status) {
    std::fprintf(stderr, "error: %s\n", status.message().c_str());
    context.exit_code = 1;
  };
  if (args.cancel) {
    auto cancelled = (*backend)->CancelPendingStreamResets(key);
    if (!cancelled) return fail(cancelled.error());
    if (*cancelled == 0) {
      std::printf("No pending reset request for %s.\n", label.c_str());
    } else {
      std::printf("Cancelled %lld pending reset request(s) for %s.\n",
                  static_cast<long long>(*cancelled), label.c_str());
    }
    return;
  }
  auto pending = (*backend)->GetPendingStreamReset(key);
  if (!pending) return fail(pending.error());
  if (pending->has_value()) {
    std::printf("A reset is already pending for %s, nothing to do.\n", label.c_str());
    return;
  }
  auto last = (*backend)->GetLastSuccessfulStreamJob(key);
  if (!last) return fail(last.error());
  if (!last->has_value()) {
    std::printf(
        "Warning: no previous successful run found for %s. Check the stream name: a "
        "stream that has never run already fetches everything on its next run.\n",
        label.c_str());
  }
  auto created = (*backend)->CreateStreamReset(key);
  if (!created) return fail(created.error());
  std::printf(
      "Reset requested for %s. The next run will re-fetch the full stream, replace the "
      "destination table, and resume incremental from there.\n",
      label.c_str());
}

}  // namespace

void AddStreamCommand(CLI::App& app, CliContext& context) {
  CLI::App* stream = app.add_subcommand("stream", "Inspect and reset streams.");
  stream->require_subcommand(1);

  auto source_name = std::make_shared<std::string>();
  CLI::App* list = stream->add_subcommand("list", "List a source's streams.");
  list->add_option("source", *source_name, "Source name.")->required();
  list->callback([source_name, &context] {
    const SourceDescriptor* descriptor = context.registry.FindSource(*source_name);
    if (descriptor == nullptr) {
      std::printf("Source %s not found.\n", source_name->c_str());
      return;
    }
    std::printf("Available streams for %s:\n", source_name->c_str());
    for (const StreamSpec& spec : descriptor->streams) {
      std::printf("%s - %s\n",
                  spec.supports_incremental ? "[Supports incremental]" : "[Full refresh only]",
                  spec.name.c_str());
    }
  });

  auto args = std::make_shared<ResetArgs>();
  CLI::App* reset =
      stream->add_subcommand("reset", "Queue a stream reset for the next run of this pipeline.");
  reset->add_option("config", args->file, "Pipeline YAML file.")
      ->required()
      ->check(CLI::ExistingFile);
  reset->add_option("--env-file", args->env_file, "Load variables from this .env file.")
      ->check(CLI::ExistingFile);
  reset->add_option("--stream", args->stream, "Reset this stream instead of source.stream.");
  reset->add_flag("--cancel", args->cancel, "Cancel pending reset requests instead.");
  reset->callback([args, &context] { RunReset(*args, context); });
}

}  // namespace bizon
