// What every command shares: the connector registry and the exit code to return.
#pragma once

#include <CLI/CLI.hpp>

#include "bizon/registry.h"
#include "config/pipeline_spec.h"

namespace bizon {

struct CliContext {
  const ConnectorRegistry& registry;
  /// What pipeline files are validated against (cli/pipeline_declaration.h).
  const PipelineDeclaration& declaration;
  std::string executable;
  int exit_code = 0;
};

void AddRunCommand(CLI::App& app, CliContext& context);
void AddSourceCommand(CLI::App& app, CliContext& context);
void AddStreamCommand(CLI::App& app, CliContext& context);
void AddSecretsCommand(CLI::App& app, CliContext& context);
void AddConfigCommand(CLI::App& app, CliContext& context);

/// Prints every warning of a loaded config to stderr as `warning: file:line: path: message`.
void PrintWarnings(const struct LoadedConfig& config);

}  // namespace bizon
