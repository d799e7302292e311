// Config declared once, as data.
//
// Every connector and engine component describes its options as a list of FieldSpec. That one
// declaration drives validation (with the YAML line in each message), defaults, unknown-key
// warnings, `bizon config schema` (JSON Schema) and the generated reference docs. `Option`
// writes a declaration in one expression; `OptionReader` reads a block back against it, so the
// code that reads an option never states its default a second time.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/status.h"
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
  /// Non-empty: the key is accepted (the original took it) but changes nothing here; this text
  /// says why. A value other than the default gets a warning naming the key.
  std::string no_effect;

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

/// Builds a FieldSpec in one expression, naming only what differs from FieldSpec's defaults:
///
///   Option::Integer("max_workers", "Worker processes for transforms.").Default(2).Minimum(1)
///
/// An Option converts to a FieldSpec wherever one is expected (a list of fields, `items`).
class Option {
 public:
  static Option String(std::string name, std::string description = {});
  static Option Integer(std::string name, std::string description = {});
  static Option Number(std::string name, std::string description = {});
  static Option Boolean(std::string name, std::string description = {});
  /// A string from `values`.
  static Option Enum(std::string name, std::vector<std::string> values,
                     std::string description = {});
  /// An object with declared `fields`.
  static Option Object(std::string name, std::vector<FieldSpec> fields,
                       std::string description = {});
  /// An object whose field `discriminator` selects one of `variants`.
  static Option Variants(std::string name, std::string discriminator,
                         std::vector<VariantSpec> variants, std::string description = {});
  /// A list whose items follow `item`.
  static Option List(std::string name, FieldSpec item, std::string description = {});
  /// A map with free keys; its values follow Items() when given, else anything.
  static Option Map(std::string name, std::string description = {});

  Option& Required();
  /// An explicit `null` is refused.
  Option& NotNull();
  /// An explicit `null` is a value of its own, kept instead of the default.
  Option& NullIsValue();
  Option& Default(Value value);
  Option& Minimum(double minimum);
  Option& Maximum(double maximum);
  Option& Secret();
  Option& Example(std::string example);
  /// Deprecated; `instead` says what to do instead.
  Option& Deprecated(std::string instead);
  /// Accepted for compatibility but without effect; `why` says why.
  Option& NoEffect(std::string why);
  Option& OnUnknownKeys(UnknownKeys policy);
  /// The values of a Map.
  Option& Items(FieldSpec item);
  /// The variant used when the discriminator is absent.
  Option& DefaultVariant(std::string tag);

  operator FieldSpec() const { return spec_; }  // NOLINT(google-explicit-constructor)

 private:
  Option(std::string name, FieldType type, std::string description);
  FieldSpec spec_;
};

/// Reads one block of a config against its declaration, so that a default is written once, in
/// the FieldSpec: each accessor returns the value the block holds, else the declared default.
/// A validated config already holds every default; the fallback serves blocks that were never
/// validated (the defaults of an absent block, values built in code).
///
/// Reading a name the declaration lacks, a value of another type, or an option with neither a
/// value nor a default is a bug of the reader: the accessor returns zero (or empty) and status()
/// names the option. Not thread-safe; a reader lives for the few lines that read one block.
class OptionReader {
 public:
  /// `declaration`: the block's object spec (for a discriminated object, the variant the block's
  /// discriminator selects, else the default one). `block`: its value; null or absent reads as
  /// an empty block.
  OptionReader(const FieldSpec& declaration, Value block);

  int64_t Integer(std::string_view name);
  double Number(std::string_view name);
  bool Boolean(std::string_view name);
  std::string String(std::string_view name);
  /// The value, else the default; nullptr when the option has neither (an optional option left
  /// unset, which is not an error). The pointer lives as long as this reader.
  const Value* Find(std::string_view name);
  /// A nested object, read against its own declaration; its misuses show in this status().
  OptionReader Object(std::string_view name);
  /// For a discriminated object: the variant read (the discriminator's value, else the default
  /// one). Empty otherwise.
  const std::string& Variant() const { return variant_; }

  /// Ok, or the first misuse (code kInternal, naming the option's path).
  const Status& status() const { return *status_; }

 private:
  OptionReader(const FieldSpec& declaration, Value block, std::string path,
               std::shared_ptr<Status> status);
  const FieldSpec* Declared(std::string_view name);
  const Value* Read(std::string_view name, bool (Value::*has_type)() const);
  void Misuse(std::string_view name, std::string_view problem);

  std::string variant_;
  std::vector<FieldSpec> fields_;
  Value block_;
  std::string path_;  // From the outermost reader, "config.queue.", for messages.
  std::shared_ptr<Status> status_;
};

/// A broken rule across options, found by a check that the declaration cannot express.
struct ConfigRuleViolation {
  /// The option's path, relative to what the check was given (e.g. "time_partitioning.field"
  /// under `destination.config`; a whole-config check gives full paths, "streams[0].name").
  std::string path;
  std::string message;
  /// Where to report it; unset (line 0): the line of the nearest node of `path` in the file.
  SourceMark mark;
};

/// A top-level block of the pipeline file declared beside the code that reads it, above the
/// config module: `engine` (engine/engine_options.h), `monitoring` (monitoring/), `alerting`
/// (alerting/).
struct ConfigSection {
  FieldSpec field;
  /// Rules across the block's keys that its declaration cannot express, run on the normalized
  /// block when the file has one; paths are relative to the block ("" is the block itself).
  /// Null: none.
  std::function<std::vector<ConfigRuleViolation>(const Value& block)> check;
};

/// The `authentication` block of a source: `type` selects one of `types` ("api_key", "bearer",
/// "basic", "oauth", "cookies"), each with the original's `params` shape for that type.
FieldSpec AuthenticationField(const std::vector<std::string>& types, bool required);

}  // namespace bizon
