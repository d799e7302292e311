#include "monitoring/ddsketch.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>

#include "monitoring/monitoring_test_support.h"

namespace bizon {
namespace {

// Expected bytes: ddtrace 4.6.0's DDSketch (libdatadog's ddsketch) .to_proto() for the same
// values.

std::string DoubleBytes(double value) {
  auto bits = std::bit_cast<uint64_t>(value);
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  return out;
}

constexpr std::string_view kMapping = "0a1209000000000040f03f110000000000ea9440";

TEST(DDSketchTest, MappingConstants) {
  EXPECT_EQ(DDSketch::Gamma(), 1.015625);
  EXPECT_EQ(DDSketch::IndexOffset(), 1338.5);
  EXPECT_EQ(DDSketch::Index(1.0), 1338);
  EXPECT_EQ(DDSketch::Index(0.5), 1293);
  EXPECT_EQ(DDSketch::Index(2.0), 1383);
  EXPECT_EQ(DDSketch::Index(3.0), 1409);
  EXPECT_GT(DDSketch::MinIndexableValue(), 0);
  EXPECT_LT(DDSketch::MinIndexableValue(), 1e-300);
}

TEST(DDSketchTest, SmallSketchesEncodeAsTheTracer) {
  DDSketch empty;
  EXPECT_EQ(empty.ToProto(), FromHex(std::string(kMapping) + "12001a00"));
  DDSketch zero;
  zero.Add(0.0);
  EXPECT_EQ(zero.ToProto(), FromHex(std::string(kMapping) + "12001a0021000000000000f03f"));
  DDSketch one;
  one.Add(1.0);
  EXPECT_EQ(one.ToProto(), FromHex(std::string(kMapping) + "120d1208000000000000f03f18f4141a00"));
  EXPECT_EQ(one.count(), 1);
}

TEST(DDSketchTest, ContiguousBinsFromTheLowestToTheHighest) {
  DDSketch sketch;
  for (double value : {1.0, 2.0, 2.0, 0.5}) sketch.Add(value);
  EXPECT_EQ(sketch.offset(), 1293);
  ASSERT_EQ(sketch.bins().size(), 91U);
  std::string bins;
  for (size_t i = 0; i < 91; ++i) bins += DoubleBytes(i == 0 ? 1 : i == 45 ? 1 : i == 90 ? 2 : 0);
  // positiveValues: 2 + 728 bytes of bins + the zigzag offset 2586 (= 1293 * 2).
  std::string expected =
      FromHex(std::string(kMapping) + "12de0512d805") + bins + FromHex("189a141a00");
  EXPECT_EQ(sketch.ToProto(), expected);
  EXPECT_EQ(sketch.count(), 4);
}

TEST(DDSketchTest, AFullStoreCollapsesItsLowestBins) {
  DDSketch wide;
  wide.Add(1e-9);
  wide.Add(1e9);
  ASSERT_EQ(wide.bins().size(), static_cast<size_t>(DDSketch::kMaxBins));
  EXPECT_EQ(wide.offset(), 628);  // 1e9's bin minus 2047: 1e-9 went to the lowest bin kept.
  EXPECT_EQ(wide.bins().front(), 1);
  EXPECT_EQ(wide.bins().back(), 1);
  EXPECT_EQ(wide.ToProto().size(), 16417U);

  DDSketch downwards;  // Growing down stops at the limit; the value lands in the lowest bin.
  downwards.Add(3.0, 2);
  downwards.Add(1e-300);
  ASSERT_EQ(downwards.bins().size(), static_cast<size_t>(DDSketch::kMaxBins));
  EXPECT_EQ(downwards.offset(), -638);
  EXPECT_EQ(downwards.bins().front(), 1);
  EXPECT_EQ(downwards.bins().back(), 2);
  std::string proto = downwards.ToProto();
  EXPECT_EQ(proto.size(), 16417U);
  EXPECT_EQ(proto.substr(proto.size() - 5), FromHex("18fb091a00"));
}

TEST(DDSketchTest, InvalidValuesAreIgnored) {
  DDSketch sketch;
  sketch.Add(-1);
  sketch.Add(std::nan(""));
  sketch.Add(INFINITY);
  EXPECT_EQ(sketch.count(), 0);
}

}  // namespace
}  // namespace bizon
