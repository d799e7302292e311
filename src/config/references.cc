#include "config/references.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "bizon/secret_mask.h"
#include "common/ascii.h"
#include "google/secret_manager.h"

namespace bizon {
namespace {

/// "a.b" for `key` under `path`; `key` alone at the top.
std::string JoinPath(const std::string& path, const std::string& key) {
  if (path.empty()) return key;
  std::string joined;
  joined.reserve(path.size() + 1 + key.size());
  joined.append(path).append(".").append(key);
  return joined;
}

// `<scheme>://<path>`: scheme of lowercase letters, digits and underscores; path non-empty.
const std::regex kReferencePattern("^([a-z0-9_]+)://([\\s\\S]+)$");

class EnvProvider final : public ReferenceProvider {
 public:
  Result<std::string> Resolve(std::string_view path) override {
    std::string name(TrimAsciiSpace(path));
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) {
      return Fail(NotFoundError(fmt::format("environment variable '{}' is not set", name)));
    }
    return std::string(value);
  }
};

// Google Secret Manager: src/google/secret_manager.h does the HTTP and credentials part, made
// on the first gsm:// reference, so a config without one never touches Google.
class GsmProvider final : public ReferenceProvider {
 public:
  explicit GsmProvider(std::optional<std::string> project_id)
      : manager_(SecretManagerOptions{.project_id = std::move(project_id)}) {}
  Result<std::string> Resolve(std::string_view path) override { return manager_.Resolve(path); }

 private:
  GoogleSecretManager manager_;
};

struct InlineToken {
  size_t begin;
  size_t end;  // One past the closing brace.
  std::string inner;
};

std::vector<InlineToken> FindInlineTokens(const std::string& text) {
  std::vector<InlineToken> tokens;
  size_t pos = 0;
  while ((pos = text.find("${", pos)) != std::string::npos) {
    size_t close = text.find('}', pos + 2);
    if (close == std::string::npos) break;  // An unclosed token is left as is.
    tokens.push_back(
        {pos, close + 1,
         std::string(TrimAsciiSpace(std::string_view(text).substr(pos + 2, close - pos - 2)))});
    pos = close + 1;
  }
  return tokens;
}

bool IsKnownScheme(std::string_view scheme) { return scheme == "env" || scheme == "gsm"; }

void CollectInto(const Value& node, const std::string& path, std::vector<ReferenceSite>& sites,
                 std::vector<ReferenceSite>* malformed) {
  if (node.is_map()) {
    for (const auto& [key, child] : node.AsMap()) {
      CollectInto(child, JoinPath(path, key), sites, malformed);
    }
  } else if (node.is_list()) {
    const auto& list = node.AsList();
    for (size_t i = 0; i < list.size(); ++i) {
      CollectInto(list[i], fmt::format("{}[{}]", path, i), sites, malformed);
    }
  } else if (node.is_string()) {
    const std::string& text = node.AsString();
    std::smatch match;
    if (text.find("${") != std::string::npos) {
      for (const InlineToken& token : FindInlineTokens(text)) {
        if (std::regex_match(token.inner, match, kReferencePattern) &&
            IsKnownScheme(match[1].str())) {
          sites.push_back({path, token.inner, node.mark()});
        } else if (malformed != nullptr) {
          malformed->push_back(
              {path, text.substr(token.begin, token.end - token.begin), node.mark()});
        }
      }
      return;
    }
    std::string trimmed(TrimAsciiSpace(text));
    if (std::regex_match(trimmed, match, kReferencePattern) && IsKnownScheme(match[1].str())) {
      sites.push_back({path, trimmed, node.mark()});
    }
  }
}

}  // namespace

ReferenceResolver::ReferenceResolver(const Value& secrets_block) {
  // Provider defaults come from the raw block, as written (the original reads them before
  // resolution too).
  std::optional<std::string> gsm_project;
  if (const Value* project = secrets_block.FindPath("gsm.project_id");
      project != nullptr && project->is_string() && !project->AsString().empty()) {
    gsm_project = project->AsString();
  }
  providers_.emplace("env", std::make_unique<EnvProvider>());
  providers_.emplace("gsm", std::make_unique<GsmProvider>(std::move(gsm_project)));
}

Result<std::string> ReferenceResolver::ResolveReference(std::string_view reference) {
  if (auto cached = cache_.find(reference); cached != cache_.end()) return cached->second;
  std::string text(reference);
  std::smatch match;
  if (!std::regex_match(text, match, kReferencePattern)) {
    return Fail(InvalidArgumentError(fmt::format(
        "malformed reference '{}', expected '<scheme>://<path>' such as 'env://API_TOKEN'", text)));
  }
  auto provider = providers_.find(match[1].str());
  if (provider == providers_.end()) {
    return Fail(InvalidArgumentError(fmt::format(
        "unknown reference scheme '{}' in '{}'; known schemes: env, gsm", match[1].str(), text)));
  }
  BIZON_ASSIGN_OR_RETURN(std::string value, provider->second->Resolve(match[2].str()));
  SecretMask::Global().Add(value);
  cache_.emplace(text, value);
  return value;
}

