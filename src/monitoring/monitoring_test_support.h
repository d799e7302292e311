// Hex text to bytes and back, for the tests of the monitoring wire formats (DDSketch protobufs,
// MessagePack, gzip), whose expected bytes are written as hex.
#pragma once

#include <string>
#include <string_view>

namespace bizon {

/// "0a12ff" -> the bytes 0x0a 0x12 0xff.
inline std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

/// The bytes as lowercase hex.
inline std::string ToHex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (char byte : bytes) {
    out.push_back(kDigits[(static_cast<unsigned char>(byte) >> 4) & 0xf]);
    out.push_back(kDigits[static_cast<unsigned char>(byte) & 0xf]);
  }
  return out;
}

}  // namespace bizon
