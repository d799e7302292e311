// PostgresBackend: the Backend on a PostgreSQL database (the `postgres` backend type).
//
// Same tables, columns, values and migrations as SqliteBackend (README.md beside this file), in
// the configured `schema`, which is created when missing. The original checked that schema
// existed, then used unqualified names: its tables are in the first schema of the connection's
// search path (current_schema()). So Migrate() first looks at both (README.md, "State shared with
// the original"): when only the search path holds the original's tables, they are the store;
// otherwise the configured schema is, and views of its four tables are created in the search path
// schema (when nothing is there) for the original to read and write. Every identifier is quoted;
// values always travel as parameters.
//
// Concurrency: many instances, processes and hosts may share one database and schema. Migrate()
// serialises concurrent migrators with a transaction-level advisory lock, so each migration is
// applied once. AcquireRunLock() takes a session-level advisory lock per pipeline stream: a
// second run of the same pipeline fails fast, and a crashed run's lock is released by the
// server when its connection goes.
//
// Thread safety: one instance is used from one thread at a time (the Backend contract).
//
// Lifecycle: Open() connects; Migrate() must run (on any instance sharing the schema) before the
// other methods. Every method commits before it returns. A lost connection is re-opened by the
// next call (the call that met the loss fails with kUnavailable); held run locks are re-taken
// then, or that call fails.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/backend.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "postgres/postgres_client.h"

namespace bizon {

class PostgresBackend final : public Backend {
 public:
  /// Connects to the database of `connection`; the state tables live in `schema`.
  static Result<std::unique_ptr<PostgresBackend>> Open(PgConnectionSettings connection,
                                                       std::string schema);

  /// Opens the backend of a normalized `engine.backend` block ({type: postgres, config}).
  static Result<std::unique_ptr<PostgresBackend>> OpenFromConfig(const Value& backend);

  /// The schema version Migrate() brings a database to.
  static int LatestSchemaVersion();

  ~PostgresBackend() override = default;
  PostgresBackend(const PostgresBackend&) = delete;
  PostgresBackend& operator=(const PostgresBackend&) = delete;

  /// The version recorded in `bizon_schema_version`; 0 when the schema was never migrated.
  Result<int> SchemaVersion();

  /// Decides where the tables are (the configured schema, or the original's in the search path),
  /// creates the schema when missing and applies the pending migrations, each in its own
  /// transaction under an advisory lock, re-reading the version first; then creates the views
  /// the original reads through, when they are needed. Fails with kFailedPrecondition when the
  /// schema was migrated by a newer bizon.
  Status Migrate() override;

  /// Takes the session-level advisory lock of (schema, pipeline, source, stream) without
  /// waiting. Fails with kFailedPrecondition, naming the server process holding it, when another
  /// session has it. Held until this backend is destroyed or its connection drops.
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
  /// The newest running job by created_at, then by insertion order.
  Result<std::optional<StreamJob>> GetRunningStreamJob(const StreamKey& key) override;
  Result<std::optional<StreamJob>> GetStartedStreamJob(const StreamKey& key) override;
  Result<std::optional<StreamJob>> GetLastSuccessfulStreamJob(const StreamKey& key) override;

  Status CreateSourceCursor(const SourceCursorRow& cursor) override;
  /// As SqliteBackend: an empty pagination is stored as NULL and reads back as nullopt.
  Status CreateDestinationCursor(const DestinationCursor& cursor) override;
  Result<std::optional<DestinationCursor>> GetLastDestinationCursor(
      std::string_view job_id) override;
  Result<int64_t> GetWrittenRowCount(std::string_view job_id) override;

  bool HasPartitionLedger() const override { return true; }
  Result<std::vector<PartitionClaim>> ClaimPartitions(
      const StreamKey& key, std::string_view owner,
      const std::vector<std::string>& partitions) override;
  Status CreateDestinationCursorAndAdvance(const DestinationCursor& cursor, const StreamKey& key,
                                           std::string_view owner,
                                           const std::vector<PartitionAdvance>& advances) override;

  Result<StreamReset> CreateStreamReset(const StreamKey& key) override;
  Result<std::optional<StreamReset>> GetPendingStreamReset(const StreamKey& key) override;
  Result<std::optional<StreamReset>> GetStreamResetByJobId(std::string_view job_id) override;
  /// Idempotent for the same job; kAborted when another job consumed it or it was cancelled,
  /// kNotFound when there is no such reset.
  Status ConsumeStreamReset(std::string_view reset_id, std::string_view job_id) override;
  Result<int64_t> CancelPendingStreamResets(const StreamKey& key) override;

 private:
  /// The newest job of `key` in `status` (created_at, then insertion order, breaks ties).
  Result<std::optional<StreamJob>> NewestJobIn(const StreamKey& key, JobStatus status,
                                               std::string_view what);
  PostgresBackend(std::unique_ptr<PgConnection> connection, std::string schema);

  /// `"schema".name`.
  std::string Table(std::string_view name) const {
    return quoted_schema_ + "." + std::string(name);
  }
  Result<std::optional<StreamJob>> QueryJob(std::string_view where_and_order, std::string_view what,
                                            const std::vector<PgParam>& params);
  Result<std::optional<StreamReset>> QueryReset(std::string_view where_and_order,
                                                std::string_view what,
                                                const std::vector<PgParam>& params);
  Status UpdateJob(std::string_view set_clause, std::string_view what, std::string_view job_id,
                   std::vector<PgParam> params);
  Status RetakeRunLocks();
  /// Decides where the state tables are (see the file comment); once per instance.
  Status ResolveStore();
  void SetStoreSchema(std::string schema);
  Status MigrateStore();
  /// Views of the four original tables in the search path schema ResolveStore() chose, if any.
  /// A failure is only logged: the run does not need them.
  Status CreateOriginalViews();

  std::unique_ptr<PgConnection> connection_;
  std::string configured_schema_;  // engine.backend.config.schema.
  std::string schema_;             // Where the state tables are.
  bool store_resolved_ = false;
  std::optional<std::string> original_views_schema_;
  std::string quoted_schema_;
  struct HeldLock {
    int64_t key;
    std::string description;  // "pipeline 'p' (source.stream)".
  };
  std::vector<HeldLock> run_locks_;
};

}  // namespace bizon
