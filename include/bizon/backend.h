// Backend: where bizon keeps jobs, cursors and reset requests between runs.
//
// Table and column names follow the original (stream_jobs, source_cursors, destination_cursors,
// stream_resets) so existing tooling can read them. Every method commits before it returns.
// A Backend instance is used from one thread at a time; open one per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

/// The triple every row is keyed by.
struct StreamKey {
  std::string name;  // The pipeline's `id`, or its `name` when no id is set.
  std::string source_name;
  std::string stream_name;
};

enum class JobStatus { kStarted, kRunning, kFailed, kCancelled, kSucceeded };
std::string_view ToString(JobStatus status);
Result<JobStatus> ParseJobStatus(std::string_view text);

struct StreamJob {
  std::string id;  // uuid4 as 32 lowercase hex characters.
  StreamKey key;
  std::string sync_mode;
  std::optional<int64_t> total_records_to_fetch;
  int64_t created_at_us = 0;
  int64_t updated_at_us = 0;
  /// JSON text of the last non-null next_state, persisted when the job succeeds.
  std::optional<std::string> incremental_state;
  JobStatus status = JobStatus::kStarted;
  std::optional<std::string> error_message;
  /// Process that owns the job while it runs (pid and host, "pid@host"); a RUNNING job whose owner
  /// is gone was left by a killed process.
  std::string owner;
};

/// A job about to be inserted: a fresh id, status `started`, created and updated now. Every
/// backend builds its rows from this, so they agree on what a new job holds.
StreamJob NewStreamJob(const StreamKey& key, std::string_view sync_mode,
                       std::optional<int64_t> total_records, std::string_view owner);

struct SourceCursorRow {
  std::string job_id;
  StreamKey key;
  int64_t iteration = 0;
  int64_t rows_fetched = 0;
  std::string next_pagination;  // JSON text.
};

struct DestinationCursor {
  std::string id;
  std::string job_id;
  StreamKey key;
  std::string destination_name;
  int64_t from_source_iteration = 0;
  int64_t to_source_iteration = 0;
  int64_t rows_written = 0;
  bool success = false;
  /// JSON of the pagination that fetches `to_source_iteration + 1`; nullopt when exhausted.
  std::optional<std::string> pagination;
  /// JSON of what Destination::Write returned (e.g. the file length), for exactly-once resume.
  std::optional<std::string> destination_state;
  std::optional<std::string> error_message;
  int64_t created_at_us = 0;
};

struct StreamReset {
  std::string id;
  StreamKey key;
  int64_t requested_at_us = 0;
  std::optional<int64_t> consumed_at_us;
  std::optional<std::string> consumed_by_job_id;
};

/// A partition of a source that several processes of one pipeline read at once (a Kafka topic
/// partition in a consumer group), as the backend's partition ledger (`partition_positions`)
/// holds it after a claim.
struct PartitionClaim {
  std::string partition;  // The source's name for it: "<topic>/<partition>".
  /// The next position to read, as of the last durable write; nullopt when none was recorded.
  std::optional<int64_t> position;
  /// The epoch of this claim: a write recorded under an older one is refused.
  int64_t epoch = 0;
  /// Who held the partition before this claim ("" for nobody).
  std::string previous_owner;
};

/// A partition's new position after a durable write, under the epoch its owner claimed.
struct PartitionAdvance {
  std::string partition;
  int64_t position = 0;
  int64_t epoch = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  /// Creates missing tables and applies migrations up to the current schema version.
  virtual Status Migrate() = 0;

  /// Takes, without waiting, the exclusive lock that lets one run of the pipeline stream `key`
  /// at a time. Held until this backend instance is destroyed; a backend whose lock lives in a
  /// server session (postgres) also loses it when the process dies, so a crash never leaves it
  /// behind; a sqlite file takes a lock file beside it, which the kernel releases with the
  /// process. Fails with kFailedPrecondition when another run holds it. The default does
  /// nothing, for a backend private to one process.
  virtual Status AcquireRunLock(const StreamKey& key) {
    (void)key;
    return Status::Ok();
  }

