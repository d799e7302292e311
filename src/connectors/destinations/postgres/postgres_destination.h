// The postgres destination: loads records into PostgreSQL tables with COPY.
//
// Tables: `<table>` is what readers see (`table`, else `destination_id`, else
// `<source>_<stream>`; a record's own destination id routes it to that table). A full refresh
// stages into `<table>_temp` and swaps it in at Finalize() in one transaction (DROP the old
// table, RENAME the staging one), so readers see the old rows or the new ones, never a mix. An
// incremental run stages into `<table>_incremental` and appends it to `<table>` at Finalize() in
// one transaction. A stream run appends to `<table>` directly.
//
// Columns: raw mode writes the six warehouse columns (_bizon_id, _bizon_extracted_at,
// _bizon_loaded_at, _source_record_id, _source_timestamp, _source_data as jsonb); `unnest: true`
// writes the record_schemas columns with mapped types. Tables written by Write() also have
// `_bizon_load_id`, the load that wrote each row; a published full refresh or incremental table
// does not (it is dropped at the swap, not copied by the append), a stream table keeps it.
//
// Exactly-once: each load (the batches Append()ed between two Sync()s, or one Write()) is one
// transaction that COPYs the rows tagged with a fresh load id
// (from the sequence `_bizon_load_id`) and logs that load in `_bizon_loads` (load id, job id,
// table, rows), then returns {"load_id": N}, which the engine records with the destination
// cursor. On resume, Open() deletes every row of this job's loads newer than the recorded one:
// those were committed here but not in the backend, and the producer is about to fetch them
// again. `_bizon_loads` also names every table the job touched (so tables first written after
// the last cursor are rolled back too) and records each publish, which makes Finalize()
// idempotent: a resumed job whose publish committed does not publish twice.
//
// Thread safety: one instance is used from the consumer's thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bizon/registry.h"
#include "common/write_disposition.h"
#include "connectors/destinations/postgres/postgres_schema.h"
#include "postgres/postgres_client.h"

namespace bizon {

/// How a record_schemas type is stored.
enum class PgColumnType {
  kText,
  kBigint,
  kDouble,
  kNumeric,
  kBoolean,
  kTimestamptz,
  kDate,
  kJsonb
};

/// The PostgreSQL type of a record_schemas `type` (string, INTEGER, FLOAT64, TIMESTAMP, JSON...),
/// case-insensitively; nullopt for a type this destination cannot store.
std::optional<PgColumnType> ParsePgColumnType(std::string_view type);
std::string_view PgTypeName(PgColumnType type);

/// Appends `text` escaped for COPY's text format (backslash, tab, newline, carriage return).
void AppendCopyText(std::string& out, std::string_view text);

/// Refuses a destination id that cannot name a table of its own: empty, NUL or another control
/// character, the destination's bookkeeping (`_bizon_loads`, `_bizon_load_id_seq`), or a name
/// whose staging table is longer than PostgreSQL's 63 bytes (which PostgreSQL would truncate,
/// merging two tables). Quotes, semicolons, spaces, dots and any Unicode are part of the name:
/// every statement quotes it. kInvalidArgument, failure class destination, naming the quoted id.
Status CheckPostgresTableName(std::string_view table, SyncMode sync_mode);

class PostgresDestination final : public Destination {
 public:
  /// Checks the config (table names, record_schemas types); connects in Open().
  static Result<std::unique_ptr<PostgresDestination>> Create(const DestinationContext& context);
  ~PostgresDestination() override;
  PostgresDestination(const PostgresDestination&) = delete;
  PostgresDestination& operator=(const PostgresDestination&) = delete;

  Status Open(const Value& resume_state) override;
  Result<Value> Write(const RecordBatch& records, int64_t loaded_at_us) override;
  /// Append() COPYs each batch as it arrives, inside one open transaction and under one load id;
  /// Sync() ends the COPY, logs the load and commits: the same transaction Write() makes, without
  /// holding buffer_size bytes of rows first.
  bool CanAppend() const override { return true; }
  Status Append(const RecordBatch& records, int64_t loaded_at_us) override;
  Result<Value> Sync() override;
  /// A merging stream table applies the loads the recorded cursor covers (see merge.md).
  Status OnCursorRecorded(const Value& state) override;
  Status Finalize() override;
  Status OnJobSucceeded() override;

