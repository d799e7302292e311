// SqliteBackend: the Backend on a SQLite database (the `sqlite` and `sqlite_in_memory` backend
// types, plus a process-wide shared in-memory variant).
//
// Thread safety: one instance is used from one thread at a time (the Backend contract). Several
// instances, in one process or many, may use the same database at once: SQLite serializes the
// writers, and a writer waits up to 30 s for another to finish before failing with kUnavailable.
//
// Durability: every method commits before it returns, and file databases run with
// synchronous=FULL, so a row that a method reported as written survives a crash or power loss.
//
// Lifecycle: Open() connects; Migrate() must run (on any instance sharing the database) before
// the other methods, which otherwise fail because the tables are missing.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/backend.h"
#include "bizon/status.h"
#include "engine/backend/run_lock.h"

// Forward declared so that sqlite3.h stays inside this folder.
struct sqlite3;

namespace bizon {

class SqliteBackend final : public Backend {
 public:
  /// Opens (creating it if missing) the database file at `path`, in WAL mode. `path` is taken
  /// literally, never as a URI. The special path ":memory:" opens a database private to this
  /// instance: no other instance, even in the same process, can see it, and it is gone when the
  /// instance is destroyed (the original's `sqlite_in_memory`).
  static Result<std::unique_ptr<SqliteBackend>> Open(std::string path);

  /// Opens the in-memory database called `name`, shared by every instance in this process that
  /// opens the same name (SQLite's "file:<name>?mode=memory&cache=shared"). It lets the init_job,
  /// producer and consumer instances of one run share state without a file. The database lives
  /// while at least one instance is open: keep one open for as long as the state must survive.
  static Result<std::unique_ptr<SqliteBackend>> OpenSharedInMemory(const std::string& name);

  /// The schema version Migrate() brings a database to.
  static int LatestSchemaVersion();

  ~SqliteBackend() override;
  SqliteBackend(const SqliteBackend&) = delete;
  SqliteBackend& operator=(const SqliteBackend&) = delete;

  /// The version recorded in `bizon_schema_version`; 0 when the database was never migrated.
  Result<int> SchemaVersion();

  /// Applies the pending migrations, each in its own BEGIN IMMEDIATE transaction that re-reads the
  /// version first, so two processes migrating the same file at once apply each migration once.
  /// Fails with kFailedPrecondition when the database was migrated by a newer bizon.
  Status Migrate() override;

  /// A database file: a lock file beside it per stream key, held until this instance is
  /// destroyed. An in-memory database is private to this process and takes none.
  Status AcquireRunLock(const StreamKey& key) override;
  bool RunLockIsExclusive() const override { return !lock_path_.empty(); }

  Result<StreamJob> CreateStreamJob(const StreamKey& key, std::string_view sync_mode,
                                    std::optional<int64_t> total_records,
                                    std::string_view owner) override;
  /// Sets the status and `updated_at`, and overwrites error_message (nullopt clears it).
  Status UpdateStreamJobStatus(std::string_view job_id, JobStatus status,
                               std::optional<std::string> error_message) override;
  Status SetIncrementalState(std::string_view job_id, std::string_view state_json) override;
  Status SetJobOwner(std::string_view job_id, std::string_view owner) override;
  Result<std::optional<StreamJob>> GetStreamJobById(std::string_view job_id) override;
  /// The newest running job by created_at, then by insertion order.
  Result<std::optional<StreamJob>> GetRunningStreamJob(const StreamKey& key) override;
  Result<std::optional<StreamJob>> GetStartedStreamJob(const StreamKey& key) override;
  Result<std::optional<StreamJob>> GetLastSuccessfulStreamJob(const StreamKey& key) override;

  /// A `next_pagination` that is empty, "{}" or "null" is stored as NULL.
  Status CreateSourceCursor(const SourceCursorRow& cursor) override;
  /// Generates the id when `cursor.id` is empty and uses now when `cursor.created_at_us` is 0. A
  /// pagination that is nullopt, empty, "{}" or "null" is stored as NULL (the source is exhausted)
  /// and reads back as nullopt.
  Status CreateDestinationCursor(const DestinationCursor& cursor) override;
  Result<std::optional<DestinationCursor>> GetLastDestinationCursor(
      std::string_view job_id) override;
  /// 0 when the job has no successful cursor.
  Result<int64_t> GetWrittenRowCount(std::string_view job_id) override;

  bool HasPartitionLedger() const override { return true; }
  Result<std::vector<PartitionClaim>> ClaimPartitions(
      const StreamKey& key, std::string_view owner,
      const std::vector<std::string>& partitions) override;
  Status CreateDestinationCursorAndAdvance(const DestinationCursor& cursor, const StreamKey& key,
                                           std::string_view owner,
                                           const std::vector<PartitionAdvance>& advances) override;

  Result<StreamReset> CreateStreamReset(const StreamKey& key) override;
  /// The pending reset with the newest requested_at.
  Result<std::optional<StreamReset>> GetPendingStreamReset(const StreamKey& key) override;
  Result<std::optional<StreamReset>> GetStreamResetByJobId(std::string_view job_id) override;
  /// Idempotent for the same job; fails with kAborted when another job consumed the reset or it
  /// was cancelled in the meantime, and with kNotFound when there is no such reset.
  Status ConsumeStreamReset(std::string_view reset_id, std::string_view job_id) override;
  Result<int64_t> CancelPendingStreamResets(const StreamKey& key) override;

 private:
  /// The newest job of `key` in `status` (created_at, then insertion order, breaks ties).
  Result<std::optional<StreamJob>> NewestJobIn(const StreamKey& key, JobStatus status,
                                               std::string_view what);
  explicit SqliteBackend(sqlite3* db) : db_(db) {}

  static Result<std::unique_ptr<SqliteBackend>> OpenWithFlags(const std::string& location,
                                                              int flags, bool is_file);

  sqlite3* db_;            // Owned; closed by the destructor.
  std::string lock_path_;  // The database file; empty in memory.
  std::vector<RunLock> run_locks_;
};

}  // namespace bizon
