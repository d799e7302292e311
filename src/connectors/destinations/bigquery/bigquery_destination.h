// The bigquery destination: batch loads. Every engine flush becomes one Avro file per table in
// the `gcs_buffer_bucket`, loaded by a load job into the table's staging table; Finalize()
// publishes the staging table with a copy job.
//
// | sync mode                  | Write() loads into      | Finalize()                           |
// |----------------------------|-------------------------|--------------------------------------|
// | full refresh (and a reset) | `<table>_temp`          | copy to `<table>`, WRITE_TRUNCATE     |
// | incremental                | `<table>_incremental`   | copy to `<table>`, WRITE_APPEND       |
// | stream                     | `<table>`               | nothing                              |
//
// A copy job is atomic: readers see the previous table until it lands, and a failed or killed
// run never reaches it. Staging tables are created with tables.insert (schema, partitioning,
// clustering, and a description naming the pipeline job that owns them); a staging table owned
// by another job (a failed earlier run) is dropped and made again, one owned by this job (a
// resumed run) is kept. They are dropped by OnJobSucceeded().
//
// Exactly-once: the N-th load of a pipeline job has the job id
// `bizon_load_<pipeline job id>_<table hash>_<N>_<rows fingerprint>` (N counts every Write() of
// the job, across resumes: it travels in the state recorded with the destination cursor; the
// fingerprint hashes the rows loaded). Before inserting a load, the destination asks for that job
// id: a job already DONE without error is the same rows loaded by a run that died before its
// cursor was recorded, and is not loaded again (BigQuery also refuses a second job with one id;
// the emulator does not, hence the lookup). A failed job is retried as `<id>_r<k>`. Publishing
// copy jobs have ids of the same kind, so a Finalize() repeated after a crash appends once. A
// resumed run that cuts its flush where the dead one did (size-based flushes of a deterministic
// source) loads every row once; one that cuts elsewhere gets another id, so the rows of the dead
// run's last, unrecorded load can be repeated, never skipped. See README.md.
//
// `async_load`: Write() uploads the files and submits one load job per `load_files_per_job`
// files already recorded by an earlier cursor (so a job never carries rows a resumed run fetches
// again), keeps at most `load_max_in_flight_jobs` running, and records the files and jobs still
// pending in the cursor state; Open() of a resumed run finishes them, Finalize() drains them.
//
// Thread safety: one instance is used from the consumer's thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bizon/registry.h"
#include "common/write_disposition.h"
#include "connectors/destinations/bigquery/bigquery_load_schema.h"
#include "google/bigquery_client.h"
#include "google/gcs_client.h"

namespace bizon {

/// A deterministic BigQuery job id: `bizon_<kind>_<pipeline job id>_<16 hex of the table>_<n>`
/// (characters outside [A-Za-z0-9_-] of the pipeline job id become '_').
std::string BigqueryJobId(std::string_view kind, std::string_view pipeline_job_id,
                          std::string_view table, int64_t sequence);

/// The partitioning of the tables bizon creates, from `time_partitioning` (block, bare window or
/// default) checked against the written columns (spec 8.1.6). nullopt: not partitioned.
/// `unnest_columns`: the record_schemas entries' columns (empty in raw mode).
Result<std::optional<BigQueryTimePartitioning>> ResolveBigqueryPartitioning(
    const Value* time_partitioning, bool unnest,
    const std::map<std::string, std::vector<BqColumn>, std::less<>>& unnest_columns);

/// The id of the `sequence`-th load of `rows` of `records`: BigqueryJobId("load", ...) followed by
/// `_<16 hex>`, an FNV-1a fingerprint of the rows' source ids and payloads (not their timestamps,
/// which a re-fetch can stamp anew). A resumed
/// run that loads the same rows under the same n finds the dead run's job and skips it; one that
/// cut its flush elsewhere gets another id and loads its rows, so a different cut can repeat rows
/// of the dead run's last load but never skips rows it did not load.
std::string BigqueryLoadJobId(std::string_view pipeline_job_id, std::string_view table,
                              int64_t sequence, const RecordBatch& records,
                              const std::vector<size_t>& rows);

/// BigqueryLoadJobId's id for another kind of job over the same rows (a merge's "merge").
std::string BigqueryRowsJobId(std::string_view kind, std::string_view pipeline_job_id,
                              std::string_view table, int64_t sequence, const RecordBatch& records,
                              const std::vector<size_t>& rows);

/// Refuses a destination id that cannot name a BigQuery table: empty, control characters, '.',
/// '`', or longer than 1024 bytes with its staging suffix.
Status CheckBigqueryTableName(std::string_view table, SyncMode sync_mode);

class BigqueryDestination final : public Destination {
 public:
  /// Checks the config (record_schemas, partitioning, clustering); connects in Open().
  static Result<std::unique_ptr<BigqueryDestination>> Create(const DestinationContext& context);
  ~BigqueryDestination() override;
  BigqueryDestination(const BigqueryDestination&) = delete;
  BigqueryDestination& operator=(const BigqueryDestination&) = delete;

