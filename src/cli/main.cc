// The `bizon` command line.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "bizon/registry.h"
#include "cli/cli_context.h"
#include "cli/pipeline_declaration.h"
#include "common/connector_families.h"
#include "common/logging.h"
#include "connectors/registration.h"
#include "engine/embedded_python.h"
#include "engine/transform_workers.h"

namespace {

/// The command line; exceptions escape to main().
int Run(int argc, char** argv) {
  bizon::ConnectorRegistry registry;
  if (bizon::Status status = bizon::RegisterBuiltinConnectors(registry); !status.ok()) {
    std::fprintf(stderr, "internal error: %s\n", status.ToString().c_str());
    return 70;
  }
  bizon::RegisterEmbeddedPythonHooks();
  bizon::ConfigureLogging("INFO").IgnoreError();  // A constant, always valid.

  CLI::App app{"Bizon CLI: extract and load data with checkpoints you can trust.", "bizon"};
  // The families this binary was built with: a pipeline naming a part of another is refused.
  app.set_version_flag(
      "--version", fmt::format("bizon {} ({})", BIZON_VERSION, bizon::DescribeConnectorFamilies()));
  app.require_subcommand(1);
  const bizon::PipelineDeclaration declaration = bizon::DeclarePipeline(registry);
  bizon::CliContext context{registry, declaration, argv[0], 0};
  bizon::AddRunCommand(app, context);
  bizon::AddSourceCommand(app, context);
  bizon::AddStreamCommand(app, context);
  bizon::AddSecretsCommand(app, context);
  bizon::AddConfigCommand(app, context);
  // Started by the process runner; hidden from --help (an empty group).
  app.add_subcommand("__transform-worker", "Runs transforms for a parent `bizon run`.")
      ->group("")
      ->callback([&context] { context.exit_code = bizon::RunTransformWorker(); });
  app.add_subcommand("destination", "Destination commands (none yet).")->callback([] {
    std::puts("No destination subcommands yet; see `bizon --help`.");
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;
  }
  return context.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& error) {
    // What escaped a command (`bizon run` reports its own in the result file): a clear line and
    // the exit code of an internal error, never an abort without a word.
    std::fprintf(stderr, "internal error (unknown): %s\n", error.what());
    return 70;
  } catch (...) {
    std::fprintf(stderr, "internal error (unknown): a non-standard exception\n");
    return 70;
  }
}
