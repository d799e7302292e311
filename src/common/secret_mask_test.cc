#include "bizon/secret_mask.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

TEST(SecretMaskTest, RedactsEveryOccurrenceOfEachSecret) {
  SecretMask mask;
  mask.Add("tok-4471");
  mask.Add("pw-88213");
  mask.Add("tok-4471");  // Twice: kept once.
  EXPECT_EQ(mask.Redact("a tok-4471 b pw-88213 c tok-4471"), "a **** b **** c ****");
  EXPECT_FALSE(mask.empty());
}

TEST(SecretMaskTest, IgnoresValuesTooShortToRedactSafely) {
  SecretMask mask;
  mask.Add("abc");
  mask.Add("");
  EXPECT_TRUE(mask.empty());
  EXPECT_EQ(mask.Redact("abc abcd"), "abc abcd");
}

}  // namespace
}  // namespace bizon