  Status Open(const Value& resume_state) override;
  Result<Value> Write(const RecordBatch& records, int64_t loaded_at_us) override;
  Status Finalize() override;
  Status OnJobSucceeded() override;

 private:
  struct TableState {
    std::string name;     // The published table.
    std::string staging;  // Where loads go (a merge: where its MERGE statements go).
    std::vector<BqColumn> columns;
    std::vector<std::string> clustering;
    bool prepared = false;  // Its staging table was checked or created by this process.
    TablePolicy policy;
    /// Its records are read as change rows (ReadChangeRow) and checked against the schema
    /// contract before they are loaded: unnest tables that merge, have a contract, or read a
    /// change format.
    bool shaped = false;
    /// The `<table>__rejected` table of a discard contract.
    bool rejected = false;
    /// Its columns differ from its record_schemas entry (evolve, or read from the table): the
    /// state records them.
    bool evolved = false;
    /// Shaped tables: the columns the load target has were read (or it does not exist).
    bool columns_known = false;
    /// Shaped tables: the columns `staging` has, as far as this process knows; the columns
    /// missing or narrower there are added or widened before a load.
    std::vector<BqColumn> target_columns;
  };
  /// A record of a shaped table as it is loaded.
  struct ShapedRow {
    size_t record = 0;  // Its index in the batch.
    Value row;
    bool deleted = false;
  };
  /// One table's share of a Write(), made before anything is written.
  struct TableWrite {
    TableState* table = nullptr;
    /// Plain tables: the batch's rows.
    std::vector<size_t> rows;
    /// Shaped and rejected tables: the rows to load.
    std::vector<ShapedRow> shaped;
  };
  /// A staged file not yet loaded (async_load).
  struct PendingFile {
    std::string table;
    std::string object;
    int64_t sequence = 0;
  };
  /// A submitted async load job and the files it carries.
  struct InFlightJob {
    std::string table;
    std::string job_id;
    std::vector<std::string> objects;
  };

  explicit BigqueryDestination(const DestinationContext& context);
  /// Reads the options of `config` against the destination's declaration.
  Status ReadOptions(const Value& config);

  Result<TableState*> TableFor(std::string_view destination_id);
  /// The `<table>__rejected` table of `table`.
  TableState* RejectedTableFor(const TableState& table);
  Status Prepare(TableState& table);
  BigQueryTableRef Ref(std::string_view table) const;
  BigQueryJobRef JobRef(std::string job_id) const;
  BigQueryLoadConfig LoadConfig(const TableState& table,
                                const std::vector<std::string>& objects) const;
  /// Runs (or, for an id already DONE, skips) the job `base_id` (or its retries), waiting when
  /// `wait`; returns the job. `submitted_here`: this process submitted it (async_load), so
  /// finding it is no news.
  Result<BigQueryJob> EnsureJob(const std::string& base_id, const Value& configuration, bool wait,
                                bool submitted_here = false);
  /// Uploads a load file of `table`'s `sequence`-th load; returns the object's name.
  Result<std::string> Upload(const TableState& table, int64_t sequence, const std::string& file);
  /// Encodes `rows` of `records` (a plain table) into a load file.
  Result<std::string> Encode(const TableState& table, const RecordBatch& records,
                             const std::vector<size_t>& rows, int64_t loaded_at_us) const;
  /// Loads `file` (rows `records` of the batch) into `table`'s staging table under the load's
  /// deterministic id, as every load of an appending table is.
  Status LoadFile(TableState& table, int64_t sequence, const std::string& file,
                  const RecordBatch& records, const std::vector<size_t>& rows);
  void DeleteObjects(const std::vector<std::string>& objects);
  Status SubmitPending(bool all);
  Status CompleteOldest();
  Status ReapDone();
  Value CurrentState() const;
  /// Reads the columns `state` records for evolved tables.
  Status RestoreColumns(const Value& state);
  Status CheckPartitioning(const TableState& table);
  /// Deletes the staged files of `job_id` when the backend says it will never succeed.
  void SweepFilesOfAbandonedJob(const std::string& job_id);
  Status Publish(TableState& table);
  /// Whether publishing `table` replaces the published table (a full refresh, or replace).
  bool Replaces(const TableState& table) const;

