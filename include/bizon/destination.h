// The destination contract: what a connector implements to receive records.
//
// Lifecycle, from the consumer's single thread: Open() once, Write() for every flush of the
// engine's buffer (or, for a destination that CanAppend(), Append() for every batch as it arrives
// and Sync() at every flush), Finalize() once after the last flush of a successful run, then
// OnJobSucceeded() once the backend has recorded the success. A run that fails never calls
// Finalize(), so nothing partial is published.
#pragma once

#include <cstdint>
#include <string>

#include "bizon/record_batch.h"
#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

enum class SyncMode { kFullRefresh, kIncremental, kStream };
std::string_view ToString(SyncMode mode);
Result<SyncMode> ParseSyncMode(std::string_view text);

/// What a destination knows about the run (the original's SyncMetadata).
struct SyncMetadata {
  std::string name;  // The pipeline's identity (`id`, or `name` when no id is set).
  std::string job_id;
  std::string source_name;
  std::string stream_name;
  /// How to materialise: a reset of an incremental stream is materialised as a full refresh.
  SyncMode sync_mode = SyncMode::kFullRefresh;
  std::string destination_name;
  bool reset = false;
};

class Destination {
 public:
  virtual ~Destination() = default;

  /// Prepares staging. `resume_state` is the state returned by the last Write() of this job that
  /// the backend recorded (null for a fresh job): a destination that can, discards anything it
  /// wrote after that point, which is what makes a resumed run exactly-once.
  virtual Status Open(const Value& resume_state) = 0;

  /// Writes `records` (each row becomes the destination record: bizon id, extracted/loaded times,
  /// source id and timestamp, payload). Rows must be durable when it returns. The returned value
  /// is recorded with the destination cursor and handed back to Open() on resume.
  virtual Result<Value> Write(const RecordBatch& records, int64_t loaded_at_us) = 0;

  /// True for a destination that can take rows as they arrive and make them durable later (a
  /// file it appends to). The consumer then hands every batch to Append() at once, without
  /// holding buffer_size bytes of records in memory, and calls Sync() where it would have called
  /// Write(): `buffer_size` becomes the interval between durable points, not RAM.
  virtual bool CanAppend() const { return false; }

  /// Renders and writes `records` (not necessarily durable yet). Only when CanAppend().
  virtual Status Append(const RecordBatch& records, int64_t loaded_at_us) {
    (void)records;
    (void)loaded_at_us;
    return Status(StatusCode::kUnimplemented, "this destination cannot append");
  }

  /// Makes every row Append() took durable and returns what Write() would: the state recorded
  /// with the destination cursor and handed back to Open() on resume. Only when CanAppend().
  virtual Result<Value> Sync() {
    return Fail(Status(StatusCode::kUnimplemented, "this destination cannot append"));
  }

  /// Called once the destination cursor carrying `state` (what Write() or Sync() returned) is
  /// recorded: a destination that wrote its rows provisionally makes them visible here, so that
  /// rows a run wrote after its last recorded cursor never become visible (a resume writes them
  /// again). Must be idempotent: the engine may call it again with the same state, and Open()
  /// of a resumed run is handed that state too.
  virtual Status OnCursorRecorded(const Value& state) {
    (void)state;
    return Status::Ok();
  }

  /// Publishes what the run staged (rename, append, table swap). Must be idempotent: it may run
  /// again after a crash between Finalize() and OnJobSucceeded().
  virtual Status Finalize() = 0;

  /// Called after the backend marked the job succeeded: removes leftovers of Finalize().
  virtual Status OnJobSucceeded() { return Status::Ok(); }
};

}  // namespace bizon
