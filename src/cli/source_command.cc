// `bizon source list` and `bizon stream list <source>`.
#include <fmt/format.h>

#include <cstdio>

#include "cli/cli_context.h"

namespace bizon {

void AddSourceCommand(CLI::App& app, CliContext& context) {
  CLI::App* source = app.add_subcommand("source", "Inspect sources.");
  source->require_subcommand(1);
  source->add_subcommand("list", "List available sources and their streams.")->callback([&context] {
    std::puts("Retrieving available sources...");
    std::puts("Available sources:");
    for (const SourceDescriptor* descriptor : context.registry.sources()) {
      std::string streams;
      for (const StreamSpec& stream : descriptor->streams) {
        if (!streams.empty()) streams += ", ";
        streams += "'" + stream.name + "'";
      }
      std::string note = descriptor->factory ? "" : " (declared; not implemented yet)";
      std::printf("%s - [%s]%s\n", descriptor->name.c_str(), streams.c_str(), note.c_str());
    }
  });
}

}  // namespace bizon
