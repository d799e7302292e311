// `bizon config validate` and `bizon config schema`.
#include <fmt/format.h>

#include <cstdio>

#include "bizon/secret_mask.h"
#include "cli/cli_context.h"
#include "config/json_schema.h"
#include "config/pipeline_config.h"
#include "config/pipeline_spec.h"
#include "config/reference_docs.h"
#include "engine/embedded_python.h"

namespace bizon {

void PrintWarnings(const LoadedConfig& config) {
  for (const Diagnostic& warning : config.warnings) {
    std::fprintf(stderr, "warning: %s\n",
                 SecretMask::Global().Redact(warning.Format(config.file_name)).c_str());
  }
}

namespace {

struct ValidateArgs {
  std::string file;
  std::string env_file;
  bool strict = false;
  bool skip_references = false;
};

void PrintErrors(const Status& status) {
  // One error per line, each already "file:line: path: message".
  std::string message = SecretMask::Global().Redact(status.message());
  size_t start = 0;
  while (start <= message.size()) {
    size_t end = message.find('\n', start);
    std::string line = message.substr(start, end == std::string::npos ? end : end - start);
    if (!line.empty()) std::fprintf(stderr, "error: %s\n", line.c_str());
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

}  // namespace

void AddConfigCommand(CLI::App& app, CliContext& context) {
  CLI::App* config = app.add_subcommand("config", "Check pipeline files.");
  config->require_subcommand(1);

  auto args = std::make_shared<ValidateArgs>();
  CLI::App* validate = config->add_subcommand(
      "validate", "Validate a pipeline file the way a run would, without running it.");
  validate->add_option("config", args->file, "Pipeline YAML file.")
      ->required()
      ->check(CLI::ExistingFile);
  validate->add_option("--env-file", args->env_file, "Load variables from this .env file.")
      ->check(CLI::ExistingFile);
  validate->add_flag("--strict", args->strict, "Treat warnings as errors.");
  validate->add_flag("--skip-references", args->skip_references,
                     "Keep env:// and gsm:// references as literal strings.");
  validate->callback([args, &context] {
    LoadOptions options{.env_file = args->env_file, .skip_references = args->skip_references};
    auto loaded = LoadPipelineConfig(args->file, context.declaration, options);
    // The transforms are compiled as a run would, so that a syntax error is reported here.
    Result<std::shared_ptr<TransformChain>> transforms =
        loaded ? PrepareEmbeddedPython(*loaded) : Fail(loaded.error());
    if (!transforms) {
      PrintErrors(transforms.error());
      context.exit_code = 1;
      return;
    }
    PrintWarnings(*loaded);
    if (args->strict && !loaded->warnings.empty()) {
      std::fprintf(stderr, "%s: %zu warning(s), failing because of --strict\n", args->file.c_str(),
                   loaded->warnings.size());
      context.exit_code = 1;
      return;
    }
    std::printf("%s: config valid (%zu warning(s))\n", args->file.c_str(), loaded->warnings.size());
  });

  CLI::App* schema = config->add_subcommand(
      "schema", "Print the JSON Schema of pipeline files, for editors and CI checks.");
  schema->callback(
      [&context] { std::puts(ToJsonSchema(PipelineSpec(context.declaration)).ToJson().c_str()); });

  config->add_subcommand("docs", "Print the Markdown reference of every declared option.")
      ->callback(
          [&context] { std::fputs(RenderConfigReference(context.declaration).c_str(), stdout); });
}

}  // namespace bizon
