// Every authentication type MakeAuthenticator builds (api_key, bearer, basic, cookies, oauth),
// through an HttpSession against a loopback server: the headers each puts on the wire, the OAuth
// refresh (its form, when it happens, its retries, rotation, the 401 path), the config errors,
// and that no credential shows in an error while every one is known to the SecretMask.
//
// Secrets here are long and unique: the SecretMask is process-wide, and a short one ("1") would
// redact text in every later test of the binary.
#include "http/authenticator.h"

#include <gtest/gtest.h>

#include <ctime>
#include <string>
#include <vector>

#include "bizon/clock.h"
#include "bizon/secret_mask.h"
#include "testing/loopback_http_server.h"

namespace bizon {
namespace {

using testing_support::LoopbackHttpServer;
using testing_support::LoopbackRequest;
using testing_support::LoopbackResponse;

Value Json(std::string_view text) {
  auto parsed = Value::FromJson(text);
  EXPECT_TRUE(parsed.has_value()) << text;
  return parsed ? *parsed : Value();
}

// Every value of `name` in a form body.
std::vector<std::string> FormValues(const std::string& body, std::string_view name) {
  std::vector<std::string> values;
  for (const auto& [key, value] : testing_support::FormDecode(body)) {
    if (key == name) values.push_back(value);
  }
  return values;
}

void ExpectNoSecret(const Status& error, const std::vector<std::string>& secrets) {
  for (const std::string& secret : secrets) {
    EXPECT_EQ(error.message().find(secret), std::string::npos)
        << "the error shows a secret: " << error.message();
  }
}

void ExpectMasked(std::string_view secret) {
  EXPECT_EQ(SecretMask::Global().Redact(std::string("[") + std::string(secret) + "]"), "[****]")
      << secret;
}

class AuthenticatorSessionTest : public testing::Test {
 protected:
  std::shared_ptr<Authenticator> Make(const Value& authentication,
                                      AuthenticatorOptions options = {}) {
    options.sleep = [this](double seconds) { waits_.push_back(seconds); };
    auto made = MakeAuthenticator(authentication, options);
    EXPECT_TRUE(made.has_value()) << made.error().ToString();
    return made ? *made : nullptr;
  }

  // A session with `authenticator` and a policy without retries of its own.
  std::unique_ptr<HttpSession> Session(std::shared_ptr<Authenticator> authenticator) {
    HttpPolicy policy;
    policy.retries.total = 0;
    return std::make_unique<HttpSession>(
        HttpSessionOptions{.policy = policy, .authenticator = std::move(authenticator)});
  }

  // The OAuth block against the loopback token endpoint, with `extra` params merged in.
  Value OAuth(std::string_view extra = "") {
    std::string params = R"("token_refresh_endpoint": ")" + server_.url() +
                         R"(/oauth/token", "client_id": "client-id-5521",
        "client_secret": "client-secret-oauth-9d41", "refresh_token": "refresh-token-oauth-77c0")";
    if (!extra.empty()) params += std::string(", ") + std::string(extra);
    return Json(R"({"type": "oauth", "params": {)" + params + "}}");
  }

  LoopbackRequest OnlyRequest() {
    std::vector<LoopbackRequest> requests = server_.requests();
    EXPECT_EQ(requests.size(), 1u);
    return requests.empty() ? LoopbackRequest() : requests[0];
  }

  LoopbackHttpServer server_;
  std::vector<double> waits_;
};

TEST(Base64EncodeTest, MatchesRfc4648) {
  // RFC 4648's test vectors, and bytes that are not text.
  const std::vector<std::pair<std::string, std::string>> vectors = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
      {std::string("\xff\xfe\x00", 3), "//4A"}};
  for (const auto& [bytes, encoded] : vectors) EXPECT_EQ(Base64Encode(bytes), encoded) << bytes;
}

