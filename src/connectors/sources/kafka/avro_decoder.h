// AvroDecoder: turns schemaless Avro binary (the body after a schema registry header) into JSON
// text, driven by the writer schema.
//
// Why not avro-c's generic values: avro-c ignores logical types (its primitive schemas are shared
// singletons, so there is nowhere to hang a `logicalType`), and a decoded generic value must be
// walked again to print it. The decoder here compiles the schema once into a flat node table and
// writes JSON straight from the bytes. avro-c is still the reference: the unit tests encode with
// it and check that this decoder reads the same values back.
//
// JSON mapping (the original hands Python objects to the destination; these are their JSON forms):
//
// | Avro                                      | JSON                                           |
// |-------------------------------------------|------------------------------------------------|
// | null, boolean, int, long                  | null, true/false, integer                      |
// | float, double                             | number (shortest round trip); NaN/Inf -> null  |
// | string, enum                              | string                                         |
// | bytes, fixed                              | string, one code point U+0000-U+00FF per byte  |
// | array, map, record                        | list, object, object (fields in schema order)  |
// | union                                     | the branch's value, no type wrapper            |
// | timestamp-millis/micros                   | "2024-01-31T12:00:00.123000Z" (UTC)            |
// | local-timestamp-millis/micros             | "2024-01-31T12:00:00.123000" (no zone)         |
// | date                                      | "2024-01-31"                                   |
// | time-millis/micros                        | "12:00:00.123000"                              |
// | decimal (bytes or fixed)                  | string with the exact digits, e.g. "-12.340"   |
// | uuid                                      | the string                                     |
//
// Thread-safety: a compiled decoder is immutable; Decode() may be called from several threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon::kafka {

class AvroDecoder {
 public:
  /// Compiles a writer schema (its JSON text). Fails on schemas that are not valid Avro, naming
  /// the offending part.
  static Result<AvroDecoder> Compile(std::string_view schema_json);
  static Result<AvroDecoder> CompileParsed(const Value& schema);

  /// Decodes one datum from `data` and appends its JSON to `out`. Bytes after the datum are
  /// ignored, as the original's schemaless reader does. On failure `out` may hold a partial value.
  Status Decode(std::string_view data, std::string& out) const;

 private:
  enum class Type : uint8_t {
    kNull,
    kBoolean,
    kInt,
    kLong,
    kFloat,
    kDouble,
    kBytes,
    kString,
    kRecord,
    kEnum,
    kArray,
    kMap,
    kUnion,
    kFixed,
  };
  enum class Logical : uint8_t {
    kNone,
    kTimestampMillis,
    kTimestampMicros,
    kLocalTimestampMillis,
    kLocalTimestampMicros,
    kDate,
    kTimeMillis,
    kTimeMicros,
    kDecimal,
  };
  struct Field {
    /// The quoted JSON key with its colon: "\"name\":".
    std::string key;
    int node = 0;
  };
  struct Node {
    Type type = Type::kNull;
    Logical logical = Logical::kNone;
    int decimal_scale = 0;
    int64_t fixed_size = 0;
    std::vector<Field> fields;
    /// Quoted JSON strings.
    std::vector<std::string> symbols;
    /// Items of an array, values of a map, or the branches of a union.
    std::vector<int> children;
  };
  class Compiler;
  class Reader;

  std::vector<Node> nodes_;
  int root_ = 0;
};

}  // namespace bizon::kafka
