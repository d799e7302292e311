// Protobuf rows for the BigQuery Storage Write API: a table schema as the proto2 message the
// API takes (`ProtoSchema.proto_descriptor`), and an encoder that turns one record's JSON object
// text into that message's serialized bytes. The encoder writes the wire format itself (varints,
// fixed64, length-delimited) while it walks the JSON with simdjson's on-demand parser: no
// message object and no DOM; a nested object or array bound for a STRING or JSON column is
// copied out of the text, only minified.
//
// | BigQuery type (REST or Storage API name)      | proto field | JSON accepted                 |
// |-----------------------------------------------|-------------|-------------------------------|
// | INT64, INTEGER                                | int64       | integers, integral numbers,   |
// |                                               |             | integer strings ("12")        |
// | FLOAT64, FLOAT, DOUBLE                        | double      | numbers, numeric strings,     |
// |                                               |             | "NaN", "Infinity", "-Infinity"|
// | BOOL, BOOLEAN                                 | bool        | true, false                   |
// | STRING, GEOGRAPHY                             | string      | strings; an object or array   |
// |                                               |             | becomes its compact JSON text |
// | JSON                                          | string      | a string as is (it holds JSON |
// |                                               |             | text); any other value as its |
// |                                               |             | compact JSON text             |
// | BYTES                                         | bytes       | base64 strings (decoded)      |
// | NUMERIC, BIGNUMERIC                           | string      | numeric strings, numbers (as  |
// |                                               |             | written)                      |
// | DATETIME, TIME, INTERVAL                      | string      | strings                       |
// | TIMESTAMP                                     | int64 µs    | RFC 3339 or "YYYY-MM-DD       |
// |                                               |             | HH:MM:SS[.ffffff][zone]" text;|
// |                                               |             | numbers: seconds since epoch  |
// | DATE                                          | int32 days  | "YYYY-MM-DD"; integers: days  |
// | RECORD, STRUCT                                | message     | objects                       |
//
// TIMESTAMP and DATE travel as the integers Google's type table prefers (microseconds, days since
// the epoch), which both BigQuery and the emulator read; fractions beyond microseconds are cut
// off. REPEATED columns take arrays (repeated fields, one element each; a null element is an
// error, as BigQuery refuses NULL in an array); REQUIRED columns are LABEL_REQUIRED and must be
// present and not null; null or absent NULLABLE columns are left unset. A key that names no
// column is an error (BigQuery would refuse the field), as is a value of the wrong kind: each
// error names the column (dotted path for nested ones) and quotes the value (cut at 64 bytes).
// Column names match JSON keys exactly, else ignoring ASCII case, as BigQuery's column names do.
//
// Errors are kInvalidArgument, failure class destination: the record cannot be written as it is.
//
// Thread-safety: a ProtoRowSchema is immutable; a ProtoRowEncoder holds parsing buffers, one per
// thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/status.h"
#include "google/bigquery_client.h"

namespace bizon {

/// How one column's values are encoded.
enum class ProtoColumnKind {
  kInt64,
  kDouble,
  kBool,
  kString,     // STRING, GEOGRAPHY
  kJson,       // JSON
  kBytes,      // BYTES
  kDecimal,    // NUMERIC, BIGNUMERIC
  kCivilText,  // DATETIME, TIME, INTERVAL
  kTimestamp,  // int64 microseconds
  kDate,       // int32 days
  kRecord,
};

enum class ProtoColumnMode { kNullable, kRequired, kRepeated };

/// One column of the row message: field number `number` (1.. in schema order).
struct ProtoColumn {
  std::string name;
  /// The BigQuery type as the schema spelled it, upper-cased (for messages).
  std::string type;
  ProtoColumnKind kind = ProtoColumnKind::kString;
  ProtoColumnMode mode = ProtoColumnMode::kNullable;
  int number = 0;
  /// The sub-columns of a RECORD.
  std::vector<ProtoColumn> fields;
};

class ProtoRowSchema {
 public:
  /// The row message of `schema`. An unknown type (RANGE, a misspelling), a RECORD without
  /// sub-fields, or a column name protobuf cannot carry as a field name (BigQuery's flexible
  /// names with spaces or dashes) is kInvalidArgument, failure class destination.
  static Result<ProtoRowSchema> Make(const BigQuerySchema& schema);

  const std::vector<ProtoColumn>& columns() const { return columns_; }
  /// The serialized proto2 DescriptorProto "TableRow", RECORD columns as nested types: what
  /// `ProtoSchema.proto_descriptor` carries (self-contained, no imports).
  const std::string& descriptor() const { return descriptor_; }

 private:
  std::vector<ProtoColumn> columns_;
  std::string descriptor_;
};

/// The BigQuery type names ProtoRowSchema reads, REST and Storage API spellings alike: whether
/// `type` is one of them.
bool IsProtoRowType(std::string_view type);

class ProtoRowEncoder {
 public:
  /// `schema` must outlive the encoder.
  explicit ProtoRowEncoder(const ProtoRowSchema& schema);
  ~ProtoRowEncoder();
  ProtoRowEncoder(const ProtoRowEncoder&) = delete;
  ProtoRowEncoder& operator=(const ProtoRowEncoder&) = delete;

  /// Appends the serialized row of `json` (one JSON object) to `out`. On error `out` is left as
  /// it was.
  Status Encode(std::string_view json, std::string& out);

 private:
  struct Parser;
  std::unique_ptr<Parser> parser_;
};

}  // namespace bizon
