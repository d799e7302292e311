#pragma once

// UTF-8 validity and repair, shared by the sources that decode bytes from outside (Kafka messages,
// CSV exports).

#include <string>
#include <string_view>

namespace bizon {

/// Whether `text` is valid UTF-8 (no overlong forms, no encoded surrogates); ASCII is checked
/// eight bytes at a time.
bool IsValidUtf8(std::string_view text);
/// `text` with every invalid UTF-8 sequence replaced by U+FFFD (Python's errors="replace").
std::string RepairUtf8(std::string_view text);

}  // namespace bizon
