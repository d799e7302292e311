// The one order in which a write becomes a position a run resumes from. Every runner goes
// through it, after each write:
//   1. the destination makes the rows durable and returns its state (the caller's write);
//   2. the destination cursor is recorded: a resume starts after the iterations it covers;
//   2b. the destination is told (OnCursorRecorded: provisional rows become visible);
//   3. the runner's hook sees the recorded cursor (a broker queue acknowledges its frames);
//   4. the source is acknowledged up to the cursor's pagination (a kafka group's offsets).
// A step that fails stops the sequence there, so nothing is acknowledged that a resume would not
// read again, and nothing is recorded that the destination does not hold.
#pragma once

#include <cstdint>
#include <functional>

#include "bizon/backend.h"
#include "bizon/destination.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "engine/job.h"
#include "engine/settings.h"

namespace bizon {

/// What one durable write covers.
struct Covered {
  int64_t from_iteration = 0;
  int64_t to_iteration = 0;
  int64_t rows = 0;
  /// The pagination that fetches the iteration after `to_iteration`; the source is acknowledged
  /// up to it. Null or empty when the source is exhausted.
  const Value& pagination;
  /// The source said the last iteration was its last: the cursor records no pagination.
  bool source_exhausted = false;
};

class CommitLoop {
 public:
  struct Hooks {
    /// Records the cursor; the backend's CreateDestinationCursor() when unset (a stream member
    /// records through its partition ledger).
    std::function<Status(const DestinationCursor&)> record;
    /// Runs once the cursor is recorded.
    std::function<void(const DestinationCursor&)> recorded;
    /// Acknowledges the source up to a recorded pagination: at once (stream runner), or handed
    /// to the producer's thread or process. Nothing when unset.
    std::function<Status(const Value& pagination)> acknowledge;
  };

  CommitLoop(Backend& backend, Destination& destination, const PipelineSettings& settings,
             const JobPlan& plan, Hooks hooks);

  /// Runs `write` (Write, Sync or the chunks of an oversized iteration: whatever makes `covered`
  /// durable and returns the destination's state), then steps 2 to 4.
  Status Commit(const Covered& covered, const std::function<Result<Value>()>& write);
  /// Steps 2 to 4 for a position that wrote nothing (an empty page): its cursor carries the last
  /// durable state, since a resume hands it to Destination::Open().
  Status CommitEmpty(const Covered& covered);

  /// What the destination's last durable write returned (the resumed job's, before any).
  const Value& destination_state() const { return state_; }

 private:
  Status Record(const Covered& covered);

  Backend& backend_;
  Destination& destination_;
  const PipelineSettings& settings_;
  const JobPlan& plan_;
  Hooks hooks_;
  Value state_;
};

}  // namespace bizon
