// How a destination applies a load to its tables: append (the default), replace, or merge by
// primary key; and what it does with a record that does not fit the declared columns (the
// schema contract). Declared once here, read by the postgres and bigquery destinations.
//
// Options live under `destination.config` (the defaults of every table) and may be given again
// in a `record_schemas` entry (that table only):
//
//   write_disposition: merge            # append | replace | merge
//   primary_key: [id]                   # merge: the key columns (required)
//   merge_strategy: delete-insert       # or upsert (a unique index on the key)
//   dedup_sort: {column: updated_at, order: desc}   # winner of one key inside a load
//   hard_delete: deleted                # a column, or a path such as $.meta.deleted
//   change_format: debezium             # rows are Debezium change events (op d = delete)
//   schema_contract: evolve             # evolve | freeze | discard_row | discard_value
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/config_spec.h"
#include "bizon/destination.h"
#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

enum class WriteDisposition { kAppend, kReplace, kMerge };
enum class MergeStrategy { kDeleteInsert, kUpsert };
/// kExact: no contract set, today's rule (a record's keys are exactly the declared columns).
enum class SchemaContract { kExact, kEvolve, kFreeze, kDiscardRow, kDiscardValue };
enum class ChangeFormat { kNone, kDebezium };

/// The winner among the rows of one key inside one load: the first in this order; ties (and no
/// dedup_sort at all) go to the record that came last.
struct DedupSort {
  std::string column;
  bool descending = true;
};

/// What one table's loads do.
struct TablePolicy {
  WriteDisposition disposition = WriteDisposition::kAppend;
  std::vector<std::string> primary_key;
  std::optional<DedupSort> dedup_sort;
  /// The path of the field whose value true (or "true") deletes the key; empty: none. One
  /// element: a column of the record.
  std::vector<std::string> hard_delete;
  MergeStrategy strategy = MergeStrategy::kDeleteInsert;
  SchemaContract contract = SchemaContract::kExact;
  ChangeFormat change_format = ChangeFormat::kNone;

  bool merges() const { return disposition == WriteDisposition::kMerge; }
};

/// The policy of each table: the destination-wide one, overridden per record_schemas entry.
class TablePolicies {
 public:
  const TablePolicy& For(std::string_view table) const;
  const TablePolicy& Default() const { return default_; }
  /// True when any table merges (the default or an entry).
  bool AnyMerge() const;
  /// True when any table has a schema contract other than kExact.
  bool AnyContract() const;

 private:
  friend Result<TablePolicies> ReadTablePolicies(const Value& config);
  TablePolicy default_;
  std::map<std::string, TablePolicy, std::less<>> tables_;
};

/// The options above, for a destination's own ConfigSpec.
std::vector<FieldSpec> WriteDispositionFields();
/// The same options as a record_schemas entry takes them (no defaults: unset inherits).
std::vector<FieldSpec> TablePolicyFields();

/// Reads the policies of a validated `destination.config`. kInvalidArgument (failure class
/// config) for a rule the declaration cannot express, naming the option's path.
Result<TablePolicies> ReadTablePolicies(const Value& config);

/// The rules across options (merge needs a primary key, a stream cannot be replaced, ...), as
/// violations reported with their YAML line by `config validate`; paths are relative to
/// `destination.config`.
std::vector<ConfigRuleViolation> CheckTablePolicies(const Value& config, SyncMode sync_mode);

/// Splits a hard_delete path: "deleted" -> {deleted}, "$.meta.deleted" -> {meta, deleted}.
std::vector<std::string> SplitFieldPath(std::string_view path);

/// True for the JSON value (its raw text) that marks a delete: true, or the string "true".
bool IsDeleteMark(std::string_view raw_json);

std::string_view WriteDispositionName(WriteDisposition disposition);
std::string_view SchemaContractName(SchemaContract contract);

}  // namespace bizon