  // Shaped tables (bigquery_policy_writes.cc): merge, schema contracts and change formats.
  /// Reads and checks the records of `rows` for `table`: its write, and its rejected table's,
  /// are added to `writes`. Fails (nothing written yet) on a record the contract refuses under
  /// freeze or evolve.
  Status ShapeRows(TableState& table, const RecordBatch& records, const std::vector<size_t>& rows,
                   int64_t loaded_at_us, std::vector<TableWrite>& writes);
  /// Writes a shaped or rejected table's rows: columns added or widened first, then a load, or
  /// for a merge a load into a staging table of its own and the MERGE.
  Status WriteShaped(TableWrite& write, const RecordBatch& records, int64_t sequence);
  Status MergeLoad(TableWrite& write, const RecordBatch& records, int64_t sequence,
                   const std::string& file);
  /// Loads `file` into `staging`, a table of its own for one merge load (made here, dropped by
  /// BigQuery a day later if the run dies before it drops it).
  Status LoadMergeStaging(const TableState& table, const BigQueryTableRef& staging,
                          int64_t sequence, const std::string& file);
  /// The columns of the table `ref` as a query sees them (the emulator's tables.get does not
  /// show DDL changes); nullopt when it does not exist.
  Result<std::optional<std::vector<BqColumn>>> PhysicalColumns(const BigQueryTableRef& ref);
  /// Learns what the load target of a shaped table holds (once).
  Status KnowColumns(TableState& table);
  /// Adds and widens the columns `table.staging` lacks (ALTER TABLE), so that it has `columns`;
  /// `ref`: another table to align instead (the published one, before a copy).
  Status AlterColumns(const BigQueryTableRef& ref, const std::vector<BqColumn>& have,
                      const std::vector<BqColumn>& want);
  Result<BigQueryJob> RunStatement(const std::string& job_id, const std::string& sql);

  SyncMetadata sync_;
  std::function<Result<bool>(const std::string& job_id)> job_abandoned_;
  // The options, set by ReadOptions() from the declaration's defaults and the block.
  std::string project_;
  std::string dataset_;
  std::string dataset_location_;
  bool create_dataset_ = false;
  std::string bucket_;
  std::string buffer_format_;
  bool enforce_partitioning_ = false;
  bool async_load_ = false;
  int64_t files_per_job_ = 0;
  int64_t max_in_flight_ = 0;
  std::string table_prefix_;
  std::string service_account_key_;
  std::string key_origin_ = "destination.config.authentication.service_account_key";
  std::string default_destination_id_;
  bool unnest_ = false;
  std::optional<BigQueryTimePartitioning> partitioning_;
  std::map<std::string, std::vector<BqColumn>, std::less<>> schemas_;
  std::map<std::string, std::vector<std::string>, std::less<>> clustering_;
  TablePolicies policies_;

  std::unique_ptr<BigQueryClient> bigquery_;
  std::unique_ptr<GcsClient> gcs_;
  std::string job_location_;
  std::string default_table_;
  std::map<std::string, TableState, std::less<>> tables_;
  int64_t loads_ = 0;
  std::vector<PendingFile> pending_;
  std::vector<InFlightJob> in_flight_;
};

}  // namespace bizon
