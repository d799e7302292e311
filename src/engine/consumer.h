// The consumer: takes iterations from a MessageSource, buffers them, writes them to the
// destination, records a destination cursor after each durable write, and on the normal
// termination publishes (Finalize) before marking the job succeeded.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>

#include "bizon/backend.h"
#include "bizon/destination.h"
#include "engine/commit_loop.h"
#include "engine/job.h"
#include "engine/queue/channel.h"
#include "engine/settings.h"

namespace bizon {

class TransformChain;

struct ConsumerResult {
  /// Ok, or why the consumer stopped; its failure class is the side's result.
  Status error;
  /// The failure is the producer's, carried by its error termination: the consumer mirrors it.
  bool upstream = false;

  bool ok() const { return error.ok(); }
};

/// `hooks` are the runner's part of the commit loop (engine/commit_loop.h): what to do once a
/// cursor is recorded, and how the source is acknowledged.
ConsumerResult RunConsumer(MessageSource& source, Destination& destination, Backend& backend,
                           const PipelineSettings& settings, const JobPlan& plan,
                           const std::atomic<bool>& stop_requested,
                           TransformChain* transforms = nullptr, CommitLoop::Hooks hooks = {});

/// Marks the job succeeded after a successful Finalize(), persisting the incremental state.
Status CompleteJob(Backend& backend, Destination& destination, const JobPlan& plan,
                   const std::optional<Value>& last_state);

}  // namespace bizon