TEST_F(AuthenticatorSessionTest, BearerPutsTheTokenInAuthorization) {
  server_.Expect("GET", "/me", LoopbackResponse::Json("{}"));
  auto session =
      Session(Make(Json(R"({"type": "bearer", "params": {"token": "bearer-tok-31f7"}})")));
  ASSERT_TRUE(session->Get(server_.url() + "/me").has_value());
  EXPECT_EQ(OnlyRequest().Header("authorization"), "Bearer bearer-tok-31f7");
  ExpectMasked("bearer-tok-31f7");
}

TEST_F(AuthenticatorSessionTest, ApiKeyTakesItsHeaderAndMethodFromParams) {
  server_.Expect("GET", "/me", LoopbackResponse::Json("{}"));
  auto session = Session(Make(Json(R"({"type": "api_key", "params": {"token": "api-key-8a02",
      "auth_method": "", "auth_header": "X-Api-Key"}})")));
  ASSERT_TRUE(session->Get(server_.url() + "/me").has_value());
  LoopbackRequest request = OnlyRequest();
  EXPECT_EQ(request.Header("x-api-key"), "api-key-8a02");
  EXPECT_FALSE(request.Header("authorization").has_value());
  ExpectMasked("api-key-8a02");
}

TEST_F(AuthenticatorSessionTest, ApiKeyShorthandIsABearerToken) {
  server_.Expect("GET", "/me", LoopbackResponse::Json("{}"));
  auto session = Session(Make(Json(R"({"type": "api_key", "api_key": "short-key-60b9"})")));
  ASSERT_TRUE(session->Get(server_.url() + "/me").has_value());
  EXPECT_EQ(OnlyRequest().Header("authorization"), "Bearer short-key-60b9");
}

