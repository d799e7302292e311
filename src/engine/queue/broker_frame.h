// What a network queue (kafka, rabbitmq) carries: encoded queue messages cut into frames that fit
// the broker's message size limit, each tagged with the job and iteration it belongs to.
//
// The tag lets a consumer decide from the header alone whether a frame is for it (same job id),
// new (the next iteration) or a redelivered duplicate, before assembling or decoding anything.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/status.h"
#include "engine/queue/queue_message.h"

namespace bizon {

struct FrameHeader {
  std::string job_id;
  QueueMessage::Kind kind = QueueMessage::Kind::kData;
  int64_t iteration = 0;
  uint32_t part = 0;   // 0-based index of this frame in its message.
  uint32_t parts = 1;  // How many frames the message was cut into.
};

struct ParsedFrame {
  FrameHeader header;
  std::string_view body;  // Points into the bytes given to ParseFrame.
};

/// Cuts `encoded` (EncodeMessage output) into frames of at most `max_frame_bytes` each, header
/// included. `max_frame_bytes` must leave room for the header (a few dozen bytes plus the id).
std::vector<std::string> SplitIntoFrames(const FrameHeader& header, std::string_view encoded,
                                         size_t max_frame_bytes);

/// Reads a frame's header; an error for bytes that are not a bizon frame.
Result<ParsedFrame> ParseFrame(std::string_view bytes);

/// Joins the frames of one message. Frames must come in order; a frame that does not continue
/// the message being assembled starts over (a redelivery restarts a message from its first part).
class FrameAssembler {
 public:
  /// The whole encoded message once its last frame arrived, nullopt before.
  std::optional<std::string> Add(const ParsedFrame& frame);
  void Reset();

 private:
  std::optional<FrameHeader> current_;
  std::string bytes_;
};

}  // namespace bizon
