// What a record that does not fit its table's columns does, under `schema_contract` (unnest
// tables of the bigquery destination):
//
// | contract      | a new key                      | a value its column's type cannot hold      |
// |---------------|--------------------------------|--------------------------------------------|
// | evolve        | a column is added, its type    | a numeric column is widened: INT64 to      |
// |               | from the value (integer INT64, | NUMERIC when the value holds exactly there,|
// |               | number FLOAT64, boolean BOOL,  | else BIGNUMERIC, else FLOAT64; NUMERIC to  |
// |               | string STRING, object or list  | BIGNUMERIC, else FLOAT64. Never to STRING: |
// |               | JSON)                          | anything else is refused (the run fails)   |
// | freeze        | refused: the run fails, naming the record and the column                    |
// | discard_row   | the record goes to `<table>__rejected` with the reason                      |
// | discard_value | the value goes to `<table>__rejected` with the reason; the record is written|
// |               | without it                                                                  |
//
// A null value never needs a column and is dropped from the row. A missing REQUIRED column
// refuses the whole record (under discard_value too). Columns are only ever added or widened,
// so every row checked earlier still fits.
//
// Thread-safety: one instance per table and thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bizon/value.h"
#include "common/write_disposition.h"
#include "connectors/destinations/bigquery/bigquery_load_schema.h"

namespace bizon {

/// A change evolve made to a table's columns: added (`from` unset) or widened.
struct ColumnChange {
  std::string column;
  std::optional<BqColumnType> from;
  BqColumnType to = BqColumnType::kString;
};

/// What a contract refused in one row.
struct ContractRefusal {
  std::string column;
  /// For the operator: "column 'x' is not in the table", "string 'abc' does not fit INT64 ...".
  std::string reason;
  /// The value refused (null when the row lacks a REQUIRED column).
  Value value;
  /// The whole row is refused, not only this value (a REQUIRED column is missing).
  bool whole_row = false;
};

/// The type a new column takes from its first non-null value.
BqColumnType InferColumnType(const Value& value);

/// The type `current` widens to so that it holds `value`, or nullopt when evolve cannot (see the
/// header comment).
std::optional<BqColumnType> WidenedType(BqColumnType current, const Value& value);

class SchemaContractCheck {
 public:
  SchemaContractCheck(SchemaContract contract, std::vector<BqColumn> columns);

  /// Checks `row` (a JSON object) against the columns. evolve adds and widens columns; null
  /// values of unknown keys are removed; under discard_value the refused values are removed
  /// too. `deletes`: the row only names a key to delete, so REQUIRED columns may be missing.
  /// Returns what was refused: empty when the row is written (as it now is).
  std::vector<ContractRefusal> Check(Value& row, bool deletes = false);

  const std::vector<BqColumn>& columns() const { return columns_; }
  /// Every change evolve made, in order.
  const std::vector<ColumnChange>& changes() const { return changes_; }

 private:
  /// The refusal of `value` for the existing `column`, or nullopt when it fits (evolve may widen
  /// the column first).
  std::optional<ContractRefusal> CheckValue(BqColumn& column, const Value& value);
  std::optional<ContractRefusal> CheckNewKey(const std::string& key, const Value& value);

  SchemaContract contract_;
  std::vector<BqColumn> columns_;
  std::vector<ColumnChange> changes_;
};

}  // namespace bizon