TEST_F(AuthenticatorSessionTest, BasicEncodesUserAndPassword) {
  server_.Expect("GET", "/me", LoopbackResponse::Json("{}"));
  // RFC 7617's example.
  auto session = Session(Make(
      Json(R"({"type": "basic", "params": {"username": "Aladdin", "password": "open sesame"}})")));
  ASSERT_TRUE(session->Get(server_.url() + "/me").has_value());
  EXPECT_EQ(OnlyRequest().Header("authorization"), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
  ExpectMasked("QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
  ExpectMasked("open sesame");
}

TEST_F(AuthenticatorSessionTest, BasicWithACustomHeader) {
  server_.Expect("GET", "/me", LoopbackResponse::Json("{}"));
  auto session = Session(Make(Json(R"({"type": "basic", "params": {"username": "svc-user",
      "password": "basic-pw-4c1e", "auth_method": "Token", "auth_header": "Proxy-Authorization"}})")));
  ASSERT_TRUE(session->Get(server_.url() + "/me").has_value());
  EXPECT_EQ(OnlyRequest().Header("proxy-authorization"),
            "Token " + Base64Encode("svc-user:basic-pw-4c1e"));
}

TEST_F(AuthenticatorSessionTest, CookiesAreJoinedAndSentWithTheirHeaders) {
  server_.Expect("GET", "/me", LoopbackResponse::Json("{}"));
  auto session = Session(Make(Json(R"({"type": "cookies", "params": {
      "cookies": {"session": "cookie-session-0f3d", "cf": "cookie-cf-a81e"},
      "headers": {"X-Csrf-Token": "csrf-value-2b7c"}}})")));
  ASSERT_TRUE(session->Get(server_.url() + "/me").has_value());
  LoopbackRequest request = OnlyRequest();
  EXPECT_EQ(request.Header("cookie"), "session=cookie-session-0f3d; cf=cookie-cf-a81e");
  EXPECT_EQ(request.Header("x-csrf-token"), "csrf-value-2b7c");
  ExpectMasked("cookie-session-0f3d");
  ExpectMasked("cookie-cf-a81e");
}

TEST_F(AuthenticatorSessionTest, OAuthRefreshesBeforeTheFirstRequestThenReusesTheToken) {
  server_.Expect(
      "POST", "/oauth/token",
      LoopbackResponse::Json(R"({"access_token": "access-tok-e3c5", "expires_in": 3600})"));
  server_.Expect("GET", "/data", LoopbackResponse::Json("[]"));
  server_.Expect("GET", "/data", LoopbackResponse::Json("[]"));
  auto authenticator = Make(OAuth(R"("scopes": ["crm.read", "crm.write"],
      "refresh_request_body": {"audience": "api", "client_id": "not-this-one"})"));
  auto session = Session(authenticator);
  int64_t before = NowMicros();
  ASSERT_TRUE(session->Get(server_.url() + "/data").has_value());
  ASSERT_TRUE(session->Get(server_.url() + "/data").has_value());

  std::vector<LoopbackRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 3u);
  const LoopbackRequest& token = requests[0];
  EXPECT_EQ(token.Header("content-type"), "application/x-www-form-urlencoded");
  EXPECT_EQ(token.Header("accept"), "application/json");
  EXPECT_FALSE(token.Header("authorization").has_value());
  EXPECT_EQ(FormValues(token.body, "grant_type"), std::vector<std::string>{"refresh_token"});
  // The body's own client_id wins over refresh_request_body's.
  EXPECT_EQ(FormValues(token.body, "client_id"), std::vector<std::string>{"client-id-5521"});
  EXPECT_EQ(FormValues(token.body, "client_secret"),
            std::vector<std::string>{"client-secret-oauth-9d41"});
  EXPECT_EQ(FormValues(token.body, "refresh_token"),
            std::vector<std::string>{"refresh-token-oauth-77c0"});
  EXPECT_EQ(FormValues(token.body, "scope"), std::vector<std::string>{"crm.read,crm.write"});
  EXPECT_EQ(FormValues(token.body, "audience"), std::vector<std::string>{"api"});
  EXPECT_EQ(requests[1].Header("authorization"), "Bearer access-tok-e3c5");
  EXPECT_EQ(requests[2].Header("authorization"), "Bearer access-tok-e3c5");

  // Refreshed again 60 s before expiry (10% of the lifetime, at most 60 s).
  auto* oauth = dynamic_cast<OAuth2Authenticator*>(authenticator.get());
  ASSERT_NE(oauth, nullptr);
  EXPECT_GE(oauth->refresh_at_us(), before + 3540 * 1'000'000LL);
  EXPECT_LE(oauth->refresh_at_us(), NowMicros() + 3540 * 1'000'000LL);
  for (std::string_view secret :
       {"client-secret-oauth-9d41", "refresh-token-oauth-77c0", "access-tok-e3c5"}) {
    ExpectMasked(secret);
  }
}

TEST_F(AuthenticatorSessionTest, OAuthRefreshesAnExpiredTokenAndUsesTheRotatedRefreshToken) {
  // A lifetime of 1 s with a skew of 1 s: due for refresh as soon as it arrives.
  server_.Expect("POST", "/oauth/token",
                 LoopbackResponse::Json(R"({"access_token": "access-tok-1-71d2", "expires_in": 1,
                     "refresh_token": "rotated-refresh-a6f0"})"));
  server_.Expect("GET", "/data", LoopbackResponse::Json("[]"));
  server_.Expect(
      "POST", "/oauth/token",
      LoopbackResponse::Json(R"({"access_token": "access-tok-2-71d2", "expires_in": 1})"));
  server_.Expect("GET", "/data", LoopbackResponse::Json("[]"));
  auto session = Session(Make(OAuth(R"("expiry_skew_seconds": 1)")));
  ASSERT_TRUE(session->Get(server_.url() + "/data").has_value());
  ASSERT_TRUE(session->Get(server_.url() + "/data").has_value());
  std::vector<LoopbackRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[1].Header("authorization"), "Bearer access-tok-1-71d2");
  EXPECT_EQ(FormValues(requests[2].body, "refresh_token"),
            std::vector<std::string>{"rotated-refresh-a6f0"});
  EXPECT_EQ(requests[3].Header("authorization"), "Bearer access-tok-2-71d2");
  ExpectMasked("rotated-refresh-a6f0");
}

TEST_F(AuthenticatorSessionTest, OAuthWithoutExpiryRefreshesOnlyOnA401) {
  server_.Expect("POST", "/oauth/token",
                 LoopbackResponse::Json(R"({"access_token": "access-tok-c019"})"));
  server_.Expect("GET", "/data", LoopbackResponse::Json("[]"));
  server_.Expect("GET", "/data", LoopbackResponse::Json("[]"));
  auto authenticator = Make(OAuth());
  auto session = Session(authenticator);
  ASSERT_TRUE(session->Get(server_.url() + "/data").has_value());
  ASSERT_TRUE(session->Get(server_.url() + "/data").has_value());
  EXPECT_EQ(dynamic_cast<OAuth2Authenticator&>(*authenticator).refresh_at_us(), INT64_MAX);
}

TEST_F(AuthenticatorSessionTest, OAuthAKnownTokenIsUsedUntilA401ThenRefreshedOnce) {
  server_.Expect("GET", "/data", {.status = 401, .body = "expired"});
  server_.Expect(
      "POST", "/oauth/token",
      LoopbackResponse::Json(R"({"access_token": "access-tok-new-5e8b", "expires_in": 600})"));
  server_.Expect("GET", "/data", LoopbackResponse::Json("[1]"));
  server_.Expect("GET", "/data", {.status = 401, .body = "revoked"});
  server_.Expect(
      "POST", "/oauth/token",
      LoopbackResponse::Json(R"({"access_token": "access-tok-newer-5e8b", "expires_in": 600})"));
  server_.Expect("GET", "/data", {.status = 401, .body = "revoked again"});
  auto session = Session(Make(OAuth(R"("access_token": "access-tok-old-5e8b",
      "token_expiry_date": "2999-01-01T00:00:00Z")")));
  auto first = session->Get(server_.url() + "/data");
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  EXPECT_EQ(first->body, "[1]");
  // A second 401 after the refresh of the same request is final.
  auto second = session->Get(server_.url() + "/data");
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code(), StatusCode::kFailedPrecondition);
  // Sent twice: before and after the refresh.
  EXPECT_EQ(second.error().message(), "HTTP request failed after 2 attempts: GET " + server_.url() +
                                          "/data returned 401 Unauthorized: revoked again");
  std::vector<LoopbackRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 6u);
  EXPECT_EQ(requests[0].Header("authorization"), "Bearer access-tok-old-5e8b");
  EXPECT_EQ(requests[2].Header("authorization"), "Bearer access-tok-new-5e8b");
  EXPECT_EQ(requests[5].Header("authorization"), "Bearer access-tok-newer-5e8b");
  ExpectNoSecret(second.error(),
                 {"access-tok-newer-5e8b", "client-secret-oauth-9d41", "refresh-token-oauth-77c0"});
}

TEST_F(AuthenticatorSessionTest, OAuthRetriesATransientRefreshFailureWithBackoff) {
  server_.Expect("POST", "/oauth/token", {.status = 503, .body = "down"});
  server_.Expect("POST", "/oauth/token", {.status = 429, .body = "slow"});
  server_.Expect("POST", "/oauth/token", {.status = 500, .body = "oops"});
  server_.Expect(
      "POST", "/oauth/token",
      LoopbackResponse::Json(R"({"access_token": "access-tok-9b33", "expires_in": 600})"));
  server_.Expect("GET", "/data", LoopbackResponse::Json("[]"));
  auto session = Session(Make(OAuth()));
  ASSERT_TRUE(session->Get(server_.url() + "/data").has_value());
  EXPECT_EQ(waits_, (std::vector<double>{1, 2, 4}));
}

TEST_F(AuthenticatorSessionTest, ARefusedRefreshNamesTheEndpointButNoSecret) {
  server_.Expect("POST", "/oauth/token",
                 LoopbackResponse::Json(R"({"error": "invalid_grant"})", 400));
  auto session = Session(Make(OAuth()));
  auto response = session->Get(server_.url() + "/data");
  ASSERT_FALSE(response.has_value());
  const Status& error = response.error();
  EXPECT_EQ(error.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(error.failure_class(), FailureClass::kSource);
  EXPECT_EQ(error.message(),
            "OAuth token refresh failed: HTTP request failed: POST " + server_.url() +
                R"(/oauth/token returned 400 Bad Request: {"error": "invalid_grant"})");
  ExpectNoSecret(error, {"client-secret-oauth-9d41", "refresh-token-oauth-77c0"});
  EXPECT_TRUE(waits_.empty());
}

TEST_F(AuthenticatorSessionTest, ARefreshAnswerWithoutTheTokenIsAnError) {
  server_.Expect("POST", "/oauth/token", LoopbackResponse::Json(R"({"token": "elsewhere"})"));
  server_.Expect("POST", "/oauth/token", {.status = 200, .body = "<html>"});
  auto session = Session(Make(OAuth()));
  auto missing = session->Get(server_.url() + "/data");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message(),
            "OAuth token refresh failed: the response has no 'access_token' field");
  auto invalid = session->Get(server_.url() + "/data");
  ASSERT_FALSE(invalid.has_value());
  EXPECT_EQ(invalid.error().message(),
            "OAuth token refresh failed: the token endpoint answered invalid JSON: <html>");
}

TEST_F(AuthenticatorSessionTest, OAuthReadsANestedTokenUnderItsOwnNames) {
  server_.Expect("POST", "/oauth/token", LoopbackResponse::Json(R"({"data": {
      "token": "nested-tok-f27a", "valid_until": "2999-06-01 12:00:00"}})"));
  server_.Expect("GET", "/data", LoopbackResponse::Json("[]"));
  auto authenticator = Make(OAuth(R"("grant_type": "client_credentials",
      "response_field_path": "data", "access_token_name": "token",
      "expires_in_name": "valid_until", "token_expiry_date_format": "%Y-%m-%d %H:%M:%S")"));
  auto session = Session(authenticator);
  ASSERT_TRUE(session->Get(server_.url() + "/data").has_value());
  std::vector<LoopbackRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(FormValues(requests[0].body, "grant_type"),
            std::vector<std::string>{"client_credentials"});
  EXPECT_EQ(requests[1].Header("authorization"), "Bearer nested-tok-f27a");
  std::tm expiry{};
  expiry.tm_year = 2999 - 1900;
  expiry.tm_mon = 5;
  expiry.tm_mday = 1;
  expiry.tm_hour = 12;
  int64_t expiry_us = static_cast<int64_t>(timegm(&expiry)) * 1'000'000;
  EXPECT_EQ(dynamic_cast<OAuth2Authenticator&>(*authenticator).refresh_at_us(),
            expiry_us - 60 * 1'000'000LL);
}

TEST_F(AuthenticatorSessionTest, AConnectorCanFixTheTokenEndpoint) {
  server_.Expect("POST", "/fixed/token",
                 LoopbackResponse::Json(R"({"access_token": "fixed-tok-0d6e", "expires_in": 60})"));
  server_.Expect("GET", "/data", LoopbackResponse::Json("[]"));
  auto session = Session(Make(OAuth(), {.token_refresh_endpoint = server_.url() + "/fixed/token"}));
  ASSERT_TRUE(session->Get(server_.url() + "/data").has_value());
  EXPECT_EQ(server_.requests()[1].Header("authorization"), "Bearer fixed-tok-0d6e");
}

TEST_F(AuthenticatorSessionTest, SkippingAuthenticationSendsNoCredentials) {
  server_.Expect("GET", "/public", LoopbackResponse::Json("{}"));
  auto session =
      Session(Make(Json(R"({"type": "bearer", "params": {"token": "bearer-tok-31f7"}})")));
  ASSERT_TRUE(session->Send({.url = server_.url() + "/public", .authenticate = false}).has_value());
  EXPECT_FALSE(OnlyRequest().Header("authorization").has_value());
}

TEST_F(AuthenticatorSessionTest, AFailedRequestNeverShowsTheCredential) {
  server_.Expect("GET", "/secret", {.status = 403, .body = "forbidden for this token"});
  auto session =
      Session(Make(Json(R"({"type": "bearer", "params": {"token": "bearer-tok-9e0a"}})")));
  auto response = session->Get(server_.url() + "/secret");
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(OnlyRequest().Header("authorization"), "Bearer bearer-tok-9e0a");
  ExpectNoSecret(response.error(), {"bearer-tok-9e0a"});
}

TEST(MakeAuthenticatorTest, NullMeansNoAuthenticator) {
  auto made = MakeAuthenticator(Value());
  ASSERT_TRUE(made.has_value());
  EXPECT_EQ(*made, nullptr);
}

TEST(MakeAuthenticatorTest, RefusesWhatItCannotBuild) {
  struct Case {
    std::string json;
    std::string message;
  };
  std::vector<Case> cases = {
      {R"("bearer")", "authentication must be a mapping"},
      {R"({"type": "digest"})",
       "authentication.type: expected one of oauth, api_key, bearer, basic, cookies, got 'digest'"},
      {R"({"type": "bearer", "params": {}})",
       "authentication.params.token is required for authentication type bearer"},
      {R"({"type": "api_key", "params": {"token": ""}})",
       "authentication.params.token is required for authentication type api_key"},
      {R"({"type": "basic", "params": {"password": "basic-pw-only-71aa"}})",
       "authentication.params.username is required for authentication type basic"},
      {R"({"type": "cookies", "params": {}})",
       "authentication.params.cookies is required for authentication type cookies"},
      {R"({"type": "oauth", "params": {"client_id": "i", "client_secret": "oauth-secret-only-3b2d"}})",
       "authentication.params.token_refresh_endpoint is required for authentication type oauth"},
      {R"({"type": "oauth", "params": {"token_refresh_endpoint": "http://127.0.0.1:9/t",
           "client_secret": "oauth-secret-only-3b2d"}})",
       "authentication.params.client_id is required for authentication type oauth"},
      {R"({"type": "oauth", "params": {"token_refresh_endpoint": "http://127.0.0.1:9/t",
           "client_id": "i"}})",
       "authentication.params.client_secret is required for authentication type oauth"},
  };
  for (const Case& test : cases) {
    auto made = MakeAuthenticator(Json(test.json));
    ASSERT_FALSE(made.has_value()) << test.json;
    EXPECT_EQ(made.error().code(), StatusCode::kInvalidArgument) << test.json;
    EXPECT_EQ(made.error().failure_class(), FailureClass::kConfig) << test.json;
    EXPECT_EQ(made.error().message(), test.message) << test.json;
    ExpectNoSecret(made.error(), {"basic-pw-only-71aa", "oauth-secret-only-3b2d"});
  }
}

TEST(MakeAuthenticatorTest, AConnectorLimitsTheTypes) {
  auto made = MakeAuthenticator(Json(R"({"type": "basic", "params": {"username": "u"}})"),
                                {.allowed_types = {"api_key", "bearer"}});
  ASSERT_FALSE(made.has_value());
  EXPECT_EQ(made.error().message(),
            "authentication.type: this source accepts api_key, bearer, got 'basic'");
}

}  // namespace
}  // namespace bizon
