// The source contract: what a connector implements to be read by the engine.
//
// Lifecycle: the engine constructs one Source per run through its registered factory, calls
// CheckConnection() once, then Get() / GetRecordsAfter() from a single thread until an iteration
// comes back with an empty `next_pagination`. A Source is never called from two threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "bizon/record_batch.h"
#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

/// One page of records plus what is needed to fetch the next one.
struct SourceIteration {
  RecordBatch records;
  /// An empty map (or null) means the source is exhausted after this page.
  Value next_pagination = Value::EmptyMap();
  /// Incremental state to carry into the next successful run (the original's `next_state`).
  std::optional<Value> next_state;

  bool IsLast() const {
    return next_pagination.is_null() ||
           (next_pagination.is_map() && next_pagination.AsMap().empty());
  }
};

/// The run window handed to GetRecordsAfter (the original's SourceIncrementalState).
struct IncrementalState {
  int64_t last_run_us = 0;          // Start of the previous successful run, UTC.
  int64_t run_started_at_us = 0;    // Start of this run: the upper bound of the window.
  Value state = Value::EmptyMap();  // The previous successful run's next_state.
  std::string cursor_field;
};

class Source {
 public:
  virtual ~Source() = default;

  /// Called once per run before any fetch. A failure aborts the run with failure_class source.
  virtual Status CheckConnection() { return Status::Ok(); }

  /// Total records the stream will yield, when the source knows it (progress and ETA only).
  virtual std::optional<int64_t> TotalRecordsCount() { return std::nullopt; }

  /// Fetches the page after `pagination` (an empty map on the first call).
  virtual Result<SourceIteration> Get(const Value& pagination) = 0;

  /// Incremental fetch within the run window. Only called when the stream was declared
  /// incremental in the connector's StreamSpec.
  virtual Result<SourceIteration> GetRecordsAfter(const IncrementalState& state,
                                                  const Value& pagination) {
    (void)state;
    (void)pagination;
    return Fail(UnimplementedError("this source does not support incremental sync"));
  }

  /// Acknowledges everything fetched so far, once the destination has durably written it (stream
  /// sources commit offsets here).
  virtual Status Commit() { return Status::Ok(); }
};

}  // namespace bizon
