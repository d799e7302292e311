#include "engine/queue/broker_queue.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

namespace bizon {
namespace {

// A termination frame waits for SettleAll(): a consumer that dies while publishing must find
// the termination again on restart.
constexpr int64_t kUntilRunEnds = std::numeric_limits<int64_t>::max();

Status GapError(const FrameHeader& header, int64_t expected) {
  return Status(StatusCode::kDataLoss,
                fmt::format("the queue skipped iterations of job {}: expected iteration {} but "
                            "received {}; messages were removed from the queue (purged or "
                            "expired); restart the producer to publish them again",
                            header.job_id, expected, header.iteration),
                FailureClass::kQueue);
}

}  // namespace

void PendingAcks::Add(const FramePosition& position, std::optional<int64_t> iteration) {
  lanes_[position.lane].push_back({position.offset, iteration, !iteration.has_value()});
}

std::vector<FramePosition> PendingAcks::Settle(int64_t through) {
  for (auto& [lane, entries] : lanes_) {
    for (Entry& entry : entries) {
      if (entry.iteration && *entry.iteration <= through) entry.settled = true;
    }
  }
  return Drain();
}

std::vector<FramePosition> PendingAcks::SettleAll() {
  for (auto& [lane, entries] : lanes_) {
    for (Entry& entry : entries) entry.settled = true;
  }
  return Drain();
}

std::vector<FramePosition> PendingAcks::Drain() {
  std::vector<FramePosition> ready;
  for (auto& [lane, entries] : lanes_) {
    std::optional<int64_t> last;
    while (!entries.empty() && entries.front().settled) {
      last = entries.front().offset;
      entries.pop_front();
    }
    if (last) ready.push_back({lane, *last});
  }
  return ready;
}

size_t PendingAcks::size() const {
  size_t total = 0;
  for (const auto& [lane, entries] : lanes_) total += entries.size();
  return total;
}

Status BrokerSink::Push(QueueMessage message) {
  FrameHeader header{.job_id = job_id_, .kind = message.kind, .iteration = message.iteration};
  std::vector<std::string> frames =
      SplitIntoFrames(header, EncodeMessage(message), sender_->max_frame_bytes());
  Status sent = sender_->Send(job_id_, frames);
  if (!sent.ok()) {
    spdlog::error("Queue: cannot publish iteration {}: {}", message.iteration, sent.message());
    return sent.WithFailureClass(FailureClass::kQueue);
  }
  return Status::Ok();
}

Result<std::optional<QueueMessage>> BrokerSource::Next(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (remaining.count() < 0) return std::optional<QueueMessage>();
    BIZON_ASSIGN_OR_RETURN(std::optional<ReceivedFrame> received, receiver_->Receive(remaining));
    if (receiver_->session() != session_) {
      // Reconnected: unacknowledged frames come again under new positions.
      session_ = receiver_->session();
      pending_.Clear();
      assembler_.Reset();
    }
    if (!received) return std::optional<QueueMessage>();
    BIZON_ASSIGN_OR_RETURN(ParsedFrame frame, ParseFrame(received->bytes));
    const FrameHeader& header = frame.header;
    if (header.job_id != job_id_) {
      if (skipped_foreign_++ == 0) {
        spdlog::info("Queue: skipping messages of job {} (this run is job {})", header.job_id,
                     job_id_);
      }
      pending_.Add(received->position, std::nullopt);
      continue;
    }
    bool data = header.kind == QueueMessage::Kind::kData;
    if (header.kind != QueueMessage::Kind::kErrorTermination) {
      if (header.iteration < next_iteration_) {
        // Already delivered: a redelivery. The first copy may still sit unwritten in the
        // consumer's buffer, so this one too waits for the cursor that covers its iteration.
        if (header.part == 0) ++skipped_duplicates_;
        bool written = data && header.iteration <= settled_through_;
        pending_.Add(received->position,
                     written ? std::nullopt : std::optional<int64_t>(header.iteration));
        continue;
      }
      if (header.iteration > next_iteration_) return Fail(GapError(header, next_iteration_));
    }
    pending_.Add(received->position, data ? header.iteration : kUntilRunEnds);
    std::optional<std::string> whole = assembler_.Add(frame);
    if (!whole) continue;
    BIZON_ASSIGN_OR_RETURN(QueueMessage message, DecodeMessage(*whole));
    if (data) ++next_iteration_;
    return std::optional<QueueMessage>(std::move(message));
  }
}

Status BrokerSource::Acknowledge(const std::vector<FramePosition>& positions) {
  for (const FramePosition& position : positions) {
    BIZON_RETURN_IF_ERROR(receiver_->Acknowledge(position));
  }
  return Status::Ok();
}

Status BrokerSource::Settle(int64_t iteration) {
  settled_through_ = std::max(settled_through_, iteration);
  return Acknowledge(pending_.Settle(iteration));
}

Status BrokerSource::SettleAll() {
  if (skipped_duplicates_ > 0) {
    spdlog::info("Queue: skipped {} redelivered iterations already delivered", skipped_duplicates_);
  }
  return Acknowledge(pending_.SettleAll());
}

}  // namespace bizon
