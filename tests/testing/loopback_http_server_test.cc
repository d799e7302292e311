// The loopback server's own promises, the ones the HTTP tests rely on to fail: a request off the
// script fails the test, and so does a scripted exchange never asked for.
#include "testing/loopback_http_server.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "http/http_session.h"

namespace bizon {
namespace {

using testing_support::FormDecode;
using testing_support::LoopbackHttpServer;

HttpSession PlainSession() {
  HttpPolicy policy;
  policy.retries.total = 0;
  policy.raise_for_status = false;
  return HttpSession(HttpSessionOptions{.policy = policy});
}

TEST(LoopbackHttpServerTest, ARequestOffTheScriptFailsTheTest) {
  EXPECT_NONFATAL_FAILURE_ON_ALL_THREADS(
      {
        LoopbackHttpServer server;
        HttpSession session = PlainSession();
        auto response = session.Get(server.url() + "/surprise", {{"x", "1"}});
        ASSERT_TRUE(response.has_value());
        EXPECT_EQ(response->status, 404);
      },
      "unexpected request GET /surprise?x=1 (expected no more requests)");
}

TEST(LoopbackHttpServerTest, ARequestInTheWrongOrderFailsTheTest) {
  EXPECT_NONFATAL_FAILURE_ON_ALL_THREADS(
      {
        LoopbackHttpServer server;
        server.ExpectJson("GET", "/first", "{}");
        HttpSession session = PlainSession();
        ASSERT_TRUE(session.Get(server.url() + "/second").has_value());
        ASSERT_TRUE(session.Get(server.url() + "/first").has_value());
      },
      "unexpected request GET /second (expected GET /first)");
}

TEST(LoopbackHttpServerTest, AScriptedRequestThatNeverCameFailsTheTest) {
  EXPECT_NONFATAL_FAILURE(
      {
        LoopbackHttpServer server;
        server.ExpectJson("POST", "/v1/search", "{}");
      },
      "the scripted request POST /v1/search never came");
}

TEST(LoopbackHttpServerTest, PerRouteOrderServesEachRouteInScriptOrder) {
  LoopbackHttpServer server(LoopbackHttpServer::Order::kPerRoute);
  server.Expect("GET", "/a", {.body = "a1"});
  server.Expect("GET", "/b", {.body = "b1"});
  server.Expect("GET", "/a", {.body = "a2"});
  HttpSession session = PlainSession();
  EXPECT_EQ(session.Get(server.url() + "/b")->body, "b1");
  EXPECT_EQ(session.Get(server.url() + "/a")->body, "a1");
  EXPECT_EQ(session.Get(server.url() + "/a")->body, "a2");
  EXPECT_EQ(server.pending(), 0u);
}

TEST(FormDecodeTest, DecodesPairsInOrder) {
  EXPECT_EQ(FormDecode("a=1&b=x%20y+z&c=&d&&e=%2F%3d"),
            (QueryParams{{"a", "1"}, {"b", "x y z"}, {"c", ""}, {"d", ""}, {"e", "/="}}));
  EXPECT_EQ(FormDecode("bad=%zz%4"), (QueryParams{{"bad", "%zz%4"}}));
  EXPECT_TRUE(FormDecode("").empty());
}

}  // namespace
}  // namespace bizon
