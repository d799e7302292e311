#include "monitoring/telemetry_http.h"

#include <gtest/gtest.h>

#include <string>

#include "monitoring/monitoring_test_support.h"

namespace bizon {
namespace {

TEST(TelemetryHttpTest, Crc32CheckValue) {
  EXPECT_EQ(Crc32("123456789"), 0xCBF43926U);  // The CRC catalogue's check value.
  EXPECT_EQ(Crc32(""), 0U);
}

TEST(TelemetryHttpTest, GzipStoredIsOneMemberOfStoredBlocks) {
  // ID1 ID2, deflate, no flags, no time, no extra flags, OS unknown.
  std::string header = FromHex("1f8b08000000000000ff");
  // "abc": one final stored block (LEN 3, NLEN ~3), CRC-32 0x352441C2, ISIZE 3.
  EXPECT_EQ(GzipStored("abc"),
            header + FromHex("010300fcff") + "abc" + FromHex("c241243503000000"));
  EXPECT_EQ(GzipStored(""), header + FromHex("010000ffff0000000000000000"));
  // 70,000 bytes: a block of 65,535, then a final one of 4,465.
  std::string body(70000, 'q');
  std::string gzip = GzipStored(body);
  ASSERT_EQ(gzip.size(), 10 + 5 + 65535 + 5 + 4465 + 8);
  EXPECT_EQ(ToHex(gzip.substr(10, 5)), "00ffff0000");
  EXPECT_EQ(ToHex(gzip.substr(10 + 5 + 65535, 5)), "0171118eee");
  EXPECT_EQ(ToHex(gzip.substr(gzip.size() - 4)), "70110100");
}

}  // namespace
}  // namespace bizon
