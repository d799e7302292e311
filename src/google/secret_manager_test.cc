#include "google/secret_manager.h"

#include <gtest/gtest.h>

#include <map>

namespace bizon {
namespace {

std::string Message(const Result<std::string>& result) {
  return result ? std::string("(ok) ") + *result : result.error().message();
}

TEST(SecretManagerTest, ShortNameIsTheLatestVersion) {
  EXPECT_EQ(SecretVersionName("api-token", std::string("acme")).value(),
            "projects/acme/secrets/api-token/versions/latest");
  EXPECT_EQ(SecretVersionName("  api_token \n", std::string("acme")).value(),
            "projects/acme/secrets/api_token/versions/latest");
}

TEST(SecretManagerTest, PinnedVersionAndFullName) {
  EXPECT_EQ(SecretVersionName("api-token/versions/3", std::string("acme")).value(),
            "projects/acme/secrets/api-token/versions/3");
  // A full name needs no project, and keeps its own.
  EXPECT_EQ(SecretVersionName("projects/other/secrets/s/versions/7", std::nullopt).value(),
            "projects/other/secrets/s/versions/7");
  EXPECT_EQ(SecretVersionName("projects/example.com:proj/secrets/s/versions/latest", std::nullopt)
                .value(),
            "projects/example.com:proj/secrets/s/versions/latest");
}

TEST(SecretManagerTest, NoProjectSaysWhereToSetOne) {
  auto name = SecretVersionName("api-token", std::nullopt);
  ASSERT_FALSE(name.has_value());
  EXPECT_EQ(name.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(Message(name).find("cannot resolve gsm://api-token: no GCP project"), std::string::npos)
      << Message(name);
  EXPECT_NE(Message(name).find("secrets.gsm.project_id"), std::string::npos);
  EXPECT_NE(Message(name).find("GOOGLE_CLOUD_PROJECT"), std::string::npos);
  EXPECT_FALSE(SecretVersionName("api-token", std::string()).has_value());
}

TEST(SecretManagerTest, PathsThatWouldChangeTheRequestAreRefused) {
  for (std::string_view path :
       {"a b", "a?alt=media", "a#x", "../x", "a/versions/1/extra", "a/versions/", "a%2Fb",
        "projects/p/secrets/s", "projects/p/secrets/s/versions/1/x",
        "projects/p/locations/eu/secrets/s/versions/1", "projects//secrets/s/versions/1",
        "projects/p/secrets/s:x/versions/1"}) {
    auto name = SecretVersionName(path, std::string("acme"));
    EXPECT_FALSE(name.has_value()) << path << " -> " << Message(name);
    if (!name) {
      EXPECT_NE(Message(name).find("gsm://"), std::string::npos) << Message(name);
    }
  }
  EXPECT_FALSE(SecretVersionName("s", std::string("bad/project")).has_value());
}

TEST(SecretManagerTest, Crc32cMatchesTheCastagnoliCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);  // RFC 3720 B.4's check value.
  EXPECT_EQ(Crc32c(""), 0u);
}

// An environment with no ambient Google settings: metadata-server credentials, which contact
// nothing until a token is asked for.
std::function<std::optional<std::string>(const std::string&)> Environment(
    std::map<std::string, std::string> values) {
  values.emplace("CLOUDSDK_CONFIG", "/nonexistent-gcloud-config");
  return [values](const std::string& name) -> std::optional<std::string> {
    auto found = values.find(name);
    if (found == values.end()) return std::nullopt;
    return found->second;
  };
}

TEST(SecretManagerTest, ResolveWithoutProjectNamesTheReference) {
  GoogleSecretManager manager({.env = Environment({})});
  auto value = manager.Resolve("db-password");
  ASSERT_FALSE(value.has_value());
  EXPECT_NE(Message(value).find("cannot resolve gsm://db-password: no GCP project"),
            std::string::npos)
      << Message(value);
}

TEST(SecretManagerTest, MalformedPathIsRefusedBeforeCredentials) {
  // A key file that cannot be read would fail credentials; the path is refused first.
  GoogleSecretManager manager(
      {.env = Environment({{"GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent-key.json"}})});
  auto value = manager.Resolve("a?b");
  ASSERT_FALSE(value.has_value());
  EXPECT_NE(Message(value).find("cannot resolve gsm://a?b: expected"), std::string::npos)
      << Message(value);
}

TEST(SecretManagerTest, EndpointOverrideMustBeAUrl) {
  GoogleSecretManager manager(
      {.project_id = "acme",
       .env = Environment({{std::string(kSecretManagerEndpointVariable), "127.0.0.1:8080"}})});
  auto value = manager.Resolve("db-password");
  ASSERT_FALSE(value.has_value());
  EXPECT_NE(Message(value).find("cannot resolve gsm://db-password: "
                                "BIZON_SECRETMANAGER_ENDPOINT must be a URL"),
            std::string::npos)
      << Message(value);
}

}  // namespace
}  // namespace bizon
