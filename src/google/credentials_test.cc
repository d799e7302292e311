#include "google/credentials.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "bizon/secret_mask.h"
#include "google/jwt.h"

namespace bizon {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

// One 2048-bit RSA key for the whole suite (generating one takes a moment under ASan).
EVP_PKEY* TestKey() {
  static KeyPtr key(EVP_RSA_gen(2048));
  return key.get();
}

std::string TestKeyPem() {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, TestKey(), nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(size));
  BIO_free(bio);
  return pem;
}

std::string Base64UrlDecode(std::string_view text) {
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '-'             ? 62
            : c == '_'             ? 63
                                   : -1;
    if (v < 0) ADD_FAILURE() << "not base64url: " << c;
    buffer = (buffer << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  return out;
}

// Verifies an RS256 signature with the public half of the test key.
bool VerifiesWithPublicKey(std::string_view data, std::string_view signature) {
  // Only the public key goes into the verifier: write it out and read it back.
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(bio, TestKey());
  KeyPtr public_key(PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr));
  BIO_free(bio);
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  bool ok = EVP_DigestVerifyInit(context, nullptr, EVP_sha256(), nullptr, public_key.get()) == 1 &&
            EVP_DigestVerify(context, reinterpret_cast<const unsigned char*>(signature.data()),
                             signature.size(), reinterpret_cast<const unsigned char*>(data.data()),
                             data.size()) == 1;
  EVP_MD_CTX_free(context);
  return ok;
}

