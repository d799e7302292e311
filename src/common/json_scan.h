// Byte scans on the per-record path of the JSON checkers: 64 bytes at a time with AVX-512BW where
// the CPU has it (chosen once, at run time), eight at a time otherwise.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace bizon::json_scan {

/// The index of the first byte of `text` at or after `from` that a JSON string cannot hold as
/// is ('"', '\\' or below U+0020), or text.size().
size_t FindSpecial(std::string_view text, size_t from);

/// The index of the first byte of `text` at or after `from` that is not ASCII, or text.size().
size_t FindNonAscii(std::string_view text, size_t from);

/// "avx512bw" or "swar": the loop the two scans use on this CPU.
std::string_view Scanner();

/// The scanners this CPU can run ("swar" always), and the two scans with a given one: for tests
/// that check each against a byte-by-byte loop.
std::vector<std::string_view> Scanners();
size_t FindSpecialWith(std::string_view scanner, std::string_view text, size_t from);
size_t FindNonAsciiWith(std::string_view scanner, std::string_view text, size_t from);

}  // namespace bizon::json_scan
