#include "config/yaml_loader.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

namespace bizon {
namespace {

// YAML 1.1 core schema, as PyYAML's SafeLoader resolves plain scalars.
const std::regex kNullPattern("^(~|null|Null|NULL|)$");
const std::regex kTruePattern("^(yes|Yes|YES|true|True|TRUE|on|On|ON|y|Y)$");
const std::regex kFalsePattern("^(no|No|NO|false|False|FALSE|off|Off|OFF|n|N)$");
const std::regex kIntegerPattern("^[-+]?(0|[1-9][0-9_]*)$");
const std::regex kFloatPattern(
    "^[-+]?(([0-9][0-9_]*)?\\.[0-9_]*([eE][-+]?[0-9]+)?|[0-9][0-9_]*[eE][-+]?[0-9]+)$");

Value ResolvePlainScalar(const std::string& text) {
  // PyYAML does not treat single-letter y/n as booleans; only the words.
  if (std::regex_match(text, kNullPattern)) return Value();
  if (text != "y" && text != "Y" && std::regex_match(text, kTruePattern)) return Value(true);
  if (text != "n" && text != "N" && std::regex_match(text, kFalsePattern)) return Value(false);
  if (std::regex_match(text, kIntegerPattern)) {
    std::string digits;
    for (char c : text) {
      if (c != '_') digits.push_back(c);
    }
    errno = 0;
    long long parsed = std::strtoll(digits.c_str(), nullptr, 10);
    if (errno == 0) return Value(static_cast<int64_t>(parsed));
  }
  if (text != "." && std::regex_match(text, kFloatPattern)) {
    std::string digits;
    for (char c : text) {
      if (c != '_') digits.push_back(c);
    }
    return Value(std::strtod(digits.c_str(), nullptr));
  }
  if (text == ".inf" || text == ".Inf" || text == "+.inf") return Value(HUGE_VAL);
  if (text == "-.inf" || text == "-.Inf") return Value(-HUGE_VAL);
  return Value(text);
}

Value Convert(const YAML::Node& node) {
  Value result;
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      result = Value();
      break;
    case YAML::NodeType::Scalar:
      // yaml-cpp tags quoted and block scalars "!" and plain ones "?".
      result = node.Tag() == "?" ? ResolvePlainScalar(node.Scalar()) : Value(node.Scalar());
      break;
    case YAML::NodeType::Sequence: {
      Value::List list;
      list.reserve(node.size());
      for (const auto& item : node) list.push_back(Convert(item));
      result = Value(std::move(list));
      break;
    }
    case YAML::NodeType::Map: {
      Value::Map map;
      for (const auto& entry : node) {
        std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
        Value child = Convert(entry.second);
        if (child.mark().line == 0 || entry.second.IsNull()) {
          child.set_mark({entry.first.Mark().line + 1, entry.first.Mark().column + 1});
        }
        map.emplace_back(std::move(key), std::move(child));
      }
      result = Value(std::move(map));
      break;
    }
  }
  if (node.Mark().line >= 0) result.set_mark({node.Mark().line + 1, node.Mark().column + 1});
  return result;
}

}  // namespace

Result<Value> ParseYaml(std::string_view text, std::string_view file_name) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& error) {
    return Fail(
        InvalidArgumentError(fmt::format("{}:{}:{}: malformed YAML: {}", file_name,
                                         error.mark.line + 1, error.mark.column + 1, error.msg)));
  }
  if (!root.IsDefined() || root.IsNull()) {
    return Fail(InvalidArgumentError(
        fmt::format("{}: the file is empty; a pipeline needs at least name, source and "
                    "destination",
                    file_name)));
  }
  if (!root.IsMap()) {
    return Fail(InvalidArgumentError(
        fmt::format("{}:{}: the top level must be a mapping of keys (name, source, destination...)",
                    file_name, root.Mark().line + 1)));
  }
  return Convert(root);
}

Result<Value> LoadYamlFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Fail(
        NotFoundError(fmt::format("cannot open config file {}: {}", path, std::strerror(errno)))
            .WithFailureClass(FailureClass::kConfig));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseYaml(buffer.str(), path);
}

}  // namespace bizon
