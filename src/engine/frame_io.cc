#include "engine/frame_io.h"

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace bizon {
namespace {

// What a frame's first read allocates at most; each later read doubles what arrived so far.
constexpr uint64_t kFirstReadBytes = uint64_t{64} << 10;

Status WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return Status(StatusCode::kUnavailable,
                    fmt::format("write to the peer process failed: {}", std::strerror(errno)));
    }
    bytes.remove_prefix(static_cast<size_t>(written));
  }
  return Status::Ok();
}

// Reads exactly `size` bytes; returns how many arrived before the end of stream.
Result<size_t> ReadAll(int fd, char* out, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t got = ::read(fd, out + done, size - done);
    if (got < 0) {
      if (errno == EINTR) continue;
      return Fail(
          Status(StatusCode::kUnavailable,
                 fmt::format("read from the peer process failed: {}", std::strerror(errno))));
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

}  // namespace

Status WriteFrame(int fd, std::string_view bytes) {
  uint64_t size = bytes.size();
  BIZON_RETURN_IF_ERROR(
      WriteAll(fd, std::string_view(reinterpret_cast<const char*>(&size), sizeof(size))));
  return WriteAll(fd, bytes);
}

Result<std::optional<std::string>> ReadFrame(int fd) {
  auto cut_short = [] {
    return Fail(
        Status(StatusCode::kAborted, "the peer process stopped in the middle of a message"));
  };
  uint64_t size = 0;
  BIZON_ASSIGN_OR_RETURN(size_t got, ReadAll(fd, reinterpret_cast<char*>(&size), sizeof(size)));
  if (got == 0) return std::optional<std::string>();
  if (got != sizeof(size)) return cut_short();
  // The size is the peer's word: the buffer grows with the bytes that actually arrive (doubling
  // from kFirstReadBytes), so a corrupt size or a stream cut short is the error above, not an
  // allocation of whatever the size says (found by fuzz/fuzz_queue_frames).
  std::string bytes;
  while (bytes.size() < size) {
    size_t start = bytes.size();
    auto chunk = static_cast<size_t>(
        std::min<uint64_t>(size - start, std::max<uint64_t>(start, kFirstReadBytes)));
    bytes.resize(start + chunk);
    BIZON_ASSIGN_OR_RETURN(got, ReadAll(fd, bytes.data() + start, chunk));
    if (got != chunk) return cut_short();
  }
  return std::optional<std::string>(std::move(bytes));
}

bool WaitReadable(int fd, int timeout_ms) {
  pollfd descriptor{fd, POLLIN, 0};
  while (true) {
    int ready = ::poll(&descriptor, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    return ready > 0;
  }
}

}  // namespace bizon
