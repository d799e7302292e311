// Reference resolution: `env://VAR`, `gsm://secret` and the inline `${scheme://path}` form,
// resolved over the raw config before validation so connectors only ever see plain strings.
//
// A provider resolves one scheme. Adding a provider is one class and one line in
// ReferenceResolver's constructor. Every resolved value is registered with the SecretMask so it
// never reaches a log line, an error or a result file.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

class ReferenceProvider {
 public:
  virtual ~ReferenceProvider() = default;
  virtual Result<std::string> Resolve(std::string_view path) = 0;
};

/// A reference found in a config: where it is and what it says.
struct ReferenceSite {
  std::string yaml_path;  // "engine.backend.password", list items as "[i]".
  std::string reference;  // "env://PG_PASSWORD".
  SourceMark mark;
};

class ReferenceResolver {
 public:
  /// `secrets_block` is the raw `secrets:` mapping (provider defaults), or null.
  explicit ReferenceResolver(const Value& secrets_block);

  /// Replaces every reference in `config`, in place. Stops at the first failure; the error names
  /// the YAML path and line (`file_name` labels it).
  Status ResolveAll(Value& config, std::string_view file_name);

  /// Resolves a single `scheme://path` reference (cached per run).
  Result<std::string> ResolveReference(std::string_view reference);

  /// Every well-formed reference in `config`, and every malformed inline token as an error site.
  static std::vector<ReferenceSite> Collect(const Value& config,
                                            std::vector<ReferenceSite>* malformed = nullptr);

 private:
  Result<std::string> ResolveString(const std::string& text);

  std::map<std::string, std::unique_ptr<ReferenceProvider>, std::less<>> providers_;
  std::map<std::string, std::string, std::less<>> cache_;
};

/// Loads KEY=VALUE lines from a .env file without overriding variables already set.
Status LoadEnvFile(const std::string& path);
/// Finds `.env` in the working directory or its parents; empty when there is none.
std::string FindEnvFile();

/// Replaces values starting with BIZON_ENV_ (in mappings only) with that variable's value, or
/// null when unset: the original's legacy substitution.
void SubstituteLegacyEnv(Value& config);

/// "ab****yz"-style masking for display: never more than the first and last two characters, and
/// nothing at all for short values.
std::string MaskSecret(std::string_view secret);

}  // namespace bizon