 private:
  struct Column {
    std::string name;
    PgColumnType type = PgColumnType::kText;
  };
  /// One destination table as this job sees it.
  struct TableState {
    std::string name;     // The published table.
    std::string staging;  // Where Write() loads: name + suffix, or name itself for a stream.
    /// How the table is materialised: the sync mode, or a full refresh for
    /// `write_disposition: replace`.
    SyncMode mode = SyncMode::kFullRefresh;
    const TablePolicy* policy = nullptr;
    bool tracked = false;    // This job has logged the table (and, staged, emptied its staging).
    bool published = false;  // Finalize() committed its publish.
    bool merges() const { return policy->merges(); }
    /// Merged after each recorded cursor (a stream), not at Finalize().
    bool merges_continuously() const { return merges() && mode == SyncMode::kStream; }
  };
  /// A record refused under a discard_* schema contract, kept for `<table>__rejected`.
  struct Rejected {
    const TableState* table = nullptr;
    std::string record_id;
    std::string reason;
    std::string record;
  };
  /// What a record is once its change format and hard_delete are read: the row to write (the
  /// payload itself, or a part of it) and whether it deletes its key.
  struct ShapedRecord {
    std::string_view row;
    bool deleted = false;
  };

  explicit PostgresDestination(const DestinationContext& context);

  /// The merge options against the declared columns: keys and dedup_sort name columns.
  Status CheckPolicies() const;
  Result<TableState*> TableFor(std::string_view table_name);
  Result<const std::vector<Column>*> ColumnsFor(std::string_view table_name) const;
  /// COPY's column list for `table`: its columns, the load id, and for a merge the row's
  /// position in the load and its delete flag.
  std::string CopyColumns(const TableState& table, const std::vector<Column>& columns) const;
  std::string StagingDefinitions(const TableState& table, const std::vector<Column>& columns) const;
  std::string Qualified(std::string_view table) const;
  std::string ColumnDefinitions(const std::vector<Column>& columns) const;
  std::string ColumnList(const std::vector<Column>& columns) const;
  Status EnsureLoadLog();
  /// Logs `table` for this job inside the open transaction; a staged mode (re)creates its
  /// staging table empty, a stream creates the table if it is missing.
  Status Track(TableState& table);
  Status LockTable(std::string_view table);
  Status RollBackUncommitted(TableState& table, int64_t committed_load);
  /// The rows of `records` by target table, in order of first appearance; every table name
  /// checked (a refused one fails with nothing sent).
  Result<std::vector<std::pair<TableState*, std::vector<size_t>>>> GroupByTable(
      const RecordBatch& records);
  /// Ends the COPY in progress of the open load, if any, adding its rows to the table's count.
  Status EndAppendCopy();
  Status BeginTableCopy(TableState& table);
  /// Drops the open load (its transaction rolls back) and the columns it evolved.
  void AbandonLoad();
  Status AppendRows(const RecordBatch& records, const std::vector<size_t>& rows, TableState& table,
                    int64_t loaded_at_us);
  /// The row and delete flag of record `index` under `table`'s change format and hard_delete.
  Result<ShapedRecord> Shape(const RecordBatch& records, size_t index, const TableState& table);
  /// Encodes one unnested row under the table's schema contract: evolves the columns (ending
  /// and restarting the COPY around the DDL), refuses (freeze), or sets the record aside
  /// (discard_*). False when the row is not to be written.
  Result<bool> AppendUnnestedRow(std::string& out, const RecordBatch& records, size_t index,
                                 std::string_view row, TableState& table);
  Status EvolveColumns(TableState& table, const std::vector<FitProblem>& problems,
                       std::string& pending);
  void SetAside(const TableState& table, const RecordBatch& records, size_t index,
                const std::vector<FitProblem>& problems);
  /// A merge row's key columns all hold a value (after the row was encoded).
  Status CheckKeys(const TableState& table, const std::vector<Column>& columns,
                   std::string_view record_id) const;
  Status WriteRejected();
  /// Deletes the rows of `<table>__rejected` (when the table has one) matching `condition`.
  template <typename... Args>
  Status ForgetRejected(const TableState& table, std::string_view condition, const Args&... args);
  Status Publish(TableState& table);
  /// A full refresh's publish, in the caller's transaction: the staging table replaces the
  /// table. Returns the rows it holds.
  Result<int64_t> SwapInStaging(const TableState& table, const std::vector<Column>& columns);

