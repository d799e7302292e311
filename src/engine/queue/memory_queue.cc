#include "engine/queue/memory_queue.h"

namespace bizon {

bool MemoryQueue::HasRoom(const QueueMessage& message) const {
  if (messages_.empty()) return true;
  int64_t records = static_cast<int64_t>(message.records.size());
  int64_t bytes = static_cast<int64_t>(message.ByteSize());
  if (limits_.max_records > 0 && queued_records_ + records > limits_.max_records) return false;
  if (limits_.max_bytes > 0 && queued_bytes_ + bytes > limits_.max_bytes) return false;
  if (limits_.max_iterations > 0 &&
      static_cast<int64_t>(messages_.size()) >= limits_.max_iterations) {
    return false;
  }
  return true;
}

Status MemoryQueue::Push(QueueMessage message) {
  std::unique_lock lock(mutex_);
  if (!closed_ && !HasRoom(message)) {
    ++full_waits_;
    not_full_.wait(lock, [&] { return closed_ || HasRoom(message); });
  }
  if (closed_) return CancelledError("the consumer stopped", FailureClass::kKilled);
  queued_records_ += static_cast<int64_t>(message.records.size());
  queued_bytes_ += static_cast<int64_t>(message.ByteSize());
  messages_.push_back(std::move(message));
  not_empty_.notify_one();
  return Status::Ok();
}

std::optional<QueueMessage> MemoryQueue::Pop(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!not_empty_.wait_for(lock, timeout, [&] { return closed_ || !messages_.empty(); })) {
    return std::nullopt;
  }
  if (messages_.empty()) return std::nullopt;
  QueueMessage message = std::move(messages_.front());
  messages_.pop_front();
  queued_records_ -= static_cast<int64_t>(message.records.size());
  queued_bytes_ -= static_cast<int64_t>(message.ByteSize());
  not_full_.notify_one();
  return message;
}

void MemoryQueue::Close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  not_full_.notify_all();
  not_empty_.notify_all();
}

bool MemoryQueue::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

int64_t MemoryQueue::full_waits() const {
  std::lock_guard lock(mutex_);
  return full_waits_;
}

}  // namespace bizon
