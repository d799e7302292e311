// What the BigQuery destinations share about `write_disposition: merge` and `change_format`:
// reading a record as the row it writes and whether it deletes its key (a Debezium event's
// image, a hard_delete field), and the one MERGE statement that applies a load's rows to a table
// by primary key.
//
// A merge load's rows go to a staging table with two more columns: `_bizon_ordinal` (the row's
// position in the load) and `_bizon_deleted`. The statement keeps one winner per key (the
// largest dedup_sort value, or the smallest with order asc, NULLs last; ties and no dedup_sort:
// the last record), then, by merge_strategy:
//
// | strategy      | a key the load deletes      | a key the load writes                        |
// |---------------|-----------------------------|----------------------------------------------|
// | delete-insert | every row of the key goes   | every row of the key goes, the winner is     |
// |               |                             | inserted                                     |
// | upsert        | its rows are deleted        | its rows are updated, or the winner inserted |
//
// Both are one MERGE statement, which BigQuery applies atomically: all of the load or nothing.
//
// Thread-safety: free functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bizon/status.h"
#include "bizon/value.h"
#include "common/write_disposition.h"
#include "connectors/destinations/bigquery/bigquery_load_schema.h"
#include "google/bigquery_client.h"

namespace bizon {

/// The staging columns a merge adds after the table's: the row's position in its load, and
/// whether it deletes its key.
inline constexpr std::string_view kMergeOrdinalColumn = "_bizon_ordinal";
inline constexpr std::string_view kMergeDeletedColumn = "_bizon_deleted";

/// One record as a destination writes it under a table policy.
struct ChangeRow {
  /// The JSON object written: the record, or the image of its Debezium event.
  Value row;
  /// The record deletes its key: a Debezium delete (op d), or a hard_delete mark.
  bool deleted = false;
  /// The kafka source's record: its partition and offset, which order the changes of a key
  /// (Kafka keeps a key in one partition).
  std::optional<std::pair<int64_t, int64_t>> kafka_position;
};

/// Reads record `payload` under `policy`. With change_format debezium the record is a Debezium
/// event, the kafka source's record ({"topic", "offset", ..., "value": <event>}) or the bare
/// event ({"before", "after", "op", "source"}, or a converter's {"schema", "payload": <event>}):
/// its row is the after image (ops c, r, u), or the before image for op d, which deletes.
/// hard_delete names a field of the row whose value true (or "true") deletes the key.
/// nullopt: nothing to write (a Kafka tombstone, the null value that follows a delete). A record
/// that is no JSON object, an event without its image, or another op (t, truncate) is
/// kInvalidArgument, destination class, naming `record_id`.
Result<std::optional<ChangeRow>> ReadChangeRow(std::string_view payload, std::string_view record_id,
                                               const TablePolicy& policy);

/// The columns of a merge load's staging table: `columns` (REQUIRED ones NULLABLE: a delete may
/// name its key only), then the ordinal (INT64) and the deleted flag (BOOL).
std::vector<BqColumn> MergeStagingColumns(const std::vector<BqColumn>& columns);

/// The MERGE statement that applies the rows of `staging` (MergeStagingColumns of `columns`) to
/// `target` under `policy` (see the header comment). A primary_key or dedup_sort column that
/// is not one of `columns` is kInvalidArgument, config class.
Result<std::string> MergeStatement(const BigQueryTableRef& target, const BigQueryTableRef& staging,
                                   const std::vector<BqColumn>& columns, const TablePolicy& policy);

/// The merge options' rules for one table of the bigquery destinations: the primary_key and
/// dedup_sort columns must be columns of `columns` (a record_schemas entry). A violation's
/// message, or empty.
std::string CheckMergeColumns(const TablePolicy& policy, const std::vector<BqColumn>& columns);

}  // namespace bizon