  // Merge (postgres_merge.cc).
  /// Creates the merge target (and the index on its key) when missing.
  Status EnsureMergeTarget(const TableState& table, const std::vector<Column>& columns);
  /// Gives `target` every column of `columns`, widening those of a narrower type.
  Status AlignTable(std::string_view target, const std::vector<Column>& columns);
  /// Applies the staged rows of `table` (only this job's loads up to `through_load` when set)
  /// to its target: winners by key, deletes, then removes what it applied. In the caller's
  /// transaction. Returns the rows it applied.
  Result<int64_t> ApplyMerge(const TableState& table, std::optional<int64_t> through_load);
  /// ON CONFLICT (key) DO UPDATE SET every other column.
  std::string UpsertClause(const TableState& table, const std::vector<Column>& columns) const;
  /// The full refresh of a merging table: its staging keeps one row per key, no deletes.
  /// Returns the rows kept.
  Result<int64_t> DeduplicateStaging(const TableState& table);
  Status ApplyContinuousMerges(int64_t through_load);
  std::string KeyExpression(std::string_view alias, std::string_view key) const;
  std::string WinnerQuery(const TableState& table, const std::vector<Column>& columns,
                          std::string_view where) const;
  /// What Sync() returns: the load id, and the columns of the tables evolve changed.
  Value StateFor(int64_t load_id) const;
  /// Takes back the evolved columns a resumed job's state records.
  void RestoreEvolvedColumns(const Value& state);

  SyncMetadata sync_;
  PgConnectionSettings connection_settings_;
  std::string schema_;
  std::string default_table_;
  bool unnest_ = false;
  TablePolicies policies_;
  /// The columns of each unnested table: the declared ones, plus what evolve added or widened
  /// (`evolved_` names those tables; their columns go into the state recorded with the cursor).
  std::map<std::string, std::vector<Column>, std::less<>> schemas_;
  std::map<std::string, bool, std::less<>> evolved_;
  std::vector<Column> raw_columns_;

  std::unique_ptr<PgConnection> connection_;
  std::string quoted_schema_;
  std::map<std::string, TableState, std::less<>> tables_;
  /// The load Append() has open (between the first Append() after a Sync() and the next Sync()):
  /// its transaction (after connection_, so destroyed first: an abandoned load rolls back), its
  /// id, the table whose COPY is in progress, the rows COPYed into each table, and the tables it
  /// tracked (marked tracked once it commits).
  struct OpenLoad {
    PgTransaction transaction;
    int64_t load_id = 0;
    TableState* copying = nullptr;
    std::vector<std::pair<TableState*, int64_t>> rows;
    std::vector<TableState*> newly_tracked;
    int64_t next_seq = 0;            // A merge row's position in the load.
    std::vector<Rejected> rejected;  // Written into `<table>__rejected` at Sync().
    /// The columns before the load evolved any: a failed load rolls its DDL back, and these.
    std::map<std::string, std::vector<Column>, std::less<>> schemas_before;
    std::map<std::string, bool, std::less<>> evolved_before;
  };
  std::optional<OpenLoad> load_;
  /// What the last committed load returned ({"load_id": N}), or the resumed job's state.
  Value last_state_;

  /// Turns records into COPY text: reused buffers, parser and formatting caches.
  struct RowEncoder;
  std::unique_ptr<RowEncoder> encoder_;
};

}  // namespace bizon
