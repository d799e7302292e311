#include "common/ascii.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

TEST(AsciiTest, LowerTouchesOnlyAsciiLetters) {
  EXPECT_EQ(AsciiLower("Content-Type: X-AMZ-Date"), "content-type: x-amz-date");
  // UTF-8 bytes (here "É") stay as they are: no locale decides what a byte means.
  EXPECT_EQ(AsciiLower("\xC3\x89T\xC3\x89"), "\xC3\x89t\xC3\x89");
}

TEST(AsciiTest, EqualsIgnoringCaseNeedsTheSameLength) {
  EXPECT_TRUE(EqualsIgnoreAsciiCase("Retry-After", "retry-after"));
  EXPECT_TRUE(EqualsIgnoreAsciiCase("", ""));
  EXPECT_FALSE(EqualsIgnoreAsciiCase("GET", "GETS"));
  EXPECT_FALSE(EqualsIgnoreAsciiCase("get", "got"));
  EXPECT_FALSE(EqualsIgnoreAsciiCase("[", "{"));  // '[' + 32 is '{': not a letter, not folded
}

TEST(AsciiTest, TrimDropsEveryAsciiSpaceAtBothEndsOnly) {
  EXPECT_EQ(TrimAsciiSpace(" \t\r\n rel=\"next\" \v\f"), "rel=\"next\"");
  EXPECT_EQ(TrimAsciiSpace("a b"), "a b");
  EXPECT_EQ(TrimAsciiSpace(" \t "), "");
  EXPECT_EQ(TrimAsciiSpace(""), "");
}

}  // namespace
}  // namespace bizon
