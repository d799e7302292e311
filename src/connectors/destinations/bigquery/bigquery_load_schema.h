// What the bigquery destination loads: the columns of a table (raw mode's six warehouse
// columns, or a record_schemas entry under `unnest: true`), their Avro encoding, and the rows.
//
// Avro types follow BigQuery's documented Avro mapping, so that a load with
// `useAvroLogicalTypes` lands each column in its declared type:
//
// | BigQuery                | Avro                                   | from a JSON value |
// |-------------------------|----------------------------------------|------------------------------|
// | STRING                  | string                                 | a string; anything else as |
// |                         |                                        | its JSON text | | BYTES |
// bytes                                  | a string's UTF-8 bytes       | | INTEGER, INT64 | long
// | an integer, or its text      | | FLOAT, FLOAT64          | double | a number, or its text | |
// NUMERIC                 | bytes, decimal(38, 9)                  | a number or decimal text,    |
// | BIGNUMERIC              | bytes, decimal(76, 38)                 | rounded half away from zero
// | | BOOLEAN, BOOL           | boolean                                | true/false, or
// "true"/"false"| | TIMESTAMP               | long, timestamp-micros                 | RFC 3339 /
// "YYYY-MM-DD       | |                         |                                        |
// HH:MM:SS[.f][zone]" text, or | |                         | | epoch seconds as a number    | |
// DATE                    | int, date                              | "YYYY-MM-DD"                 |
// | TIME                    | long, time-micros                      | "HH:MM:SS[.ffffff]" | |
// DATETIME                | string, logicalType datetime           | the text, as BigQuery parses |
// | JSON                    | string, sqlType JSON                   | a string as it is; any other
// | | GEOGRAPHY               | string, sqlType GEOGRAPHY              | value as its JSON text |
//
// Mode NULLABLE is a union ["null", T]; REQUIRED is T (a null or missing key fails the write);
// REPEATED is an array of T filled from a JSON array (null or missing: empty). RECORD cannot be
// declared (record_schemas columns have no sub-fields) and is refused when the destination is
// made.
//
// Columns are written in table-schema order: BigQuery matches Avro fields by name, but the
// emulator binds them by position.
//
// Thread-safety: a LoadSchema is immutable; a LoadFileEncoder is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/record_batch.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "google/bigquery_client.h"

namespace bizon {

enum class BqColumnType {
  kString,
  kBytes,
  kInteger,
  kFloat,
  kNumeric,
  kBignumeric,
  kBoolean,
  kTimestamp,
  kDate,
  kTime,
  kDatetime,
  kJson,
  kGeography,
};

enum class BqColumnMode { kNullable, kRequired, kRepeated };

struct BqColumn {
  std::string name;
  BqColumnType type = BqColumnType::kString;
  BqColumnMode mode = BqColumnMode::kNullable;
  std::string description;
};

/// Whether `name` can be a column of a load file (an Avro field name): an ASCII letter or '_',
/// then letters, digits and '_'.
bool IsLoadableColumnName(std::string_view name);

/// The column type a record_schemas `type` names (upper case as declared; INT64, FLOAT64 and
/// BOOL are aliases). RECORD and unknown names are kInvalidArgument.
Result<BqColumnType> ParseBqColumnType(std::string_view type);
/// The type as a load schema spells it (STRING, INTEGER, FLOAT, ...).
std::string_view BqColumnTypeName(BqColumnType type);
/// The type as DDL spells it (INT64, FLOAT64, BOOL, NUMERIC(38, 9), ...): what ALTER TABLE and
/// CAST take.
std::string_view BqColumnSqlType(BqColumnType type);

/// Whether LoadFileEncoder writes `value` (not null) into a column of `type`: the encoder's own
/// rules, without writing (NUMERIC rounds to its scale, as the encoder does).
bool FitsColumnType(BqColumnType type, const Value& value);
/// The decimal text of a number or a string value (what NUMERIC columns are written from);
/// nullopt for other kinds.
std::optional<std::string> DecimalTextOf(const Value& value);
/// Whether decimal `text` holds exactly in `precision` digits at `scale`: nothing rounded off.
bool IsExactDecimal(std::string_view text, int precision, int scale);

/// The six raw-mode columns, all NULLABLE, in the table's column order: _source_record_id,
/// _source_timestamp, _source_data (STRING), _bizon_extracted_at, _bizon_loaded_at, _bizon_id.
std::vector<BqColumn> BigqueryRawColumns();

/// The columns of one record_schemas entry (its `record_schema` list). `where` names the entry
/// in errors.
Result<std::vector<BqColumn>> ParseRecordSchema(const Value& record_schema, std::string_view where);

/// The load schema (name, type, mode, description) of `columns`.
BigQuerySchema ToBigQuerySchema(const std::vector<BqColumn>& columns);

/// The Avro record schema (JSON text) the load file of `columns` carries.
std::string AvroSchemaFor(const std::vector<BqColumn>& columns);

/// `text` (a JSON number's text or a decimal string, optionally signed, with an exponent) as the
/// two's-complement big-endian bytes of its value scaled by 10^scale, rounded half away from
/// zero. More than `precision` digits, or not a number, is kInvalidArgument.
Result<std::string> DecimalBytes(std::string_view text, int precision, int scale);

/// Microseconds since the epoch of a TIMESTAMP text: "YYYY-MM-DD", then optionally "T" or " "
/// and "HH:MM[:SS[.fraction]]", then optionally "Z", "UTC", or "+HH[:MM]" / "-HH[:MM]".
Result<int64_t> ParseBqTimestamp(std::string_view text);
/// Days since the epoch of "YYYY-MM-DD".
Result<int32_t> ParseBqDate(std::string_view text);
/// Microseconds since midnight of "HH:MM:SS[.ffffff]".
Result<int64_t> ParseBqTime(std::string_view text);

/// Encodes destination records into one Avro load file.
class LoadFileEncoder {
 public:
  /// `unnest`: rows are the payload's keys as `columns` (which must then come from a
  /// record_schemas entry); otherwise `columns` must be BigqueryRawColumns().
  static Result<std::unique_ptr<LoadFileEncoder>> Make(std::vector<BqColumn> columns, bool unnest);
  ~LoadFileEncoder();
  LoadFileEncoder(const LoadFileEncoder&) = delete;
  LoadFileEncoder& operator=(const LoadFileEncoder&) = delete;

  /// Appends record `i` of `batch`. Unnest: every key of the payload must be a declared column
  /// ("Column <k> not found in BigQuery schema"), and each value must fit its column's type.
  /// Errors are kInvalidArgument naming the record id and the column.
  Status Append(const RecordBatch& batch, size_t i, int64_t loaded_at_us);
  /// Appends `row`, a JSON object already read (unnest only), as Append does record
  /// `record_id`'s payload.
  Status AppendObject(const Value& row, std::string_view record_id);
  /// The file; the encoder is empty afterwards.
  Result<std::string> Finish();
  int64_t rows() const;

 private:
  LoadFileEncoder() = default;
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace bizon