std::vector<std::string> Split(const std::string& jwt) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = jwt.find('.', start);
    parts.push_back(jwt.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

std::string KeyJson(std::string_view pem, std::string_view token_uri = "http://127.0.0.1:9/token") {
  Value key(Value::Map{{"type", Value("service_account")},
                       {"project_id", Value("acme-sheets")},
                       {"private_key_id", Value("kid-0123456789abcdef")},
                       {"private_key", Value(pem)},
                       {"client_email", Value("reader@acme-sheets.iam.gserviceaccount.com")},
                       {"client_id", Value("1234567890")},
                       {"token_uri", Value(token_uri)}});
  return key.ToJson();
}

TEST(GoogleJwtTest, Base64UrlHasNoPaddingAndTheUrlAlphabet) {
  EXPECT_EQ(Base64UrlEncode(""), "");
  EXPECT_EQ(Base64UrlEncode("f"), "Zg");
  EXPECT_EQ(Base64UrlEncode("fo"), "Zm8");
  EXPECT_EQ(Base64UrlEncode("foo"), "Zm9v");
  EXPECT_EQ(Base64UrlEncode("\xfb\xff\xbf"), "-_-_");
}

TEST(GoogleJwtTest, SignatureVerifiesWithThePublicKey) {
  std::string pem = TestKeyPem();
  auto jwt = MakeRs256Jwt(Value(Value::Map{{"kid", Value("k1")}}),
                          Value(Value::Map{{"iss", Value("a@b")}, {"iat", Value(100)}}), pem);
  ASSERT_TRUE(jwt) << jwt.error().message();
  std::vector<std::string> parts = Split(*jwt);
  ASSERT_EQ(parts.size(), 3U);
  EXPECT_EQ(Base64UrlDecode(parts[0]), R"({"alg":"RS256","typ":"JWT","kid":"k1"})");
  EXPECT_EQ(Base64UrlDecode(parts[1]), R"({"iss":"a@b","iat":100})");
  std::string signature = Base64UrlDecode(parts[2]);
  EXPECT_EQ(signature.size(), 256U);
  EXPECT_TRUE(VerifiesWithPublicKey(parts[0] + "." + parts[1], signature));
  // A changed claim no longer verifies.
  EXPECT_FALSE(
      VerifiesWithPublicKey(parts[0] + "." + Base64UrlEncode(R"({"iss":"x@b"})"), signature));
}

TEST(GoogleJwtTest, UnreadableKeyIsRefusedWithoutQuotingIt) {
  auto signed_ = SignRs256("data",
                           "-----BEGIN PRIVATE KEY-----\nnot-a-key-at-all\n"
                           "-----END PRIVATE KEY-----\n");
  ASSERT_FALSE(signed_);
  EXPECT_EQ(signed_.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(signed_.error().message().find("not a PEM private key"), std::string::npos);
  EXPECT_EQ(signed_.error().message().find("not-a-key-at-all"), std::string::npos);
}

TEST(GoogleCredentialsTest, AssertionCarriesGooglesClaims) {
  auto key = ParseServiceAccountKey(KeyJson(TestKeyPem(), "https://oauth2.example/token"),
                                    "service_account_key");
  ASSERT_TRUE(key) << key.error().message();
  EXPECT_EQ(key->client_email, "reader@acme-sheets.iam.gserviceaccount.com");
  EXPECT_EQ(key->project_id, "acme-sheets");
  auto jwt = MakeServiceAccountAssertion(*key, {"https://s/a", "https://s/b"}, 1'700'000'000);
  ASSERT_TRUE(jwt);
  std::vector<std::string> parts = Split(*jwt);
  ASSERT_EQ(parts.size(), 3U);
  EXPECT_EQ(Base64UrlDecode(parts[0]),
            R"({"alg":"RS256","typ":"JWT","kid":"kid-0123456789abcdef"})");
  EXPECT_EQ(Base64UrlDecode(parts[1]),
            R"({"iss":"reader@acme-sheets.iam.gserviceaccount.com","scope":"https://s/a )"
            R"(https://s/b","aud":"https://oauth2.example/token","iat":1700000000,)"
            R"("exp":1700003600})");
  EXPECT_TRUE(VerifiesWithPublicKey(parts[0] + "." + parts[1], Base64UrlDecode(parts[2])));
}

TEST(GoogleCredentialsTest, KeyMaterialIsMasked) {
  std::string pem = TestKeyPem();
  ASSERT_TRUE(ParseServiceAccountKey(KeyJson(pem), "k"));
  // A line of the key's base64 body, as it could appear in a log line.
  std::string line = pem.substr(pem.find('\n') + 1, 64);
  EXPECT_EQ(SecretMask::Global().Redact("x " + line + " y"), "x **** y");
}

TEST(GoogleCredentialsTest, BadKeysAreConfigErrorsNamingTheOrigin) {
  auto not_json = ParseServiceAccountKey("{\"private_key\": \"abc", "source.service_account_key");
  ASSERT_FALSE(not_json);
  EXPECT_EQ(not_json.error().failure_class(), FailureClass::kConfig);
  EXPECT_EQ(not_json.error().message(),
            "Google credentials source.service_account_key: is not a JSON object (a key file's "
            "content is expected)");

  auto missing = ParseServiceAccountKey(R"({"type": "service_account", "project_id": "p"})", "k");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message(),
            "Google credentials k: the service_account key lacks 'client_email', 'private_key'");

  std::string bad = KeyJson(
      "-----BEGIN PRIVATE KEY-----\nMIIEvAIBADANBgkqhkiG9w0BAQEFAASC\n"
      "-----END PRIVATE KEY-----\n");
  auto unreadable = ParseServiceAccountKey(bad, "k");
  ASSERT_FALSE(unreadable);
  EXPECT_NE(unreadable.error().message().find("not a PEM private key"), std::string::npos);
  EXPECT_EQ(unreadable.error().message().find("MIIEvAIBADANBgkqhkiG9w0BAQEFAASC"),
            std::string::npos);
}

// Counts fetches; hands out tokens with the given lifetime.
class CountingCredentials final : public GoogleCredentials {
 public:
  explicit CountingCredentials(std::optional<int64_t> lifetime_s) : lifetime_s_(lifetime_s) {}
  std::string Describe() const override { return "counting"; }
  int fetches = 0;

 protected:
  Result<GoogleAccessToken> FetchToken() override {
    ++fetches;
    return GoogleAccessToken{.token = "token-" + std::to_string(fetches),
                             .expires_in_s = lifetime_s_};
  }

 private:
  std::optional<int64_t> lifetime_s_;
};

TEST(GoogleCredentialsTest, TokenIsCachedAndRenewedAheadOfExpiry) {
  int64_t now = 1'000'000'000'000'000;
  CountingCredentials credentials(3600);
  credentials.set_clock([&] { return now; });
  EXPECT_EQ(*credentials.AccessToken(), "token-1");
  now += 3000LL * 1'000'000;
  EXPECT_EQ(*credentials.AccessToken(), "token-1");
  // Renewed 225 s before the hour is up.
  now += 376LL * 1'000'000;
  EXPECT_EQ(*credentials.AccessToken(), "token-2");
  EXPECT_EQ(credentials.fetches, 2);
  EXPECT_EQ(*credentials.Refresh(), "token-3");
}

TEST(GoogleCredentialsTest, ShortLivedTokensKeepNinetyPercentOfTheirLife) {
  int64_t now = 1'000'000'000'000'000;
  CountingCredentials credentials(10);
  credentials.set_clock([&] { return now; });
  EXPECT_EQ(*credentials.AccessToken(), "token-1");
  EXPECT_EQ(credentials.refresh_at_us(), now + 9'000'000);
  now += 8'999'999;
  EXPECT_EQ(*credentials.AccessToken(), "token-1");
  now += 1;
  EXPECT_EQ(*credentials.AccessToken(), "token-2");
}

TEST(GoogleCredentialsTest, ATokenWithoutLifetimeIsKeptUntilRefreshed) {
  CountingCredentials credentials(std::nullopt);
  EXPECT_EQ(*credentials.AccessToken(), "token-1");
  EXPECT_EQ(*credentials.AccessToken(), "token-1");
  EXPECT_EQ(credentials.fetches, 1);
}

GoogleEnvFunction Env(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(GoogleCredentialsTest, ApplicationDefaultOrder) {
  std::string key = KeyJson(TestKeyPem());
  std::string user = R"({"type": "authorized_user", "client_id": "cid.apps.googleusercontent.com",
                         "client_secret": "user-secret-123", "refresh_token": "1//refresh-abc"})";
  std::string key_path = WriteTemp("bizon_google_key.json", key);
  std::string gcloud_dir = testing::TempDir() + "/bizon_gcloud";
  std::remove((gcloud_dir + "/application_default_credentials.json").c_str());
  std::filesystem::create_directories(gcloud_dir);

  // The inline key comes first.
  auto inline_key = MakeGoogleCredentials(
      {.inline_key = key, .env = Env({{"GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent"}})});
  ASSERT_TRUE(inline_key) << inline_key.error().message();
  EXPECT_EQ((*inline_key)->Describe(),
            "service account reader@acme-sheets.iam.gserviceaccount.com");
  EXPECT_EQ((*inline_key)->project_id(), "acme-sheets");

  // Then GOOGLE_APPLICATION_CREDENTIALS, before the well-known file and the metadata server.
  auto from_file = MakeGoogleCredentials({.env = Env({{"GOOGLE_APPLICATION_CREDENTIALS", key_path},
                                                      {"CLOUDSDK_CONFIG", gcloud_dir},
                                                      {"GCE_METADATA_HOST", "127.0.0.1:1"}})});
  ASSERT_TRUE(from_file) << from_file.error().message();
  EXPECT_EQ((*from_file)->Describe(), "service account reader@acme-sheets.iam.gserviceaccount.com");

  auto missing_file =
      MakeGoogleCredentials({.env = Env({{"GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/k"}})});
  ASSERT_FALSE(missing_file);
  EXPECT_EQ(missing_file.error().message(),
            "Google credentials GOOGLE_APPLICATION_CREDENTIALS (/nonexistent/k): names a file "
            "that cannot be read: /nonexistent/k");

  // No well-known file yet: the metadata server GCE_METADATA_HOST names.
  auto metadata = MakeGoogleCredentials(
      {.env = Env({{"CLOUDSDK_CONFIG", gcloud_dir}, {"GCE_METADATA_HOST", "127.0.0.1:1"}})});
  ASSERT_TRUE(metadata);
  EXPECT_EQ((*metadata)->Describe(), "metadata server 127.0.0.1:1");
  auto no_host = MakeGoogleCredentials({.env = Env({{"CLOUDSDK_CONFIG", gcloud_dir}})});
  ASSERT_TRUE(no_host);
  EXPECT_EQ((*no_host)->Describe(), "metadata server metadata.google.internal");

  // gcloud's well-known file (authorized user credentials), before the metadata server.
  WriteTemp("bizon_gcloud/application_default_credentials.json", user);
  auto well_known = MakeGoogleCredentials(
      {.env = Env({{"CLOUDSDK_CONFIG", gcloud_dir}, {"GCE_METADATA_HOST", "127.0.0.1:1"}})});
  ASSERT_TRUE(well_known) << well_known.error().message();
  EXPECT_EQ((*well_known)->Describe(), "authorized user (client cid.apps.googleusercontent.com)");
  EXPECT_EQ(SecretMask::Global().Redact("user-secret-123 1//refresh-abc"), "**** ****");
}

