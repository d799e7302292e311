#include "config/yaml_loader.h"

#include <fmt/format.h>
#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <unordered_map>
#include <vector>

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

// A pipeline file is a few hundred nodes. These bounds are far above any real config and far below
// what an alias bomb ("billion laughs": anchors of anchors, each used many times) would expand to.
constexpr uint64_t kMaxExpandedNodes = 100'000;
constexpr uint64_t kMaxDepth = 64;

// Walks the parser's events before the tree is built and measures what every alias expands to,
// since yaml-cpp shares an anchored node between its aliases and the conversion to Value below
// copies it once per use. It stops at the first alias or nesting that passes a bound and names it.
class ExpansionBudget : public YAML::EventHandler {
 public:
  /// The problem found, as "line: message", or nullopt when the document is within the bounds.
  const std::optional<std::string>& problem() const { return problem_; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnAnchor(const YAML::Mark&, const std::string& name) override { pending_name_ = name; }
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Leaf(mark, anchor); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    Leaf(mark, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto found = anchors_.find(anchor);
    if (found == anchors_.end()) {
      // An alias inside the collection it names makes a cycle that yaml-cpp accepts and the
      // conversion below would follow for ever (found by fuzz/fuzz_yaml_config). Any other
      // unknown alias yaml-cpp rejects itself.
      for (const OpenCollection& open : open_) {
        if (anchor != YAML::NullAnchor && open.anchor == anchor) {
          Refuse(mark, fmt::format("the alias *{} is inside the anchor it names", open.name));
        }
      }
      return;
    }
    const Anchored& target = found->second;
    if (Depth() + target.depth > kMaxDepth) {
      Refuse(mark,
             fmt::format("the alias *{} nests deeper than {} levels", target.name, kMaxDepth));
      return;
    }
    Count(target.nodes, target.depth);
    if (total_ > kMaxExpandedNodes) {
      Refuse(mark, fmt::format("the alias *{} expands the document past {} nodes (anchors used "
                               "inside anchors multiply); write the values out instead",
                               target.name, kMaxExpandedNodes));
    }
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Anchored {
    std::string name;
    uint64_t nodes = 0;
    uint64_t depth = 0;  // Levels below the anchored node, 0 for a scalar.
  };
  struct OpenCollection {
    YAML::anchor_t anchor = YAML::NullAnchor;
    std::string name;
    uint64_t nodes = 1;  // The collection itself.
    uint64_t depth = 0;
  };

  uint64_t Depth() const { return open_.size(); }

  // Counts stop growing once past the bound, so they never overflow.
  static uint64_t Saturated(uint64_t a, uint64_t b) {
    return std::min(a + b, kMaxExpandedNodes + 1);
  }
  void Count(uint64_t nodes, uint64_t depth) {
    total_ = Saturated(total_, nodes);
    if (open_.empty()) return;
    OpenCollection& parent = open_.back();
    parent.nodes = Saturated(parent.nodes, nodes);
    parent.depth = std::max(parent.depth, depth + 1);
  }
  void Remember(YAML::anchor_t anchor, std::string name, uint64_t nodes, uint64_t depth) {
    if (anchor != YAML::NullAnchor) anchors_[anchor] = {std::move(name), nodes, depth};
  }
  void Leaf(const YAML::Mark&, YAML::anchor_t anchor) {
    Remember(anchor, std::exchange(pending_name_, {}), 1, 0);
    Count(1, 0);
  }
  void Open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    total_ = Saturated(total_, 1);
    open_.push_back({.anchor = anchor, .name = std::exchange(pending_name_, {})});
    if (Depth() > kMaxDepth) Refuse(mark, fmt::format("nesting deeper than {} levels", kMaxDepth));
  }
  void Close() {
    if (open_.empty()) return;
    OpenCollection done = std::move(open_.back());
    open_.pop_back();
    Remember(done.anchor, done.name, done.nodes, done.depth);
    // The collection itself went into total_ when it opened; only its parent still needs it.
    if (open_.empty()) return;
    OpenCollection& parent = open_.back();
    parent.nodes = Saturated(parent.nodes, done.nodes);
    parent.depth = std::max(parent.depth, done.depth + 1);
  }
  void Refuse(const YAML::Mark& mark, std::string message) {
    if (!problem_) problem_ = fmt::format("{}: {}", mark.line + 1, message);
  }

  std::unordered_map<YAML::anchor_t, Anchored> anchors_;
  std::vector<OpenCollection> open_;
  std::string pending_name_;
  uint64_t total_ = 0;
  std::optional<std::string> problem_;
};

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
    std::string owned(text);
    std::istringstream events(owned);
    YAML::Parser parser(events);
    ExpansionBudget budget;
    parser.HandleNextDocument(budget);
    if (budget.problem()) {
      return Fail(InvalidArgumentError(fmt::format("{}:{}", file_name, *budget.problem())));
    }
    root = YAML::Load(owned);
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
