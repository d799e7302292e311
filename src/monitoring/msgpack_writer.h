// MessagePack (msgpack.org spec), writing only: each value in its shortest form, as the
// reference packers do (positive fixint, uint 8/16/32/64, negative fixint and int 8..64, fixstr
// and str 8/16/32, bin 8/16/32, fixarray/array 16/32, fixmap/map 16/32, float 64). The caller
// writes a map's or array's header with its count, then that many entries (keys and values).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace bizon {

class MsgpackWriter {
 public:
  void Map(size_t entries);
  void Array(size_t items);
  /// UTF-8 text (the str family).
  void String(std::string_view text);
  /// Raw bytes (the bin family).
  void Binary(std::string_view bytes);
  void Unsigned(uint64_t value);
  void Signed(int64_t value);
  void Double(double value);

  const std::string& bytes() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  /// A header: the fix form when `size` fits under `fix_limit`, else the 8/16/32-bit form
  /// (`codes` holds their type bytes; 0 for a width the family lacks).
  void Header(size_t size, uint8_t fix_base, size_t fix_limit, const uint8_t (&codes)[3]);
  void BigEndian(uint64_t value, int bytes);
  /// A type byte, then `value` in its last `bytes` bytes, big-endian.
  void Typed(uint8_t code, uint64_t value, int bytes);

  std::string out_;
};

}  // namespace bizon
