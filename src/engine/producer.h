// The producer: pulls iterations from the source and pushes them to a MessageSink.
//
// Runs on its own thread (thread runner) or process (process runner), with its own Backend
// connection. It always ends by pushing a termination: normal when the source is exhausted or
// max_iterations is reached, an error termination carrying the failure otherwise, so the
// consumer never publishes a partial run and never waits for ever.
#pragma once

#include <atomic>

#include "bizon/backend.h"
#include "bizon/source.h"
#include "engine/acknowledgements.h"
#include "engine/job.h"
#include "engine/queue/channel.h"
#include "engine/settings.h"

namespace bizon {

struct ProducerResult {
  /// Ok, or why the producer stopped; its failure class is the side's result.
  Status error;

  bool ok() const { return error.ok(); }
};

/// `backend` receives the source cursors (progress notes that recovery never reads); null when
/// the producer cannot reach the run's backend (a forked producer and an in-memory backend).
/// `acks`, when given, carries what the consumer recorded: the producer hands the latest to
/// Source::Commit() before each fetch.
ProducerResult RunProducer(Source& source, Backend* backend, const PipelineSettings& settings,
                           const JobPlan& plan, MessageSink& sink,
                           const std::atomic<bool>& stop_requested,
                           Acknowledgements* acks = nullptr);

}  // namespace bizon
