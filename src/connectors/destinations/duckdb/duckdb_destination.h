// The duckdb destination: loads records into the tables of a DuckDB database file with the
// appender.
//
// Tables: `<table>` is what readers see (`table`, else `destination_id`, else
// `<source>_<stream>`; a record's own destination id routes it to that table). A full refresh
// stages into `<table>_temp` and swaps it in at Finalize() in one transaction (DROP the old
// table, RENAME the staging one), so readers see the old rows or the new ones, never a mix. An
// incremental run stages into `<table>_incremental` and appends it to `<table>` at Finalize() in
// one transaction. A stream run appends to `<table>` directly.
//
// Exactly-once, as the postgres destination: each load (the batches Append()ed between two
// Sync()s, or one Write()) is one DuckDB transaction that appends the rows tagged with a fresh
// load id (column `_bizon_load_id`, ids from the sequence `_bizon_load_id_seq`) and logs the
// load in `_bizon_loads` (load id, job id, table, rows), then returns {"load_id": N}, which the
// engine records with the destination cursor. Rows and their log entry commit together or not at
// all. On resume, Open() deletes every row of this job's loads newer than the recorded one: those
// were committed here but not in the backend, and the producer is about to fetch them again. The
// log also names every table the job touched and records each publish, which makes Finalize()
// idempotent.
//
// The database file is opened through DuckDatabase, so a duckdb backend on the same file shares
// the handle (DuckDB lets one process write a file).
//
// Thread safety: one instance is used from the consumer's thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/registry.h"
#include "common/write_disposition.h"
#include "duckdb/duckdb_client.h"

namespace bizon {

/// How a record_schemas type is stored.
enum class DuckColumnType {
  kVarchar,
  kBigint,
  kDouble,
  kDecimal,
  kBoolean,
  kTimestamptz,
  kDate,
  kJson
};

/// The DuckDB type of a record_schemas `type` (string, INTEGER, FLOAT64, TIMESTAMP, JSON...),
/// case-insensitively; nullopt for a type this destination cannot store.
std::optional<DuckColumnType> ParseDuckColumnType(std::string_view type);
std::string_view DuckTypeName(DuckColumnType type);

/// A timestamp string as UTC microseconds: "YYYY-MM-DD[T ]HH:MM:SS[.f]" with no offset (UTC),
/// 'Z', or an offset "+HH:MM" / "-HHMM" / "+HH", which is applied (DuckDB's appender casts text
/// to TIMESTAMPTZ ignoring it). nullopt for any other form, left to DuckDB's cast.
std::optional<int64_t> ParseDuckInstant(std::string_view text);

/// Refuses a destination id that cannot name a table of its own: empty, NUL or another control
/// character, or the destination's bookkeeping (`_bizon_loads`, `_bizon_load_id_seq`). Quotes,
/// semicolons, spaces, dots and any Unicode are part of the name: every statement quotes it.
/// kInvalidArgument, failure class destination, naming the quoted id.
Status CheckDuckTableName(std::string_view table, SyncMode sync_mode);

class DuckdbDestination final : public Destination {
 public:
  /// Checks the config (table names, record_schemas types); opens the file in Open().
  static Result<std::unique_ptr<DuckdbDestination>> Create(const DestinationContext& context);
  ~DuckdbDestination() override;
  DuckdbDestination(const DuckdbDestination&) = delete;
  DuckdbDestination& operator=(const DuckdbDestination&) = delete;

  Status Open(const Value& resume_state) override;
  Result<Value> Write(const RecordBatch& records, int64_t loaded_at_us) override;
  /// Append() appends each batch as it arrives, inside one open transaction under one load id;
  /// Sync() closes the appenders, logs the load and commits.
  bool CanAppend() const override { return true; }
  Status Append(const RecordBatch& records, int64_t loaded_at_us) override;
  Result<Value> Sync() override;
  /// A merging stream table applies the loads the recorded cursor covers.
  Status OnCursorRecorded(const Value& state) override;
  Status Finalize() override;
  Status OnJobSucceeded() override;

  struct Column {
    std::string name;
    DuckColumnType type = DuckColumnType::kVarchar;
  };

