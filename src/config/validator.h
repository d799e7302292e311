// Validates a raw config tree against a FieldSpec, fills defaults, and reports every problem with
// the file, line and YAML path it belongs to.
#pragma once

#include <string>
#include <vector>

#include "bizon/config_spec.h"
#include "bizon/value.h"

namespace bizon {

struct Diagnostic {
  enum class Severity { kError, kWarning };
  Severity severity = Severity::kError;
  std::string yaml_path;
  SourceMark mark;
  std::string message;

  /// "config.yml:7: source.sync_mode: expected one of ...".
  std::string Format(std::string_view file_name) const;
};

struct ValidationResult {
  /// The config with defaults filled in and ignored keys dropped.
  Value normalized;
  std::vector<Diagnostic> diagnostics;

  bool has_errors() const;
  bool has_warnings() const;
  /// Every error, one per line, for a Status message.
  std::string ErrorText(std::string_view file_name) const;
};

/// Walks `raw` against `spec` (the root object spec). Never stops at the first problem: the user
/// gets every error of the file in one go.
ValidationResult ValidateConfig(const Value& raw, const FieldSpec& spec);

/// Adds one diagnostic; used by cross-field rules that run after ValidateConfig.
void AddDiagnostic(ValidationResult& result, Diagnostic::Severity severity, std::string yaml_path,
                   SourceMark mark, std::string message);

/// The closest of `candidates` to `word` when it is a plausible typo, else empty.
std::string ClosestName(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace bizon
