// The consumer: takes iterations from a MessageSource, buffers them, writes them to the
// destination, records a destination cursor after each durable write, and on the normal
// termination publishes (Finalize) before marking the job succeeded.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>

#include "bizon/backend.h"
#include "bizon/destination.h"
#include "engine/acknowledgements.h"
#include "engine/job.h"
#include "engine/pipeline.h"
#include "engine/queue/queue_message.h"
#include "engine/settings.h"

namespace bizon {

class TransformChain;

class MessageSource {
 public:
  virtual ~MessageSource() = default;
  /// Waits up to `timeout`; nullopt on timeout. An error means the channel broke (the producer
  /// process died, a queue server went away).
  virtual Result<std::optional<QueueMessage>> Next(std::chrono::milliseconds timeout) = 0;
};

struct ConsumerResult {
  ReturnStatus status = ReturnStatus::kSuccess;
  /// For a failed producer, the status it reported (the consumer mirrors it).
  std::optional<ReturnStatus> producer_status;
  Status error;
};

ConsumerResult RunConsumer(MessageSource& source, Destination& destination, Backend& backend,
                           const PipelineSettings& settings, const JobPlan& plan,
                           const std::atomic<bool>& stop_requested,
                           TransformChain* transforms = nullptr, Acknowledgements* acks = nullptr);

/// Parses a PipelineReturnStatus value ("source_error").
std::optional<ReturnStatus> ParseReturnStatus(std::string_view text);

/// Marks the job succeeded after a successful Finalize(), persisting the incremental state.
Status CompleteJob(Backend& backend, Destination& destination, const JobPlan& plan,
                   const std::optional<Value>& last_state);

}  // namespace bizon
