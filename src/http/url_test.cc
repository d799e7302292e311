#include "http/url.h"

#include <gtest/gtest.h>

#include "http/authenticator.h"

namespace bizon {
namespace {

TEST(UrlTest, EncodesAndAppendsQueries) {
  EXPECT_EQ(PercentEncode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
  EXPECT_EQ(FormEncode({{"grant_type", "refresh_token"}, {"scope", "a,b"}}),
            "grant_type=refresh_token&scope=a%2Cb");
  EXPECT_EQ(AppendQuery("http://h/p", {{"limit", "5"}}), "http://h/p?limit=5");
  EXPECT_EQ(AppendQuery("http://h/p?x=1", {{"limit", "5"}}), "http://h/p?x=1&limit=5");
  EXPECT_EQ(AppendQuery("http://h/p", {}), "http://h/p");
}

TEST(UrlTest, JoinsBaseAndPath) {
  EXPECT_EQ(JoinUrl("https://pokeapi.co/api/v2", "pokemon"), "https://pokeapi.co/api/v2/pokemon");
  EXPECT_EQ(JoinUrl("https://pokeapi.co/api/v2/", "/pokemon"), "https://pokeapi.co/api/v2/pokemon");
  EXPECT_EQ(JoinUrl("https://a/b", "http://other/x"), "http://other/x");
}

TEST(UrlTest, ResolvesReferences) {
  EXPECT_EQ(ResolveUrl("http://h:1/a/b?x=1", "https://o/p"), "https://o/p");
  EXPECT_EQ(ResolveUrl("http://h:1/a/b?x=1", "/c?page=2"), "http://h:1/c?page=2");
  EXPECT_EQ(ResolveUrl("http://h:1/a/b?x=1", "?page=2"), "http://h:1/a/b?page=2");
  EXPECT_EQ(ResolveUrl("http://h:1/a/b?x=1", "c"), "http://h:1/a/c");
  EXPECT_EQ(ResolveUrl("http://h:1", "c"), "http://h:1/c");
  EXPECT_EQ(ResolveUrl("https://h/a", "//o/p"), "https://o/p");
}

TEST(UrlTest, FindsTheNextLink) {
  std::string header =
      R"(<https://api.github.com/x?page=1>; rel="prev", <https://api.github.com/x?page=3>; rel="next", <https://api.github.com/x?page=9>; rel="last")";
  EXPECT_EQ(FindLink(header), "https://api.github.com/x?page=3");
  EXPECT_EQ(FindLink(header, "last"), "https://api.github.com/x?page=9");
  EXPECT_EQ(FindLink("<https://h/2>; rel=next"), "https://h/2");
  EXPECT_EQ(FindLink(R"(<https://h/2>; type="a"; rel="next prefetch")"), "https://h/2");
  EXPECT_FALSE(FindLink(R"(<https://h/1>; rel="prev")").has_value());
  EXPECT_FALSE(FindLink("").has_value());
}

TEST(AuthenticatorTest, HeadersOfTheSimpleBuilders) {
  EXPECT_EQ(Base64Encode("user:pass"), "dXNlcjpwYXNz");
  EXPECT_EQ(Base64Encode("a"), "YQ==");
  EXPECT_EQ(Base64Encode("ab"), "YWI=");

  auto token = MakeAuthenticator(
      *Value::FromJson(R"({"type": "api_key", "params": {"token": "tok-123456"}})"));
  ASSERT_TRUE(token.has_value());
  HttpRequest request;
  ASSERT_TRUE((*token)->Apply(request).ok());
  ASSERT_EQ(request.headers.size(), 1u);
  EXPECT_EQ(request.headers[0],
            (std::pair<std::string, std::string>{"Authorization", "Bearer tok-123456"}));

  auto bare = MakeAuthenticator(*Value::FromJson(
      R"({"type": "bearer", "params": {"token": "t0k3n", "auth_method": "", "auth_header": "X-Key"}})"));
  HttpRequest bare_request;
  ASSERT_TRUE((*bare)->Apply(bare_request).ok());
  EXPECT_EQ(bare_request.headers[0], (std::pair<std::string, std::string>{"X-Key", "t0k3n"}));

  auto shorthand =
      MakeAuthenticator(*Value::FromJson(R"({"type": "api_key", "api_key": "k3y-k3y"})"));
  ASSERT_TRUE(shorthand.has_value());

  auto basic = MakeAuthenticator(
      *Value::FromJson(R"({"type": "basic", "params": {"username": "user", "password": "pass"}})"));
  HttpRequest basic_request;
  ASSERT_TRUE((*basic)->Apply(basic_request).ok());
  EXPECT_EQ(basic_request.headers[0].second, "Basic dXNlcjpwYXNz");

  auto cookies = MakeAuthenticator(*Value::FromJson(
      R"({"type": "cookies", "params": {"cookies": {"session": "s1", "csrf": "c2"}, "headers": {"X-Csrf": "c2"}}})"));
  HttpRequest cookie_request;
  ASSERT_TRUE((*cookies)->Apply(cookie_request).ok());
  ASSERT_EQ(cookie_request.headers.size(), 2u);
  EXPECT_EQ(cookie_request.headers[0].second, "session=s1; csrf=c2");
  EXPECT_EQ(cookie_request.headers[1].first, "X-Csrf");
}

TEST(AuthenticatorTest, RejectsMissingParamsAndDisallowedTypes) {
  auto missing = MakeAuthenticator(*Value::FromJson(R"({"type": "api_key", "params": {}})"));
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("params.token is required"), std::string::npos);

  auto disallowed =
      MakeAuthenticator(*Value::FromJson(R"({"type": "basic", "params": {"username": "u"}})"),
                        {.allowed_types = {"api_key", "bearer"}});
  ASSERT_FALSE(disallowed.has_value());
  EXPECT_NE(disallowed.error().message().find("accepts api_key, bearer"), std::string::npos);

  auto none = MakeAuthenticator(Value());
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(*none, nullptr);
}

}  // namespace
}  // namespace bizon
