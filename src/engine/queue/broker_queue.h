// The broker-neutral half of the network queues: a MessageSink that publishes a message and
// returns once the broker holds it durably, and a MessageSource that filters, deduplicates and
// acknowledges. The kafka and rabbitmq files only move frames (BrokerSender, BrokerReceiver).
//
// Delivery contract (at-least-once on the wire, exactly-once into the destination):
// - the sink cuts each message into frames tagged with the job id and iteration;
// - the source hands the consumer each iteration of its job once, in order: frames of another
//   job, and iterations it already delivered (redeliveries after a reconnect or restart), are
//   skipped; a gap (an iteration missing from the queue) is a queue error;
// - frames are acknowledged only through Settle(), which the consumer side calls after it
//   recorded the destination cursor covering them, so a crash before that redelivers them.
//
// Threading: a BrokerSink is used by one producer thread, a BrokerSource by one consumer thread
// (Settle() included); neither is shared.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/queue/broker_frame.h"
#include "engine/queue/channel.h"

namespace bizon {

/// Where a frame sits in the broker: a Kafka partition and offset, or an AMQP channel's delivery
/// tag (lane 0). Acknowledging a position acknowledges every earlier one of its lane.
struct FramePosition {
  int32_t lane = 0;
  int64_t offset = 0;
};

class BrokerSender {
 public:
  virtual ~BrokerSender() = default;
  /// Publishes the frames in order and returns once the broker acknowledged all of them
  /// (persisted), or fails. `key` keeps one job's frames in order (the Kafka partition key).
  virtual Status Send(std::string_view key, const std::vector<std::string>& frames) = 0;
  /// The largest frame the broker accepts, header included.
  virtual size_t max_frame_bytes() const = 0;
};

struct ReceivedFrame {
  std::string bytes;
  FramePosition position;
};

class BrokerReceiver {
 public:
  virtual ~BrokerReceiver() = default;
  /// Waits up to `timeout` for the next frame; nullopt on timeout. Reconnects on its own after a
  /// connection loss; an error only when the broker cannot be used (refused credentials, ...).
  virtual Result<std::optional<ReceivedFrame>> Receive(std::chrono::milliseconds timeout) = 0;
  /// Acknowledges `position` and everything before it in its lane.
  virtual Status Acknowledge(const FramePosition& position) = 0;
  /// Changes after each reconnect: positions handed out before it are void (their frames come
  /// again), so the caller drops what it had not acknowledged yet.
  virtual uint64_t session() const = 0;
};

/// Frames received but not acknowledged, per lane in arrival order. A frame becomes settled
/// when its iteration is covered by a recorded cursor (or at once when it needs no write);
/// each lane acknowledges up to its first unsettled frame, never past it.
class PendingAcks {
 public:
  /// `iteration`: the data iteration the frame carries; nullopt for a frame settled at once.
  void Add(const FramePosition& position, std::optional<int64_t> iteration);
  /// Settles frames of iterations <= `through` and returns, per lane that advanced, the last
  /// position that may now be acknowledged.
  std::vector<FramePosition> Settle(int64_t through);
  std::vector<FramePosition> SettleAll();
  void Clear() { lanes_.clear(); }
  size_t size() const;

 private:
  struct Entry {
    int64_t offset;
    std::optional<int64_t> iteration;
    bool settled;
  };
  std::vector<FramePosition> Drain();
  std::map<int32_t, std::deque<Entry>> lanes_;
};

class BrokerSink final : public MessageSink {
 public:
  BrokerSink(std::unique_ptr<BrokerSender> sender, std::string job_id)
      : sender_(std::move(sender)), job_id_(std::move(job_id)) {}
  Status Push(QueueMessage message) override;

 private:
  std::unique_ptr<BrokerSender> sender_;
  std::string job_id_;
};

class BrokerSource final : public MessageSource {
 public:
  /// `next_iteration`: the first iteration the consumer still needs (the plan's start).
  BrokerSource(std::unique_ptr<BrokerReceiver> receiver, std::string job_id, int64_t next_iteration)
      : receiver_(std::move(receiver)),
        job_id_(std::move(job_id)),
        next_iteration_(next_iteration) {}

  Result<std::optional<QueueMessage>> Next(std::chrono::milliseconds timeout) override;

  /// The destination cursor through `iteration` is recorded: acknowledge what it covers.
  Status Settle(int64_t iteration);
  /// The run is over (published, or failed upstream): acknowledge everything delivered.
  Status SettleAll();

  int64_t skipped_foreign() const { return skipped_foreign_; }
  int64_t skipped_duplicates() const { return skipped_duplicates_; }

 private:
  Status Acknowledge(const std::vector<FramePosition>& positions);

  std::unique_ptr<BrokerReceiver> receiver_;
  std::string job_id_;
  int64_t next_iteration_;
  uint64_t session_ = 0;
  FrameAssembler assembler_;
  PendingAcks pending_;
  int64_t settled_through_ = -1;  // The last iteration a recorded cursor covers.
  int64_t skipped_foreign_ = 0;
  int64_t skipped_duplicates_ = 0;
};

}  // namespace bizon
