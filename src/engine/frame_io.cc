#include "engine/frame_io.h"

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace bizon {
namespace {

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
  uint64_t size = 0;
  BIZON_ASSIGN_OR_RETURN(size_t got, ReadAll(fd, reinterpret_cast<char*>(&size), sizeof(size)));
  if (got == 0) return std::optional<std::string>();
  std::string bytes(got == sizeof(size) ? size : 0, '\0');
  if (got == sizeof(size)) {
    BIZON_ASSIGN_OR_RETURN(got, ReadAll(fd, bytes.data(), bytes.size()));
    if (got == bytes.size()) return std::optional<std::string>(std::move(bytes));
  }
  return Fail(Status(StatusCode::kAborted, "the peer process stopped in the middle of a message"));
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
