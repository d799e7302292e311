// What the backends tell the engine about rows the original bizon wrote (README.md beside this
// file, "State shared with the original").
#pragma once

#include <string_view>

namespace bizon {

/// The destination_state a destination cursor reads back with when the original wrote it: it
/// records none, so what its destination holds beyond the cursor is unknown. Never stored.
inline constexpr std::string_view kOriginalCursorState = R"({"written_by":"original bizon"})";

}  // namespace bizon
