// `bizon run <config>`.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>

#include "alerting/slack_alerter.h"
#include "bizon/clock.h"
#include "bizon/secret_mask.h"
#include "cli/cli_context.h"
#include "common/logging.h"
#include "config/pipeline_config.h"
#include "engine/embedded_python.h"
#include "engine/pipeline.h"
#include "engine/runner/runner.h"

namespace bizon {
namespace {

struct RunArgs {
  std::string file;
  std::string custom_source;
  std::string runner;
  std::string log_level;
  std::string env_file;
  std::string result_json;
  std::string role = "all";
  double job_wait_s = 300;
  bool reset = false;
};

/// Writes the --result-json file whole (a temporary file renamed over it), or says why not. A
/// scheduler reads this file: one that cannot be written must not pass unnoticed.
Status WriteResult(const std::string& path, const RunOutcome& outcome, bool running) {
  if (path.empty()) return Status::Ok();
  std::string text;
  if (running) {
    text = fmt::format(R"({{"status": "running", "started_at": "{}"}})",
                       FormatIsoTimestamp(outcome.started_at_us));
  } else {
    text = SecretMask::Global().Redact(outcome.ToJson());
  }
  std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << text << "\n";
    out.flush();
    if (!out) {
      std::remove(temp.c_str());  // Ignored: there may be nothing to remove.
      return InvalidArgumentError(
          fmt::format("cannot write the result file {}: {}", temp, std::strerror(errno)));
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    int error = errno;
    std::remove(temp.c_str());  // Ignored: the rename's error is the one reported.
    return InvalidArgumentError(
        fmt::format("cannot move the result file {} to {}: {}", temp, path, std::strerror(error)));
  }
  return Status::Ok();
}

/// Prints why the final result file could not be written; false then.
bool ReportResultFile(const Status& written) {
  if (written.ok()) return true;
  std::fprintf(stderr, "Error: --result-json: %s\n",
               SecretMask::Global().Redact(written.message()).c_str());
  return false;
}

/// RunPipeline, with anything it throws reported as a failure of class `unknown` instead of
/// ending the process without a result.
RunOutcome RunGuarded(const LoadedConfig& loaded, CliContext& context,
                      const RunOptions& run_options) {
  try {
    return RunPipeline(loaded, context.registry, run_options);
  } catch (const std::exception& error) {
    RunOutcome failed;
    failed.failure_class = FailureClass::kUnknown;
    failed.error = fmt::format("Error: unexpected exception: {}", error.what());
    return failed;
  }
}

void RunCommand(const RunArgs& args, CliContext& context) {
  RunOutcome outcome;
  outcome.started_at_us = NowMicros();
  if (Status written = WriteResult(args.result_json, outcome, /*running=*/true); !written.ok()) {
    // Before anything runs: nothing is loaded without a result a scheduler could read.
    std::fprintf(stderr, "Error: --result-json: %s\n", written.message().c_str());
    context.exit_code = 1;
    return;
  }

  LoadOptions options{.env_file = args.env_file};
  if (!args.log_level.empty()) options.log_level = args.log_level;
  if (!args.custom_source.empty()) options.custom_source = args.custom_source;
  if (!args.runner.empty()) options.runner = args.runner;
  options.reset = args.reset;
  auto loaded = LoadPipelineConfig(args.file, context.declaration, options);
  // The transforms are compiled here, once: the run is handed the chain.
  Result<std::shared_ptr<TransformChain>> transforms =
      loaded ? PrepareEmbeddedPython(*loaded) : Fail(loaded.error());
  if (!transforms) {
    const Status& error = transforms.error();
    std::fprintf(stderr, "%s\n", SecretMask::Global().Redact(error.message()).c_str());
    outcome.failure_class = FailureClass::kConfig;
    outcome.error = "ConfigError: " + error.message();
    outcome.duration_s = static_cast<double>(NowMicros() - outcome.started_at_us) / 1e6;
    ReportResultFile(WriteResult(args.result_json, outcome, false));
    context.exit_code = 1;
    return;
  }
  PrintWarnings(*loaded);
  // Ignored: the validated config only holds known levels.
  ConfigureLogging(loaded->config.FindPath("engine.runner.log_level")->AsString()).IgnoreError();
  // Posts records at the alerting levels to Slack; flushed (bounded) when it goes out of scope,
  // after the result file is written.
  std::unique_ptr<RunAlerting> alerting = StartRunAlerting(loaded->config);

  RunOptions run_options{.executable = context.executable,
                         .role = ParseRunRole(args.role).value_or(RunRole::kAll),
                         .job_wait_s = args.job_wait_s,
                         .transforms = std::move(*transforms)};
  RunOutcome result = RunGuarded(*loaded, context, run_options);
  result.started_at_us = outcome.started_at_us;
  result.duration_s = static_cast<double>(NowMicros() - outcome.started_at_us) / 1e6;
  bool result_written = ReportResultFile(WriteResult(args.result_json, result, false));
  if (result.success) {
    std::puts("Pipeline finished successfully.");
  } else {
    std::fprintf(stderr, "Error: %s\n", result.StatusText().c_str());
    if (!result.error.empty()) {
      std::fprintf(stderr, "%s\n", SecretMask::Global().Redact(result.error).c_str());
    }
  }
  // A successful run whose result file still says "running" is not a success to a scheduler.
  if (!result.success || !result_written) context.exit_code = 1;
}

}  // namespace

void AddRunCommand(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand("run", "Run a pipeline from a YAML config.");
  run->add_option("config", args->file, "Pipeline YAML file.")
      ->required()
      ->check(CLI::ExistingFile);
  run->add_option("--custom-source", args->custom_source,
                  "Custom Python file implementing a bizon source.")
      ->check(CLI::ExistingFile);
  run->add_option("--runner", args->runner, "thread | process | stream (overrides the config).")
      ->check(CLI::IsMember({"thread", "process", "stream"}));
  run->add_option("--log-level", args->log_level,
                  "TRACE | DEBUG | INFO | WARNING | ERROR | CRITICAL (overrides the config).")
      ->check(CLI::IsMember({"TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"},
                            CLI::ignore_case));
  run->add_option("--env-file", args->env_file, "Load variables from this .env file.")
      ->check(CLI::ExistingFile);
  run->add_option("--result-json", args->result_json, "Write the run's outcome as JSON here.");
  run->add_option("--role", args->role,
                  "all | producer | consumer: run both sides (default), or one side, the other "
                  "running elsewhere through a kafka or rabbitmq queue.")
      ->check(CLI::IsMember({"all", "producer", "consumer"}));
  run->add_option("--wait-for-job", args->job_wait_s,
                  "Producer role: seconds to wait for the consumer to open the job (default "
                  "300).")
      ->check(CLI::NonNegativeNumber);
  run->add_flag("--reset", args->reset,
                "Re-fetch the whole stream and replace the destination table (incremental).");
  run->callback([args, &context] { RunCommand(*args, context); });
}

}  // namespace bizon
