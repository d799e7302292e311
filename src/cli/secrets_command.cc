// `bizon secrets check <config>`: resolves every reference and reports it, masked.
#include <fmt/format.h>

#include <cstdio>

#include "cli/cli_context.h"
#include "config/pipeline_config.h"
#include "config/references.h"

namespace bizon {

void AddSecretsCommand(CLI::App& app, CliContext& context) {
  CLI::App* secrets = app.add_subcommand("secrets", "Check secret references.");
  secrets->require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto env_file = std::make_shared<std::string>();
  CLI::App* check = secrets->add_subcommand(
      "check", "Resolve every env:// and gsm:// reference and print a masked report.");
  check->add_option("config", *file, "Pipeline YAML file.")->required()->check(CLI::ExistingFile);
  check->add_option("--env-file", *env_file, "Load variables from this .env file.")
      ->check(CLI::ExistingFile);
  check->callback([file, env_file, &context] {
    auto raw = LoadRawConfig(*file, LoadOptions{.env_file = *env_file});
    if (!raw) {
      std::fprintf(stderr, "error: %s\n", raw.error().message().c_str());
      context.exit_code = 1;
      return;
    }
    std::vector<ReferenceSite> malformed;
    std::vector<ReferenceSite> sites = ReferenceResolver::Collect(*raw, &malformed);
    if (sites.empty() && malformed.empty()) {
      std::puts("No gsm:// / env:// references found in config.");
      return;
    }
    size_t path_width = 0;
    size_t reference_width = 0;
    for (const auto* list : {&sites, &malformed}) {
      for (const ReferenceSite& site : *list) {
        path_width = std::max(path_width, site.yaml_path.size());
        reference_width = std::max(reference_width, site.reference.size());
      }
    }
    ReferenceResolver resolver(raw->Find("secrets") != nullptr ? *raw->Find("secrets") : Value());
    size_t failures = 0;
    for (const ReferenceSite& site : sites) {
      auto value = resolver.ResolveReference(site.reference);
      std::string status = value ? fmt::format("✓  ({} chars)", value->size())
                                 : fmt::format("✗  {}", value.error().message());
      if (!value) ++failures;
      std::printf("%s\n", fmt::format("{:<{}}   {:<{}}   {}", site.yaml_path, path_width,
                                      site.reference, reference_width, status)
                              .c_str());
    }
    for (const ReferenceSite& site : malformed) {
      ++failures;
      std::printf("%s\n", fmt::format("{:<{}}   {:<{}}   ✗  malformed reference token, expected "
                                      "'${{<scheme>://<path>}}' (line {})",
                                      site.yaml_path, path_width, site.reference, reference_width,
                                      site.mark.line)
                              .c_str());
    }
    size_t total = sites.size() + malformed.size();
    if (failures > 0) {
      std::fprintf(stderr, "Error: %zu reference(s) failed to resolve.\n", failures);
      context.exit_code = 1;
    } else {
      std::printf("All %zu reference(s) resolved.\n", total);
    }
  });
}

}  // namespace bizon
