// Parses YAML into a Value tree that remembers the line and column of every node. yaml-cpp stays
// inside this file's implementation.
#pragma once

#include <string>
#include <string_view>

#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

/// Parses `text`; `file_name` only labels error messages. Scalars follow YAML 1.1 as PyYAML's
/// safe loader reads them (yes/no/on/off are booleans, ~ is null), so configs mean what they
/// meant to the original. Quoted scalars are always strings.
Result<Value> ParseYaml(std::string_view text, std::string_view file_name);

/// Reads and parses a file. An empty file, or a top level that is not a mapping, is an error.
Result<Value> LoadYamlFile(const std::string& path);

}  // namespace bizon
