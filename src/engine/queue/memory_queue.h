// The in-process queue (`python_queue` in configs): bounded by records, bytes and iterations.
//
// Thread-safe: one producer thread pushes, one consumer thread pops. Push blocks while the queue
// is full; Close() wakes both sides, so a failure on one side stops the other promptly.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include "engine/queue/channel.h"
#include "engine/queue/queue_message.h"

namespace bizon {

/// Each 0: unbounded. A pipeline's come from its config (ReadQueueLimits, queue_options.h).
struct QueueLimits {
  int64_t max_records = 0;     // max_nb_messages: records, as the original counts them.
  int64_t max_bytes = 0;       // max_bytes.
  int64_t max_iterations = 0;  // queue.max_size.
};

class MemoryQueue final : public MessageSink, public MessageSource {
 public:
  explicit MemoryQueue(QueueLimits limits) : limits_(limits) {}

  /// Waits for room, then enqueues. Fails (class `killed`) when the queue was closed. A message
  /// is always accepted into an empty queue, so one iteration larger than the limits still moves.
  Status Push(QueueMessage message) override;

  /// Waits up to `timeout` for a message; nullopt on timeout or when closed and drained.
  std::optional<QueueMessage> Pop(std::chrono::milliseconds timeout);
  /// Pop() as a MessageSource: this queue never breaks.
  Result<std::optional<QueueMessage>> Next(std::chrono::milliseconds timeout) override {
    return Pop(timeout);
  }

  /// Stops both sides: pending and future pushes return false, pops return what is left.
  void Close();
  bool closed() const;

  /// Times the producer waited because the queue was full (for logs).
  int64_t full_waits() const;

 private:
  bool HasRoom(const QueueMessage& message) const;

  QueueLimits limits_;
  mutable std::mutex mutex_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<QueueMessage> messages_;
  int64_t queued_records_ = 0;
  int64_t queued_bytes_ = 0;
  int64_t full_waits_ = 0;
  bool closed_ = false;
};

}  // namespace bizon
