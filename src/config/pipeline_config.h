// Loads a pipeline file the way `bizon run` does: .env, YAML, CLI overrides, legacy BIZON_ENV_
// values, references, then validation against the declared specs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bizon/status.h"
#include "bizon/value.h"
#include "config/pipeline_spec.h"
#include "config/validator.h"

namespace bizon {

struct LoadOptions {
  std::string env_file;          // Empty: auto-detect .env in the working directory or above.
  bool skip_references = false;  // Keep env:// and gsm:// strings as literals.
  // Command-line overrides, written into the raw config before validation.
  std::optional<std::string> log_level;
  std::optional<std::string> custom_source;
  std::optional<std::string> runner;
  bool reset = false;
  std::optional<std::string> stream;
};

struct LoadedConfig {
  std::string file_name;
  /// After overrides and reference resolution, before defaults: line numbers live here.
  Value raw;
  /// Validated, with defaults filled in.
  Value config;
  std::vector<Diagnostic> warnings;

  /// The identity backend rows are keyed by: `id`, or `name` when no id is set.
  std::string PipelineId() const;
};

/// Loads and validates. Any error gives a Status (failure class config) whose message lists
/// every problem as `file:line: path: message`.
Result<LoadedConfig> LoadPipelineConfig(const std::string& path,
                                        const PipelineDeclaration& declaration,
                                        const LoadOptions& options);

/// Steps 1-4 only (env file, YAML, legacy env): what `bizon secrets check` inspects.
Result<Value> LoadRawConfig(const std::string& path, const LoadOptions& options);

}  // namespace bizon
