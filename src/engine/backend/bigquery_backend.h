// BigQueryBackend: the Backend in a BigQuery dataset (the `bigquery` backend type).
//
// Same tables and columns as the other backends (README.md beside this file), in dataset
// `schema` of project `database`; strings are STRING, integers INT64, booleans BOOL and
// timestamps DATETIME (UTC, no zone), as the original's SQLAlchemy models map onto BigQuery.
// Every statement is a query job (jobs.insert, polled to DONE) with named parameters; no value
// is ever written into the SQL text. Identifiers (project, dataset) are checked before use.
//
// BigQuery has no transactions across statements and no row locks, so:
// * every write that must not happen twice or must see a state first is one DML statement with
//   its condition in the WHERE clause, and its outcome is read from numDmlAffectedRows (a reset
//   is consumed by `UPDATE ... WHERE id = @id AND consumed_at IS NULL`; a cursor is inserted by
//   `INSERT ... SELECT ... WHERE EXISTS (the job)`, which stands in for the foreign key);
// * the run lock is a row per stream in `bizon_run_locks`, taken with `UPDATE ... WHERE token
//   IS NULL` (or the token of a holder known to be gone), renewed by a heartbeat thread and
//   released when the backend is destroyed (README.md, "The bigquery backend").
// * migrations are idempotent statements (CREATE TABLE / ADD COLUMN IF NOT EXISTS) and the
//   version moves by a conditional UPDATE, so concurrent migrators are harmless.
//
// Thread safety: one instance is used from one thread at a time (the Backend contract); the
// heartbeat thread only touches the lock row.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bizon/backend.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "google/bigquery_client.h"

namespace bizon {

struct BigQueryBackendOptions {
  /// GCP project (`engine.backend.config.database`).
  std::string project;
  /// Dataset holding the state tables (`engine.backend.config.schema`).
  std::string dataset;
  /// Create the dataset when it is missing.
  bool create_schema = false;
  /// Where a created dataset lives and where the queries run; empty: BigQuery's default.
  std::string location;
  /// Service-account (or authorized-user) key JSON; empty: Application Default Credentials.
  std::string service_account_key;
  /// Names the key in errors.
  std::string service_account_key_origin = "engine.backend.config.service_account_key";
  /// The run lock's lease: a holder that has not renewed it for this long is gone.
  double lock_lease_s = 300;
  /// How often the holder renews it.
  double lock_heartbeat_s = 60;
  /// Client settings (tests: endpoint, env, sleep). Project, location and credentials are set
  /// from the fields above.
  BigQueryClientOptions client;
};

class BigQueryBackend final : public Backend {
 public:
  /// Builds the client and checks the identifiers; no request yet.
  static Result<std::unique_ptr<BigQueryBackend>> Open(BigQueryBackendOptions options);
  /// Opens the backend of a normalized `engine.backend` block ({type: bigquery, config}).
  static Result<std::unique_ptr<BigQueryBackend>> OpenFromConfig(const Value& backend);

  static int LatestSchemaVersion();

  ~BigQueryBackend() override;
  BigQueryBackend(const BigQueryBackend&) = delete;
  BigQueryBackend& operator=(const BigQueryBackend&) = delete;

  /// 0 when the dataset was never migrated.
  Result<int> SchemaVersion();
  /// Checks the dataset exists (creates it with create_schema), then applies the pending
  /// migrations. A missing dataset without create_schema is kFailedPrecondition.
  Status Migrate() override;
  /// Takes the stream's row in bizon_run_locks without waiting (see the file comment); fails
  /// with kFailedPrecondition naming the holder when another live run has it.
  Status AcquireRunLock(const StreamKey& key) override;
  bool RunLockIsExclusive() const override { return true; }

  Result<StreamJob> CreateStreamJob(const StreamKey& key, std::string_view sync_mode,
                                    std::optional<int64_t> total_records,
                                    std::string_view owner) override;
  Status UpdateStreamJobStatus(std::string_view job_id, JobStatus status,
                               std::optional<std::string> error_message) override;
  Status SetIncrementalState(std::string_view job_id, std::string_view state_json) override;
  Status SetJobOwner(std::string_view job_id, std::string_view owner) override;
  Result<std::optional<StreamJob>> GetStreamJobById(std::string_view job_id) override;
  Result<std::optional<StreamJob>> GetRunningStreamJob(const StreamKey& key) override;
  Result<std::optional<StreamJob>> GetStartedStreamJob(const StreamKey& key) override;
  Result<std::optional<StreamJob>> GetLastSuccessfulStreamJob(const StreamKey& key) override;

  Status CreateSourceCursor(const SourceCursorRow& cursor) override;
  Status CreateDestinationCursor(const DestinationCursor& cursor) override;
  Result<std::optional<DestinationCursor>> GetLastDestinationCursor(
      std::string_view job_id) override;
  Result<int64_t> GetWrittenRowCount(std::string_view job_id) override;

  Result<StreamReset> CreateStreamReset(const StreamKey& key) override;
  Result<std::optional<StreamReset>> GetPendingStreamReset(const StreamKey& key) override;
  Result<std::optional<StreamReset>> GetStreamResetByJobId(std::string_view job_id) override;
  Status ConsumeStreamReset(std::string_view reset_id, std::string_view job_id) override;
  Result<int64_t> CancelPendingStreamResets(const StreamKey& key) override;

  /// `project.dataset.name` in backticks.
  std::string Table(std::string_view name) const;
  BigQueryClient& client() { return *client_; }
  const std::string& project() const { return options_.project; }
  const std::string& dataset() const { return options_.dataset; }

 private:
  /// The newest job of `key` in `status` (created_at, then insertion order, breaks ties).
  Result<std::optional<StreamJob>> NewestJobIn(const StreamKey& key, JobStatus status,
                                               std::string_view what);
  BigQueryBackend(BigQueryBackendOptions options, std::unique_ptr<BigQueryClient> client);

  /// Runs one statement as a query job; errors carry FailureClass::kBackend and `what`.
  Result<BigQueryQueryResult> Run(std::string_view what, std::string sql,
                                  std::vector<BigQueryParameter> parameters = {});
  Result<int64_t> Dml(std::string_view what, std::string sql,
                      std::vector<BigQueryParameter> parameters);
  Status UpdateJob(std::string_view set_clause, std::string_view what, std::string_view job_id,
                   std::vector<BigQueryParameter> parameters);
  Result<std::optional<StreamJob>> QueryJob(std::string_view where_and_order, std::string_view what,
                                            std::vector<BigQueryParameter> parameters);
  Result<std::optional<StreamReset>> QueryReset(std::string_view where_and_order,
                                                std::string_view what,
                                                std::vector<BigQueryParameter> parameters);
  Status EnsureDataset();
  void Heartbeat();
  void ReleaseRunLocks();

  BigQueryBackendOptions options_;
  std::unique_ptr<BigQueryClient> client_;

  struct HeldLock {
    StreamKey key;
    std::string token;
  };
  std::mutex lock_mutex_;
  std::condition_variable lock_wakeup_;
  std::vector<HeldLock> run_locks_;
  bool stopping_ = false;
  std::optional<std::string> lost_lock_;  // Why the heartbeat found a lock gone.
  std::thread heartbeat_;
};

}  // namespace bizon