 private:
  /// One destination table as this job sees it.
  struct TableState {
    std::string name;     // The published table.
    std::string staging;  // Where rows are appended: name + suffix, or name itself for a stream.
    /// The sync mode, or a full refresh for `write_disposition: replace`.
    SyncMode mode = SyncMode::kFullRefresh;
    const TablePolicy* policy = nullptr;
    bool tracked = false;    // This job has logged the table (and, staged, emptied its staging).
    bool published = false;  // Finalize() committed its publish.
    bool merges() const { return policy->merges(); }
    /// Merged after each recorded cursor (a stream), not at Finalize().
    bool merges_continuously() const { return merges() && mode == SyncMode::kStream; }
  };
  /// The load Append() has open: its id, its appenders and the rows each table received, and
  /// the tables it tracked (marked tracked once it commits).
  struct OpenLoad {
    int64_t load_id = 0;
    std::map<TableState*, DuckAppender> appenders;
    std::map<TableState*, int64_t> rows;
    std::vector<TableState*> newly_tracked;
    int64_t next_seq = 0;  // A merge row's position in the load.
  };
  /// Turns records into appended rows: reused parser and buffers.
  struct RowEncoder;

  explicit DuckdbDestination(const DestinationContext& context);
  /// Reads the options of `config` against the destination's declaration; returns the table
  /// the block names (`table`, else `destination_id`; empty: none).
  Result<std::string> ReadOptions(const Value& config);
  Status ReadRecordSchemas(const Value& config);

  Result<TableState*> TableFor(std::string_view table_name);
  Result<const std::vector<Column>*> ColumnsFor(std::string_view table_name) const;
  std::string Qualified(std::string_view table) const;
  std::string ColumnDefinitions(const std::vector<Column>& columns) const;
  std::string ColumnList(const std::vector<Column>& columns) const;
  Result<bool> TableExists(std::string_view table);
  Status EnsureLoadLog();
  /// Logs `table` for this job inside the open transaction; a staged mode (re)creates its
  /// staging table empty, a stream creates the table if it is missing.
  Status Track(TableState& table);
  Status TrackDefaultTable();
  Status RollBackUncommitted(TableState& table, int64_t committed_load);
  Result<std::vector<std::pair<TableState*, std::vector<size_t>>>> GroupByTable(
      const RecordBatch& records);
  Status BeginLoad();
  Result<DuckAppender*> AppenderFor(TableState& table);
  Status AppendRows(const RecordBatch& records, const std::vector<size_t>& rows, TableState& table,
                    int64_t loaded_at_us);
  /// Drops the open load: its transaction rolls back.
  void AbandonLoad();
  Status CommitLoad();
  Status Publish(TableState& table);
  Result<int64_t> SwapInStaging(const TableState& table);
  Result<int64_t> AppendStaging(const TableState& table, const std::vector<Column>& columns);

  // Merge (write_disposition: merge): staged rows carry their load, position and delete flag.
  /// The merge options against the declared columns: keys and dedup_sort name columns.
  Status CheckPolicies() const;
  std::string StagingDefinitions(const TableState& table, const std::vector<Column>& columns) const;
  /// Whether record `index` deletes its key (hard_delete).
  Result<bool> DeleteMark(const RecordBatch& records, size_t index, const TableState& table);
  /// A key column, or in raw mode the text at that path of `_source_data`, of `alias`.
  std::string KeyExpression(std::string_view alias, std::string_view key) const;
  /// One row per key of the staged rows matching `where`: the winner, with its delete flag.
  std::string WinnerQuery(const TableState& table, const std::vector<Column>& columns,
                          std::string_view where) const;
  /// Applies the staged rows of `table` (only this job's loads up to `through_load` when set)
  /// to its table: deletes every key they hold, inserts each key's winner unless it deletes,
  /// then removes what it applied. In the caller's transaction; returns the rows inserted.
  Result<int64_t> ApplyMerge(const TableState& table, std::optional<int64_t> through_load);
  /// The full refresh of a merging table, in the publishing transaction: the table is replaced
  /// by each staged key's winner, deletes left out. Returns the rows it holds.
  Result<int64_t> SwapInWinners(const TableState& table, const std::vector<Column>& columns);
  Status ApplyContinuousMerges(int64_t through_load);

  SyncMetadata sync_;
  // The options, set by ReadOptions() from the declaration's defaults and the block.
  std::string database_path_;
  std::string schema_;
  std::string default_table_;
  bool unnest_ = false;
  int64_t threads_ = 0;
  int64_t memory_limit_mb_ = 0;
  TablePolicies policies_;
  std::map<std::string, std::vector<Column>, std::less<>> schemas_;
  std::vector<Column> raw_columns_;

  std::optional<DuckConnection> connection_;
  std::string quoted_schema_;
  std::map<std::string, TableState, std::less<>> tables_;
  std::optional<OpenLoad> load_;
  /// What the last committed load returned ({"load_id": N}), or the resumed job's state.
  Value last_state_;
  std::unique_ptr<RowEncoder> encoder_;
};

}  // namespace bizon