  /// True when AcquireRunLock() takes a real lock, which proves that no other run of the stream
  /// is alive on any host sharing this backend (InitJob then trusts a running job's owner to be
  /// gone).
  virtual bool RunLockIsExclusive() const { return false; }

  // Jobs.
  virtual Result<StreamJob> CreateStreamJob(const StreamKey& key, std::string_view sync_mode,
                                            std::optional<int64_t> total_records,
                                            std::string_view owner) = 0;
  virtual Status UpdateStreamJobStatus(std::string_view job_id, JobStatus status,
                                       std::optional<std::string> error_message) = 0;
  virtual Status SetIncrementalState(std::string_view job_id, std::string_view state_json) = 0;
  virtual Status SetJobOwner(std::string_view job_id, std::string_view owner) = 0;
  virtual Result<std::optional<StreamJob>> GetStreamJobById(std::string_view job_id) = 0;
  /// The newest job in status `running` for the key.
  virtual Result<std::optional<StreamJob>> GetRunningStreamJob(const StreamKey& key) = 0;
  /// The newest job still in status `started` for the key: a run creates its job `started` and
  /// marks it `running` next, so one left `started` was created by a run stopped in between.
  virtual Result<std::optional<StreamJob>> GetStartedStreamJob(const StreamKey& key) = 0;
  /// The newest job in status `succeeded` for the key, by created_at.
  virtual Result<std::optional<StreamJob>> GetLastSuccessfulStreamJob(const StreamKey& key) = 0;

  // Cursors.
  virtual Status CreateSourceCursor(const SourceCursorRow& cursor) = 0;
  virtual Status CreateDestinationCursor(const DestinationCursor& cursor) = 0;
  /// The successful destination cursor with the highest to_source_iteration.
  virtual Result<std::optional<DestinationCursor>> GetLastDestinationCursor(
      std::string_view job_id) = 0;
  /// Sum of rows_written over the job's successful destination cursors.
  virtual Result<int64_t> GetWrittenRowCount(std::string_view job_id) = 0;

  // Partition ledger: the positions of a source read by several members, which may move between
  // them (only backends several processes can share implement it).

  /// Whether ClaimPartitions and CreateDestinationCursorAndAdvance are implemented.
  virtual bool HasPartitionLedger() const { return false; }
  /// Takes each of `partitions` of `key` for `owner` under a new epoch, in one transaction, and
  /// returns what the ledger holds for them. From then on a write recorded by the previous owner
  /// is refused (it is fenced), so nothing of a partition is recorded twice.
  virtual Result<std::vector<PartitionClaim>> ClaimPartitions(
      const StreamKey& key, std::string_view owner, const std::vector<std::string>& partitions) {
    (void)key, (void)owner, (void)partitions;
    return Fail(UnimplementedError("this backend keeps no partition ledger"));
  }
  /// Records `cursor` and the new positions in one transaction, provided `owner` still holds
  /// every partition at its epoch; otherwise records nothing and fails with kAborted, naming the
  /// partition and its new owner.
  virtual Status CreateDestinationCursorAndAdvance(const DestinationCursor& cursor,
                                                   const StreamKey& key, std::string_view owner,
                                                   const std::vector<PartitionAdvance>& advances) {
    (void)cursor, (void)key, (void)owner, (void)advances;
    return UnimplementedError("this backend keeps no partition ledger");
  }

  // Resets.
  virtual Result<StreamReset> CreateStreamReset(const StreamKey& key) = 0;
  virtual Result<std::optional<StreamReset>> GetPendingStreamReset(const StreamKey& key) = 0;
  virtual Result<std::optional<StreamReset>> GetStreamResetByJobId(std::string_view job_id) = 0;
  virtual Status ConsumeStreamReset(std::string_view reset_id, std::string_view job_id) = 0;
  /// Retires every pending reset of the key; returns how many.
  virtual Result<int64_t> CancelPendingStreamResets(const StreamKey& key) = 0;
};

}  // namespace bizon
