#include "monitoring/msgpack_writer.h"

#include <gtest/gtest.h>

#include <string>

#include "monitoring/monitoring_test_support.h"

namespace bizon {
namespace {

// Expected bytes: the msgpack spec's shortest forms, as ddtrace's packb writes them.

TEST(MsgpackWriterTest, MapOfEveryKindAsTheReferencePacker) {
  MsgpackWriter out;
  out.Map(5);
  out.String("A");
  out.Unsigned(1);
  out.String("B");
  out.Array(5);
  out.Signed(-1);
  out.Unsigned(200);
  out.Unsigned(70000);
  out.Unsigned((uint64_t{1} << 32) + 5);
  out.Unsigned((uint64_t{1} << 63) + 7);
  out.String("C");
  out.Binary("\x01\x02");
  out.String("D");
  out.String(std::string(40, 'x'));
  out.String("E");
  out.Double(1.5);
  std::string forty_x;
  for (int i = 0; i < 40; ++i) forty_x += "78";
  EXPECT_EQ(
      ToHex(out.bytes()),
      "85a14101a14295ffccc8ce00011170cf0000000100000005cf8000000000000007a143c4020102a144d928" +
          forty_x + "a145cb3ff8000000000000");
}

TEST(MsgpackWriterTest, IntegerWidths) {
  MsgpackWriter out;
  out.Array(9);
  for (int64_t value : {-33LL, -200LL, -40000LL, -(1LL << 40)}) out.Signed(value);
  for (uint64_t value : {0ULL, 127ULL, 128ULL, 65535ULL, 65536ULL}) out.Unsigned(value);
  EXPECT_EQ(ToHex(out.bytes()), "99d0dfd1ff38d2ffff63c0d3ffffff0000000000007fcc80cdffffce00010000");
}

TEST(MsgpackWriterTest, LongHeaders) {
  MsgpackWriter strings;
  strings.String(std::string(300, 'y'));
  EXPECT_EQ(ToHex(strings.bytes()).substr(0, 6), "da012c");
  MsgpackWriter binary;
  binary.Binary(std::string(300, 'z'));
  EXPECT_EQ(ToHex(binary.bytes()).substr(0, 6), "c5012c");
  MsgpackWriter containers;
  containers.Array(16);
  containers.Map(16);
  containers.Map(70000);
  EXPECT_EQ(ToHex(containers.bytes()), "dc0010de0010df00011170");
  MsgpackWriter unicode;
  unicode.String("\xc3\xa9");  // é: its UTF-8 bytes, counted as bytes.
  EXPECT_EQ(ToHex(unicode.bytes()), "a2c3a9");
}

}  // namespace
}  // namespace bizon
