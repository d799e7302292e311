#include "common/json_scan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

namespace bizon::json_scan {
namespace {

size_t FirstSpecialByteByByte(std::string_view text, size_t from) {
  for (size_t i = from; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == '"' || c == '\\') return i;
  }
  return text.size();
}

size_t FirstNonAsciiByteByByte(std::string_view text, size_t from) {
  for (size_t i = from; i < text.size(); ++i) {
    if (static_cast<unsigned char>(text[i]) >= 0x80) return i;
  }
  return text.size();
}

TEST(JsonScanTest, EveryScannerFindsWhatAByteLoopFinds) {
  // Mostly plain bytes with a rare special one, so the runs cross the 8- and 64-byte blocks.
  std::mt19937 random(4242);
  static constexpr std::string_view kRare = "\"\\\n\x01\x1f\x80\xc3\xff";
  for (int round = 0; round < 20000; ++round) {
    std::string text(random() % 200, 'x');
    for (char& c : text) {
      uint32_t draw = random() % 64;
      if (draw == 0) c = kRare[random() % kRare.size()];
      if (draw == 1) c = static_cast<char>(0x20 + random() % 0x5f);  // Any printable ASCII.
    }
    size_t from = text.empty() ? 0 : random() % (text.size() + 1);
    for (std::string_view scanner : Scanners()) {
      ASSERT_EQ(FindSpecialWith(scanner, text, from), FirstSpecialByteByByte(text, from))
          << scanner << " round " << round;
      ASSERT_EQ(FindNonAsciiWith(scanner, text, from), FirstNonAsciiByteByByte(text, from))
          << scanner << " round " << round;
    }
  }
}

TEST(JsonScanTest, TheChosenScannerIsOneThisCpuRuns) {
  std::vector<std::string_view> scanners = Scanners();
  EXPECT_EQ(scanners.front(), "swar");
  EXPECT_NE(std::find(scanners.begin(), scanners.end(), Scanner()), scanners.end());
  EXPECT_EQ(FindSpecial("abc\"", 0), 3u);
  EXPECT_EQ(FindNonAscii("abc", 0), 3u);
}

}  // namespace
}  // namespace bizon::json_scan
