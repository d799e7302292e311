// The two ends of whatever carries iterations from the producer to the consumer: the in-process
// queue, the pipe to a forked producer, a broker's topic or queue, the transform workers.
#pragma once

#include <chrono>
#include <optional>

#include "bizon/status.h"
#include "engine/queue/queue_message.h"

namespace bizon {

class MessageSink {
 public:
  virtual ~MessageSink() = default;
  /// Blocks while the channel is full. Fails with class `killed` when the consumer side is gone
  /// (it stopped on purpose or failed), or with the channel's own error (class `queue`).
  virtual Status Push(QueueMessage message) = 0;
};

class MessageSource {
 public:
  virtual ~MessageSource() = default;
  /// Waits up to `timeout`; nullopt on timeout. An error means the channel broke (the producer
  /// process died, a queue server went away).
  virtual Result<std::optional<QueueMessage>> Next(std::chrono::milliseconds timeout) = 0;
};

}  // namespace bizon
