// Parallel transforms for the process runner: worker processes, each with its own interpreter.
//
// The consumer reads batches through TransformWorkers, a MessageSource that wraps the producer's
// channel. A feeder thread takes each data batch from upstream and hands it to the next worker in
// turn (round robin); the consumer side takes the results back in the order the batches arrived.
// So batches, and the records inside them, reach the destination in exactly the source's order:
// parallelism never reorders anything. Termination messages pass through in their place, after
// every batch before them.
//
// Workers are this same binary re-executed (`bizon __transform-worker`): a fresh process with a
// fresh Python, no inherited threads, locks or file descriptors. At most two batches per worker
// are in flight, which bounds memory. A worker that reports a transform error, or dies, makes
// Next() fail with failure class transform; the consumer then stops without publishing.
#pragma once

#include <chrono>
#include <memory>

#include "bizon/status.h"
#include "bizon/value.h"
#include "engine/queue/channel.h"

namespace bizon {

struct TransformWorkerOptions {
  int workers = 2;
  /// Per-record limit inside the workers (TransformOptions::record_timeout); zero: none.
  std::chrono::milliseconds record_timeout{0};
};

class TransformWorkers final : public MessageSource {
 public:
  /// Starts the workers and the feeder. `transforms` is the config's list; `upstream` must
  /// outlive the returned object.
  static Result<std::unique_ptr<TransformWorkers>> Start(const Value& transforms,
                                                         TransformWorkerOptions options,
                                                         MessageSource& upstream);
  ~TransformWorkers() override;
  TransformWorkers(const TransformWorkers&) = delete;
  TransformWorkers& operator=(const TransformWorkers&) = delete;

  Result<std::optional<QueueMessage>> Next(std::chrono::milliseconds timeout) override;

 private:
  struct State;
  explicit TransformWorkers(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// The worker process's main loop (`bizon __transform-worker`): reads its configuration and then
/// batches on stdin, writes results on stdout. Returns the process exit code.
int RunTransformWorker();

}  // namespace bizon
