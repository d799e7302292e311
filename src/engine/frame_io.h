// Length-prefixed frames over a pipe or socket: an 8-byte host-order size, then the bytes.
//
// Used between the processes of one run on one host (forked producer, transform workers), so the
// size needs no byte-order conversion.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "bizon/status.h"

namespace bizon {

/// Writes one frame, retrying short writes and EINTR. Fails when the reader has gone.
Status WriteFrame(int fd, std::string_view bytes);

/// Reads one frame. nullopt on a clean end of stream before the frame started; an error when
/// the stream ends inside a frame or the read fails.
Result<std::optional<std::string>> ReadFrame(int fd);

/// Waits up to `timeout_ms` for `fd` to become readable (or hit end of stream). -1 waits for ever.
bool WaitReadable(int fd, int timeout_ms);

}  // namespace bizon
