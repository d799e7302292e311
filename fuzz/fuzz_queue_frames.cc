// Fuzz target: the bytes a consumer reads from its producer. The input is read as a stream of
// length-prefixed frames (engine/frame_io.h, the process runner's pipe); each frame is decoded
// as a queue message (engine/queue/queue_message.h) and also parsed as a broker frame and fed to
// a FrameAssembler (engine/queue/broker_frame.h, what kafka and rabbitmq carry). The whole input
// is decoded as a queue message as well. A message that decodes must encode back to bytes that
// decode to the same encoding.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/frame_io.h"
#include "engine/queue/broker_frame.h"
#include "engine/queue/queue_message.h"

namespace {

constexpr size_t kSmallFrameBytes = 64;

void CheckMessage(std::string_view bytes) {
  auto message = bizon::DecodeMessage(bytes);
  if (!message) return;
  std::string encoded = bizon::EncodeMessage(*message);
  auto again = bizon::DecodeMessage(encoded);
  if (!again || bizon::EncodeMessage(*again) != encoded) __builtin_trap();
  // Cut into small broker frames, the message must come back whole.
  bizon::FrameHeader header{
      .job_id = "fuzz-job", .kind = message->kind, .iteration = message->iteration};
  bizon::FrameAssembler assembler;
  std::optional<std::string> joined;
  for (const std::string& frame : bizon::SplitIntoFrames(header, encoded, kSmallFrameBytes)) {
    auto parsed = bizon::ParseFrame(frame);
    if (!parsed) __builtin_trap();
    joined = assembler.Add(*parsed);
  }
  if (joined != encoded) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckMessage(input);

  // A memory file stands in for the pipe: it holds any input size without a reader thread.
  int fd = memfd_create("fuzz_queue_frames", 0);
  if (fd < 0) return 0;
  if (size > 0 && write(fd, data, size) != static_cast<ssize_t>(size)) {
    close(fd);
    return 0;
  }
  lseek(fd, 0, SEEK_SET);
  bizon::FrameAssembler assembler;
  while (true) {
    auto frame = bizon::ReadFrame(fd);
    if (!frame || !frame->has_value()) break;
    const std::string& bytes = **frame;
    CheckMessage(bytes);
    auto parsed = bizon::ParseFrame(bytes);
    if (!parsed) continue;
    if (std::optional<std::string> whole = assembler.Add(*parsed)) CheckMessage(*whole);
  }
  close(fd);
  return 0;
}
