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
#include <utility>
#include <vector>

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

  /// For a source read by several members at once (see PartitionOwner): the next position of
  /// each partition this member holds, by the names it gave PartitionOwner::Claimed. Empty
  /// otherwise.
  std::vector<std::pair<std::string, int64_t>> partition_positions;

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

/// The engine's side of a source that several processes of one pipeline read at once, each
/// holding some of its partitions (Kafka partitions in a consumer group). The source calls it
/// from within Get(), on the Get() thread, when its partitions change.
class PartitionOwner {
 public:
  virtual ~PartitionOwner() = default;
  /// `partitions` were assigned to this member. Returns, for each, the position to read from
  /// (nullopt: none recorded, the source starts where it would on its own). An error fails the
  /// Get() in progress; the source must not read the partitions then.
  virtual Result<std::vector<std::optional<int64_t>>> Claimed(
      const std::vector<std::string>& partitions) = 0;
  /// `partitions` were taken from this member; the source drops what it read of them and not
  /// yet returned.
  virtual void Revoked(const std::vector<std::string>& partitions) = 0;
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

  /// Acknowledges what the destination has durably written and the engine recorded: everything
  /// up to `up_to`, the next_pagination of the last recorded iteration (stream sources commit
  /// offsets here). The engine may have fetched past it (a runner whose producer runs ahead of
  /// its consumer): a source acknowledges only what `up_to` covers, and one that can only
  /// acknowledge everything it fetched does so only when `up_to` is its latest next_pagination.
  /// Called from the thread that calls Get().
  virtual Status Commit(const Value& up_to) {
    (void)up_to;
    return Status::Ok();
  }

  /// A source whose partitions can be shared by several processes of one pipeline: this
  /// process's member id, stable across its restarts ("" for a source that is read whole).
  virtual std::string MemberId() const { return ""; }
  /// Hands over the engine's PartitionOwner (outliving every later Get) before the first Get.
  virtual void SetPartitionOwner(PartitionOwner* owner) { (void)owner; }
};

}  // namespace bizon
