#include "monitoring/msgpack_writer.h"

#include <bit>

namespace bizon {

void MsgpackWriter::BigEndian(uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void MsgpackWriter::Header(size_t size, uint8_t fix_base, size_t fix_limit,
                           const uint8_t (&codes)[3]) {
  if (size < fix_limit) {
    out_.push_back(static_cast<char>(fix_base | size));
  } else if (codes[0] != 0 && size <= 0xff) {
    out_.push_back(static_cast<char>(codes[0]));
    BigEndian(size, 1);
  } else if (size <= 0xffff) {
    out_.push_back(static_cast<char>(codes[1]));
    BigEndian(size, 2);
  } else {
    out_.push_back(static_cast<char>(codes[2]));
    BigEndian(size, 4);
  }
}

void MsgpackWriter::Map(size_t entries) { Header(entries, 0x80, 16, {0, 0xde, 0xdf}); }

void MsgpackWriter::Array(size_t items) { Header(items, 0x90, 16, {0, 0xdc, 0xdd}); }

void MsgpackWriter::String(std::string_view text) {
  Header(text.size(), 0xa0, 32, {0xd9, 0xda, 0xdb});
  out_ += text;
}

void MsgpackWriter::Binary(std::string_view bytes) {
  Header(bytes.size(), 0, 0, {0xc4, 0xc5, 0xc6});
  out_ += bytes;
}

void MsgpackWriter::Typed(uint8_t code, uint64_t value, int bytes) {
  out_.push_back(static_cast<char>(code));
  BigEndian(value, bytes);
}

void MsgpackWriter::Unsigned(uint64_t value) {
  if (value < 0x80) {
    out_.push_back(static_cast<char>(value));  // Positive fixint.
    return;
  }
  // uint 8, 16, 32, 64: 0xcc to 0xcf.
  int width = value <= 0xff ? 0 : value <= 0xffff ? 1 : value <= 0xffffffff ? 2 : 3;
  Typed(static_cast<uint8_t>(0xcc + width), value, 1 << width);
}

void MsgpackWriter::Signed(int64_t value) {
  if (value >= 0) {
    Unsigned(static_cast<uint64_t>(value));
    return;
  }
  auto bits = static_cast<uint64_t>(value);
  if (value >= -32) {
    out_.push_back(static_cast<char>(bits & 0xff));  // Negative fixint: 111xxxxx.
    return;
  }
  // int 8, 16, 32, 64: 0xd0 to 0xd3.
  int width = value >= -128 ? 0 : value >= -32768 ? 1 : value >= -2147483648LL ? 2 : 3;
  Typed(static_cast<uint8_t>(0xd0 + width), bits, 1 << width);
}

void MsgpackWriter::Double(double value) { Typed(0xcb, std::bit_cast<uint64_t>(value), 8); }

}  // namespace bizon
