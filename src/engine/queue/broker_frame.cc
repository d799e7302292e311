#include "engine/queue/broker_frame.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace bizon {
namespace {

constexpr std::string_view kFrameMagic = "BZF1";

template <typename T>
void Put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

template <typename T>
bool Take(std::string_view& in, T& value) {
  if (in.size() < sizeof(T)) return false;
  std::memcpy(&value, &in.front(), sizeof(T));  // Its size was checked above.
  in.remove_prefix(sizeof(T));
  return true;
}

std::string EncodeHeader(const FrameHeader& header) {
  std::string out(kFrameMagic);
  Put(out, static_cast<uint16_t>(header.job_id.size()));
  out += header.job_id;
  Put(out, static_cast<uint8_t>(header.kind));
  Put(out, header.iteration);
  Put(out, header.part);
  Put(out, header.parts);
  return out;
}

bool SameMessage(const FrameHeader& a, const FrameHeader& b) {
  return a.job_id == b.job_id && a.kind == b.kind && a.iteration == b.iteration &&
         a.parts == b.parts;
}

}  // namespace

std::vector<std::string> SplitIntoFrames(const FrameHeader& header, std::string_view encoded,
                                         size_t max_frame_bytes) {
  size_t header_bytes = EncodeHeader(header).size();
  size_t room = max_frame_bytes > header_bytes + 1 ? max_frame_bytes - header_bytes : 1;
  auto parts = static_cast<uint32_t>(std::max<size_t>(1, (encoded.size() + room - 1) / room));
  std::vector<std::string> frames;
  frames.reserve(parts);
  FrameHeader each = header;
  each.parts = parts;
  for (uint32_t part = 0; part < parts; ++part) {
    each.part = part;
    std::string frame = EncodeHeader(each);
    frame.append(encoded.substr(std::min(encoded.size(), part * room), room));
    frames.push_back(std::move(frame));
  }
  return frames;
}

Result<ParsedFrame> ParseFrame(std::string_view bytes) {
  ParsedFrame frame;
  std::string_view rest = bytes;
  uint16_t id_size = 0;
  uint8_t kind = 0;
  bool valid = rest.substr(0, kFrameMagic.size()) == kFrameMagic;
  if (valid) rest.remove_prefix(kFrameMagic.size());
  valid = valid && Take(rest, id_size) && rest.size() >= id_size;
  if (valid) {
    frame.header.job_id = std::string(rest.substr(0, id_size));
    rest.remove_prefix(id_size);
  }
  valid = valid && Take(rest, kind) && kind <= 2 && Take(rest, frame.header.iteration) &&
          Take(rest, frame.header.part) && Take(rest, frame.header.parts) &&
          frame.header.parts > 0 && frame.header.part < frame.header.parts;
  if (!valid) {
    return Fail(Status(StatusCode::kDataLoss,
                       fmt::format("a queue message of {} bytes is not a bizon frame (another "
                                   "producer writes to this topic or queue?)",
                                   bytes.size()),
                       FailureClass::kQueue));
  }
  frame.header.kind = static_cast<QueueMessage::Kind>(kind);
  frame.body = rest;
  return frame;
}

std::optional<std::string> FrameAssembler::Add(const ParsedFrame& frame) {
  const FrameHeader& header = frame.header;
  if (header.parts == 1) {
    Reset();
    return std::string(frame.body);
  }
  bool continues = current_ && SameMessage(*current_, header) && current_->part + 1 == header.part;
  if (!continues) {
    Reset();
    if (header.part != 0) return std::nullopt;  // A tail without its head: wait for the head.
  }
  current_ = header;
  bytes_.append(frame.body);
  if (header.part + 1 < header.parts) return std::nullopt;
  std::string whole = std::move(bytes_);
  Reset();
  return whole;
}

void FrameAssembler::Reset() {
  current_.reset();
  bytes_.clear();
}

}  // namespace bizon