TEST(GoogleCredentialsTest, UnsupportedKeyTypesAreRefused) {
  auto external = MakeGoogleCredentials({.inline_key = R"({"type": "external_account"})",
                                         .inline_key_origin = "source.service_account_key"});
  ASSERT_FALSE(external);
  EXPECT_EQ(external.error().message(),
            "Google credentials source.service_account_key: has type 'external_account', which "
            "is not supported here (service_account and authorized_user are)");
  auto user = MakeGoogleCredentials({.inline_key = R"({"type": "authorized_user",
                                                       "client_id": "c"})"});
  ASSERT_FALSE(user);
  EXPECT_EQ(user.error().message(),
            "Google credentials service_account_key: the authorized_user key lacks "
            "'client_secret', 'refresh_token'");
}

TEST(GoogleCredentialsTest, UnreachableMetadataServerIsASourceError) {
  auto credentials = MakeGoogleCredentials(
      {.timeouts = {.connect_s = 1, .read_s = 1},
       .sleep = [](double) {},
       .env = Env({{"CLOUDSDK_CONFIG", "/nonexistent"}, {"GCE_METADATA_HOST", "127.0.0.1:1"}})});
  ASSERT_TRUE(credentials);
  auto token = (*credentials)->AccessToken();
  ASSERT_FALSE(token);
  EXPECT_EQ(token.error().failure_class(), FailureClass::kSource);
  EXPECT_NE(token.error().message().find(
                "Google metadata server request failed: HTTP request failed after 5 attempts"),
            std::string::npos)
      << token.error().message();
}

TEST(GoogleAuthenticatorTest, AnonymousAddsNoHeader) {
  GoogleAuthenticator authenticator(MakeAnonymousGoogleCredentials());
  HttpRequest request;
  ASSERT_TRUE(authenticator.Apply(request).ok());
  EXPECT_TRUE(request.headers.empty());
  EXPECT_FALSE(*authenticator.RefreshAfterUnauthorized());
}

TEST(GoogleAuthenticatorTest, AddsTheBearerToken) {
  GoogleAuthenticator authenticator(std::make_shared<CountingCredentials>(3600));
  HttpRequest request;
  ASSERT_TRUE(authenticator.Apply(request).ok());
  ASSERT_EQ(request.headers.size(), 1U);
  EXPECT_EQ(request.headers[0],
            (std::pair<std::string, std::string>("Authorization", "Bearer token-1")));
  EXPECT_TRUE(*authenticator.RefreshAfterUnauthorized());
}

}  // namespace
}  // namespace bizon
