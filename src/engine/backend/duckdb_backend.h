// DuckdbBackend: the Backend on a DuckDB database file (the `duckdb` backend type), so that a
// pipeline's state and the rows a duckdb destination loads can live in one file.
//
// One process, one file: DuckDB lets a single process open a file for writing. Every
// DuckdbBackend of the process (init, producer, consumer) and a duckdb destination on the same
// path share one DuckDatabase handle, each with a connection of its own; a second process opening
// the file fails at once with kUnavailable, naming it. So the process runner's forked producer
// goes without the backend (IsProcessLocal() is true for this type, as for sqlite_in_memory), and
// `--role producer|consumer` is refused.
//
// Thread safety: one instance is used from one thread at a time (the Backend contract); the
// instances of a process serialize their statements on one mutex, so that two never update a
// row at once (DuckDB would fail one of them with a conflict rather than wait).
//
// Durability: every method commits before it returns (DuckDB syncs its write-ahead log at
// COMMIT).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/backend.h"
#include "bizon/status.h"
#include "duckdb/duckdb_client.h"

namespace bizon {

class DuckdbBackend final : public Backend {
 public:
  /// Opens (creating it if missing) the database file at `path`, the state tables in `schema`
  /// (created by Migrate() when missing).
  static Result<std::unique_ptr<DuckdbBackend>> Open(const std::string& path,
                                                     const std::string& schema);
  ~DuckdbBackend() override;
  DuckdbBackend(const DuckdbBackend&) = delete;
  DuckdbBackend& operator=(const DuckdbBackend&) = delete;

  Status Migrate() override;

  /// Held in this process until this instance is destroyed: no other process can hold the file
  /// at all, so no other run of the stream is alive anywhere.
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

 private:
  /// The newest job of `key` in `status` (created_at, then insertion order, breaks ties).
  Result<std::optional<StreamJob>> NewestJobIn(const StreamKey& key, JobStatus status,
                                               std::string_view what);
  DuckdbBackend(DuckConnection connection, std::string schema);
  std::string Table(std::string_view name) const;
  /// Runs one statement under the process's backend mutex; returns its rows.
  Result<DuckRows> Run(std::string_view sql, const std::vector<DuckParam>& params = {});
  /// An UPDATE of one job by id: kNotFound when no row matched.
  Status UpdateJob(std::string_view assignments, std::vector<DuckParam> params,
                   std::string_view job_id);
  Result<std::optional<StreamJob>> QueryJob(std::string_view where_and_order,
                                            const std::vector<DuckParam>& params);
  Result<std::optional<StreamReset>> QueryReset(std::string_view where_and_order,
                                                const std::vector<DuckParam>& params);

  DuckConnection connection_;
  std::string schema_;
  std::vector<std::string> run_locks_;  // Keys of the locks this instance holds.
};

}  // namespace bizon
