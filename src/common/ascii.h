#pragma once

// Case and whitespace helpers for protocol text (HTTP header names, methods, Link parameters):
// ASCII only, never locale-dependent.

#include <string>
#include <string_view>

namespace bizon {

/// `text` with A-Z turned into a-z; every other byte as it is.
std::string AsciiLower(std::string_view text);
/// Whether `a` and `b` are equal but for the case of their ASCII letters.
bool EqualsIgnoreAsciiCase(std::string_view a, std::string_view b);
/// `text` without leading and trailing ASCII whitespace (space, \t, \n, \v, \f, \r).
std::string_view TrimAsciiSpace(std::string_view text);

}  // namespace bizon