Result<std::string> ReferenceResolver::ResolveString(const std::string& text) {
  if (text.find("${") != std::string::npos) {
    std::string out;
    size_t last = 0;
    for (const InlineToken& token : FindInlineTokens(text)) {
      std::smatch match;
      if (!std::regex_match(token.inner, match, kReferencePattern)) {
        return Fail(InvalidArgumentError(
            fmt::format("malformed reference token '{}', expected '${{<scheme>://<path>}}' such as "
                        "'${{env://API_TOKEN}}'",
                        text.substr(token.begin, token.end - token.begin))));
      }
      BIZON_ASSIGN_OR_RETURN(std::string value, ResolveReference(token.inner));
      out.append(text, last, token.begin - last);
      out.append(value);
      last = token.end;
    }
    out.append(text, last);
    return out;
  }
  std::string trimmed(TrimAsciiSpace(text));
  std::smatch match;
  if (std::regex_match(trimmed, match, kReferencePattern) && IsKnownScheme(match[1].str())) {
    return ResolveReference(trimmed);
  }
  return text;
}

Status ReferenceResolver::ResolveAll(Value& config, std::string_view file_name) {
  struct Walker {
    ReferenceResolver& resolver;
    std::string_view file_name;
    Status Walk(Value& node, const std::string& path) {
      if (node.is_map()) {
        for (auto& [key, child] : node.AsMap()) {
          BIZON_RETURN_IF_ERROR(Walk(child, JoinPath(path, key)));
        }
      } else if (node.is_list()) {
        auto& list = node.AsList();
        for (size_t i = 0; i < list.size(); ++i) {
          BIZON_RETURN_IF_ERROR(Walk(list[i], fmt::format("{}[{}]", path, i)));
        }
      } else if (node.is_string()) {
        auto resolved = resolver.ResolveString(node.AsString());
        if (!resolved) {
          return InvalidArgumentError(fmt::format("{}:{}: {}: failed to resolve reference: {}",
                                                  file_name, node.mark().line, path,
                                                  resolved.error().message()));
        }
        SourceMark mark = node.mark();
        node = Value(std::move(*resolved));
        node.set_mark(mark);
      }
      return Status::Ok();
    }
  };
  return Walker{*this, file_name}.Walk(config, "");
}

std::vector<ReferenceSite> ReferenceResolver::Collect(const Value& config,
                                                      std::vector<ReferenceSite>* malformed) {
  std::vector<ReferenceSite> sites;
  CollectInto(config, "", sites, malformed);
  return sites;
}

Status LoadEnvFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError(fmt::format("cannot open env file {}", path));
  std::string line;
  while (std::getline(in, line)) {
    std::string trimmed(TrimAsciiSpace(line));
    if (trimmed.empty() || trimmed[0] == '#') continue;
    if (trimmed.rfind("export ", 0) == 0) trimmed = TrimAsciiSpace(trimmed.substr(7));
    size_t eq = trimmed.find('=');
    if (eq == std::string::npos) continue;
    std::string key(TrimAsciiSpace(trimmed.substr(0, eq)));
    std::string value(TrimAsciiSpace(trimmed.substr(eq + 1)));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    if (!key.empty()) setenv(key.c_str(), value.c_str(), /*overwrite=*/0);
  }
  return Status::Ok();
}

std::string FindEnvFile() {
  std::error_code error;
  std::filesystem::path dir = std::filesystem::current_path(error);
  if (error) return "";
  while (true) {
    std::filesystem::path candidate = dir / ".env";
    if (std::filesystem::is_regular_file(candidate, error)) return candidate.string();
    if (!dir.has_parent_path() || dir.parent_path() == dir) return "";
    dir = dir.parent_path();
  }
}

void SubstituteLegacyEnv(Value& config) {
  if (!config.is_map()) return;
  for (auto& [key, child] : config.AsMap()) {
    if (child.is_map()) {
      SubstituteLegacyEnv(child);
    } else if (child.is_string() && child.AsString().rfind("BIZON_ENV_", 0) == 0) {
      const char* value = std::getenv(child.AsString().c_str());
      SourceMark mark = child.mark();
      child = value == nullptr ? Value() : Value(std::string(value));
      child.set_mark(mark);
      if (value != nullptr) SecretMask::Global().Add(value);
    }
  }
}

std::string MaskSecret(std::string_view secret) {
  if (secret.size() <= 8) return std::string(secret.size() == 0 ? 0 : 4, '*');
  return std::string(secret.substr(0, 2)) + "****" + std::string(secret.substr(secret.size() - 2));
}

}  // namespace bizon
