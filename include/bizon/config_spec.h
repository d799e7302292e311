// Config declared once, as data.
//
// Every connector and engine component describes its options as a list of FieldSpec. That one
// declaration drives validation (with the YAML line in each message), defaults, unknown-key
// warnings, `bizon config schema` (JSON Schema) and the generated reference docs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bizon/value.h"

namespace bizon {

enum class FieldType {
  kString,
  kInteger,
  kNumber,
  kBoolean,
  kEnum,    // A string from `enum_values`.
  kObject,  // A map with declared `fields` (or discriminated `variants`).
  kList,    // A list whose items follow `items`.
  kMap,     // A map with free keys whose values follow `items` (or anything without `items`).
  kAny,     // Anything; `one_of` narrows it to a set of alternatives.
};

/// What an object does with keys it does not declare.
enum class UnknownKeys {
  kError,   // Rejected (the original's pydantic `extra=forbid`).
  kWarn,    // Accepted, reported by `config validate` (an error with --strict).
  kIgnore,  // Silently dropped, as the original does.
  kAllow,   // Part of the contract: free-form keys are expected.
};

struct FieldSpec;

/// One branch of a discriminated object: used when the discriminator field equals `tag`.
struct VariantSpec {
  std::string tag;
  std::string description;
  std::vector<FieldSpec> fields;
  UnknownKeys unknown_keys = UnknownKeys::kError;
};

struct FieldSpec {
  std::string name;
  FieldType type = FieldType::kString;
  std::string description;
  bool required = false;
  /// Whether an explicit `null` is accepted (it then means "not set").
  bool nullable = true;
  /// An explicit `null` is a value of its own (e.g. "no cap") and is kept, not replaced by the
  /// default.
  bool null_is_value = false;
  std::optional<Value> default_value;
  std::string example;
  std::vector<std::string> enum_values;
  std::optional<double> minimum;
  std::optional<double> maximum;
  /// Holds a credential: masked wherever the config is printed.
  bool secret = false;
  /// Non-empty: the key is deprecated and this text says what to do instead.
  std::string deprecated;

  // kObject
  std::vector<FieldSpec> fields;
  UnknownKeys unknown_keys = UnknownKeys::kError;
  /// Discriminated object: the value of field `discriminator` selects one of `variants`.
  std::string discriminator;
  std::vector<VariantSpec> variants;
  /// Used when the discriminator is absent; empty means the discriminator is required.
  std::string default_variant;

  // kList and kMap
  std::vector<FieldSpec> items;  // Zero or one element (a vector keeps FieldSpec an aggregate).

  // kAny
  std::vector<FieldSpec> one_of;
};

/// A component's whole declaration: the options under its config block.
struct ConfigSpec {
  std::vector<FieldSpec> fields;
  UnknownKeys unknown_keys = UnknownKeys::kError;
};

}  // namespace bizon

namespace bizon {

/// The `authentication` block of a source: `type` selects one of `types` ("api_key", "bearer",
/// "basic", "oauth", "cookies"), each with the original's `params` shape for that type.
FieldSpec AuthenticationField(const std::vector<std::string>& types, bool required);

}  // namespace bizon
