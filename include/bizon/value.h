// Value: a JSON-shaped tree (null, bool, integer, double, string, list, ordered map).
//
// It carries pipeline configuration (with the YAML line each node came from, so errors can point
// at it), pagination tokens and incremental state. Records themselves never become Values on the
// hot path: they travel as raw JSON text in a RecordBatch.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "bizon/status.h"

namespace bizon {

/// Where a node came from in its source text; line and column are 1-based, 0 means unknown.
struct SourceMark {
  int line = 0;
  int column = 0;
};

class Value {
 public:
  enum class Kind { kNull, kBool, kInteger, kDouble, kString, kList, kMap };
  using List = std::vector<Value>;
  using Map = std::vector<std::pair<std::string, Value>>;

  Value() = default;
  Value(std::nullptr_t) {}                              // NOLINT(google-explicit-constructor)
  Value(bool b) : data_(b) {}                           // NOLINT(google-explicit-constructor)
  Value(int i) : data_(static_cast<int64_t>(i)) {}      // NOLINT(google-explicit-constructor)
  Value(int64_t i) : data_(i) {}                        // NOLINT(google-explicit-constructor)
  Value(double d) : data_(d) {}                         // NOLINT(google-explicit-constructor)
  Value(std::string s) : data_(std::move(s)) {}         // NOLINT(google-explicit-constructor)
  Value(std::string_view s) : data_(std::string(s)) {}  // NOLINT(google-explicit-constructor)
  Value(const char* s) : data_(std::string(s)) {}       // NOLINT(google-explicit-constructor)
  Value(List list) : data_(std::move(list)) {}          // NOLINT(google-explicit-constructor)
  Value(Map map) : data_(std::move(map)) {}             // NOLINT(google-explicit-constructor)

  static Value EmptyMap() { return Value(Map{}); }
  static Value EmptyList() { return Value(List{}); }

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_null() const { return kind() == Kind::kNull; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_integer() const { return kind() == Kind::kInteger; }
  bool is_number() const { return kind() == Kind::kInteger || kind() == Kind::kDouble; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_map() const { return kind() == Kind::kMap; }

  bool AsBool() const { return std::get<bool>(data_); }
  int64_t AsInteger() const { return std::get<int64_t>(data_); }
  double AsDouble() const;
  const std::string& AsString() const { return std::get<std::string>(data_); }
  std::string& AsString() { return std::get<std::string>(data_); }
  const List& AsList() const { return std::get<List>(data_); }
  List& AsList() { return std::get<List>(data_); }
  const Map& AsMap() const { return std::get<Map>(data_); }
  Map& AsMap() { return std::get<Map>(data_); }

  /// Map lookup; nullptr when this is not a map or the key is absent.
  const Value* Find(std::string_view key) const;
  Value* Find(std::string_view key);
  /// Follows a dotted path such as "engine.backend.type".
  const Value* FindPath(std::string_view dotted_path) const;
  /// Inserts or replaces `key` in a map (turns a null into an empty map first).
  Value& Set(std::string_view key, Value value);
  /// Returns the child map `key`, creating it when missing or null.
  Value& GetOrCreateMap(std::string_view key);
  bool Erase(std::string_view key);

  /// Typed reads with a fallback for absent or null values.
  std::string GetString(std::string_view key, std::string_view fallback = "") const;
  int64_t GetInteger(std::string_view key, int64_t fallback = 0) const;
  double GetDouble(std::string_view key, double fallback = 0) const;
  bool GetBool(std::string_view key, bool fallback = false) const;

  /// Compact JSON text. Strings are escaped per RFC 8259; non-ASCII bytes are kept as is.
  std::string ToJson() const;
  void AppendJson(std::string& out) const;
  /// Parses JSON text (whole document).
  static Result<Value> FromJson(std::string_view text);

  /// Text for messages: strings unquoted, everything else as JSON.
  std::string ToDisplayString() const;

  const SourceMark& mark() const { return mark_; }
  void set_mark(SourceMark mark) { mark_ = mark; }

  friend bool operator==(const Value& a, const Value& b) { return a.data_ == b.data_; }

 private:
  std::variant<std::monostate, bool, int64_t, double, std::string, List, Map> data_;
  SourceMark mark_;
};

/// Appends `text` to `out` as a quoted JSON string.
void AppendJsonString(std::string& out, std::string_view text);

std::string_view ToString(Value::Kind kind);

}  // namespace bizon
