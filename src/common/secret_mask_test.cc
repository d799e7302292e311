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

TEST(SecretMaskTest, CredentialNamesAreRecognisedInAnyCase) {
  for (std::string_view name :
       {"api_key", "apiKey", "X-Api-Key", "key", "access_token", "Authorization", "client_secret",
        "sasl.password", "ssl.key.pem", "Ocp-Apim-Subscription-Key", "sig", "auth", "Cookie",
        "session_id", "private_key_id", "basic.auth.user.info"}) {
    EXPECT_TRUE(LooksLikeCredentialName(name)) << name;
  }
  for (std::string_view name :
       {"team", "limit", "page", "cursor", "updated_after", "Accept", "format", "keyword"}) {
    EXPECT_FALSE(LooksLikeCredentialName(name)) << name;
  }
}

}  // namespace
}  // namespace bizon
