// HttpSession against a loopback HTTP/1.1 server: what goes out on the wire, connection reuse,
// the retry rules (statuses, Retry-After, backoff, budgets, methods, read and connect failures),
// timeouts, redirects, concurrent callers, and the errors once the retries run out. Waits go to a
// recording sleep, so the policies below run at full size without waiting.
#include "http/http_session.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "testing/loopback_http_server.h"

namespace bizon {
namespace {

using testing_support::LoopbackHttpServer;
using testing_support::LoopbackResponse;

// The waits a session asked for, in order.
class SleepLog {
 public:
  HttpSleepFunction Function() {
    return [this](double seconds) {
      std::lock_guard lock(mutex_);
      waits_.push_back(seconds);
    };
  }
  std::vector<double> waits() const {
    std::lock_guard lock(mutex_);
    return waits_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<double> waits_;
};

// The `http: {}` policy with a backoff factor of 0.5 and `total` retries.
HttpPolicy ConfiguredPolicy(int total) {
  HttpPolicy policy;
  policy.configured = true;
  policy.timeouts = {.connect_s = 5, .read_s = 10};
  policy.retries = RetryPolicy();
  policy.retries.total = total;
  policy.retries.backoff_factor = 0.5;
  return policy;
}

LoopbackResponse Answer(int status, std::string body = "", HttpHeaders headers = {}) {
  return {.status = status, .headers = std::move(headers), .body = std::move(body)};
}

// A port on 127.0.0.1 that nothing listens on (bound once, then released).
int ClosedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  ::close(fd);
  return ntohs(address.sin_port);
}

class HttpSessionTest : public testing::Test {
 protected:
  HttpSession Session(HttpPolicy policy, HttpHeaders default_headers = {},
                      bool reuse_connections = true) {
    return HttpSession(HttpSessionOptions{.policy = std::move(policy),
                                          .default_headers = std::move(default_headers),
                                          .sleep = sleeps_.Function(),
                                          .reuse_connections = reuse_connections});
  }

  LoopbackHttpServer server_;
  SleepLog sleeps_;
};

TEST_F(HttpSessionTest, SendsTheRequestAndReadsTheAnswer) {
  server_.Expect("GET", "/v1/items",
                 LoopbackResponse::Json(R"({"items": [1, 2]})", 200, {{"X-Rate-Remaining", "41"}}));
  HttpSession session =
      Session(ConfiguredPolicy(3), {{"Accept", "application/json"}, {"X-Client", "default"}});
  auto response = session.Send({.url = server_.url() + "/v1/items",
                                .query = {{"q", "a b&c"}, {"page", "2"}},
                                .headers = {{"x-client", "request"}}});
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(response->ok());
  EXPECT_EQ(response->body, R"({"items": [1, 2]})");
  EXPECT_EQ(response->attempts, 1);
  EXPECT_EQ(response->url, server_.url() + "/v1/items?q=a%20b%26c&page=2");
  EXPECT_EQ(response->Header("X-RATE-REMAINING"), "41");
  EXPECT_EQ(response->Header("content-type"), "application/json");
  EXPECT_FALSE(response->Header("x-absent").has_value());

  std::vector<testing_support::LoopbackRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 1u);
  const auto& request = requests[0];
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.path, "/v1/items");
  EXPECT_EQ(request.QueryValue("q"), "a b&c");
  EXPECT_EQ(request.QueryValue("page"), "2");
  EXPECT_EQ(request.Header("accept"), "application/json");
  // The request's own header replaces the session's default of the same name (any case).
  int client_headers = 0;
  for (const auto& [name, value] : request.headers) client_headers += name == "x-client";
  EXPECT_EQ(client_headers, 1);
  EXPECT_EQ(request.Header("x-client"), "request");
  EXPECT_EQ(request.Header("user-agent"), "bizon/" BIZON_VERSION);
  EXPECT_NE(request.Header("accept-encoding").value_or("").find("gzip"), std::string::npos);
  EXPECT_FALSE(request.Header("expect").has_value());
  EXPECT_TRUE(request.body.empty());
  EXPECT_TRUE(sleeps_.waits().empty());
}

TEST_F(HttpSessionTest, PostJsonSendsTheBodyWithItsContentType) {
  server_.Expect("POST", "/v1/search", Answer(201, "created"));
  HttpSession session = Session(ConfiguredPolicy(0));
  auto response = session.PostJson(server_.url() + "/v1/search", R"({"query":"élan"})");
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  EXPECT_EQ(response->status, 201);
  EXPECT_EQ(response->body, "created");
  auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].body, R"({"query":"élan"})");
  EXPECT_EQ(requests[0].Header("content-type"), "application/json");
  EXPECT_EQ(requests[0].Header("content-length"), std::to_string(requests[0].body.size()));
}

TEST_F(HttpSessionTest, OtherMethodsCarryTheirBody) {
  server_.Expect("PATCH", "/v1/pages/p1", Answer(200, "patched"));
  HttpSession session = Session(ConfiguredPolicy(0));
  auto response = session.Send(
      {.method = "patch", .url = server_.url() + "/v1/pages/p1", .body = R"({"archived":true})"});
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  ASSERT_EQ(server_.requests().size(), 1u);
  EXPECT_EQ(server_.requests()[0].body, R"({"archived":true})");
}

TEST_F(HttpSessionTest, SequentialRequestsShareOneConnection) {
  for (int i = 0; i < 3; ++i) server_.Expect("GET", "/ping", Answer(200, "pong"));
  HttpSession session = Session(ConfiguredPolicy(0));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(session.Get(server_.url() + "/ping").has_value());
  EXPECT_EQ(server_.connections(), 1);
  for (const auto& request : server_.requests()) EXPECT_EQ(request.connection, 1);
}

TEST_F(HttpSessionTest, WithoutReuseEachRequestHasItsOwnConnection) {
  for (int i = 0; i < 3; ++i) server_.Expect("GET", "/ping", Answer(200, "pong"));
  HttpSession session = Session(ConfiguredPolicy(0), {}, /*reuse_connections=*/false);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(session.Get(server_.url() + "/ping").has_value());
  EXPECT_EQ(server_.connections(), 3);
}

TEST_F(HttpSessionTest, AConnectionTheServerClosesIsReplaced) {
  server_.Expect("GET", "/a", {.status = 200, .body = "first", .close = true});
  server_.Expect("GET", "/b", Answer(200, "second"));
  HttpSession session = Session(ConfiguredPolicy(0));
  ASSERT_TRUE(session.Get(server_.url() + "/a").has_value());
  auto second = session.Get(server_.url() + "/b");
  ASSERT_TRUE(second.has_value()) << second.error().ToString();
  EXPECT_EQ(second->body, "second");
  EXPECT_EQ(server_.connections(), 2);
}

TEST_F(HttpSessionTest, RetryAfterIsHonouredUpToItsCap) {
  server_.Expect("GET", "/limited", Answer(429, "slow down", {{"Retry-After", "7"}}));
  server_.Expect("GET", "/limited", Answer(503, "busy", {{"Retry-After", "600"}}));
  server_.Expect("GET", "/limited", Answer(200, "done"));
  HttpSession session = Session(ConfiguredPolicy(5));  // retry_after_max 120
  auto response = session.Get(server_.url() + "/limited");
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  EXPECT_EQ(response->body, "done");
  EXPECT_EQ(response->attempts, 3);
  EXPECT_EQ(sleeps_.waits(), (std::vector<double>{7, 120}));
}

TEST_F(HttpSessionTest, RetryAfterOfZeroFallsBackToTheBackoff) {
  server_.Expect("GET", "/limited", Answer(503, "", {{"Retry-After", "0"}}));
  server_.Expect("GET", "/limited", Answer(503, "", {{"Retry-After", "0"}}));
  server_.Expect("GET", "/limited", Answer(200, "done"));
  HttpSession session = Session(ConfiguredPolicy(5));
  ASSERT_TRUE(session.Get(server_.url() + "/limited").has_value());
  // backoff_factor 0.5: none before the first retry, then 0.5 * 2.
  EXPECT_EQ(sleeps_.waits(), (std::vector<double>{0, 1}));
}

TEST_F(HttpSessionTest, BackoffGrowsWithConsecutiveFailures) {
  for (int status : {500, 502, 504, 520}) server_.Expect("GET", "/flaky", Answer(status));
  server_.Expect("GET", "/flaky", Answer(200, "ok"));
  HttpSession session = Session(ConfiguredPolicy(4));
  auto response = session.Get(server_.url() + "/flaky");
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  EXPECT_EQ(response->attempts, 5);
  EXPECT_EQ(sleeps_.waits(), (std::vector<double>{0, 1, 2, 4}));
}

TEST_F(HttpSessionTest, GivesUpAfterTheRetriesWithTheLastAnswer) {
  server_.Expect("GET", "/down", Answer(503, "first"));
  server_.Expect("GET", "/down", Answer(503, "second"));
  server_.Expect("GET", "/down", Answer(503, "{\"error\":\n\"still down\"}"));
  HttpSession session = Session(ConfiguredPolicy(2));
  auto response = session.Get(server_.url() + "/down", {{"page", "3"}});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(response.error().failure_class(), FailureClass::kSource);
  EXPECT_EQ(response.error().message(),
            "HTTP request failed after 3 attempts: GET " + server_.url() +
                "/down?page=3 returned 503 Service Unavailable: {\"error\": \"still down\"}");
  EXPECT_EQ(server_.requests().size(), 3u);
}

TEST_F(HttpSessionTest, AClientErrorFailsAtOnce) {
  server_.Expect("GET", "/missing", Answer(404, "no such thing"));
  HttpSession session = Session(ConfiguredPolicy(5));
  auto response = session.Get(server_.url() + "/missing");
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(response.error().message(), "HTTP request failed: GET " + server_.url() +
                                            "/missing returned 404 Not Found: no such thing");
  EXPECT_TRUE(sleeps_.waits().empty());
}

TEST_F(HttpSessionTest, WithoutRaiseForStatusTheAnswerComesBack) {
  server_.Expect("GET", "/missing", Answer(404, "no such thing"));
  HttpSession session = Session(ConfiguredPolicy(5));
  auto response = session.Send({.url = server_.url() + "/missing", .raise_for_status = false});
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  EXPECT_EQ(response->status, 404);
  EXPECT_FALSE(response->ok());
  EXPECT_EQ(response->body, "no such thing");
}

TEST_F(HttpSessionTest, TheLegacyPolicyRetriesOnlyWithRetryAfter) {
  HttpPolicy legacy;  // No `http` block: the historical policy.
  server_.Expect("GET", "/a", Answer(429, "", {{"Retry-After", "3"}}));
  server_.Expect("GET", "/a", Answer(200, "ok"));
  server_.Expect("GET", "/b", Answer(429, "daily limit"));
  server_.Expect("GET", "/c", Answer(500, "boom", {{"Retry-After", "3"}}));
  HttpSession session = Session(legacy);
  ASSERT_TRUE(session.Get(server_.url() + "/a").has_value());
  auto limited = session.Get(server_.url() + "/b");
  ASSERT_FALSE(limited.has_value());
  EXPECT_EQ(limited.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(limited.error().message(), "HTTP request failed: GET " + server_.url() +
                                           "/b returned 429 Too Many Requests: daily limit");
  auto failed = session.Get(server_.url() + "/c");
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().message(), "HTTP request failed: GET " + server_.url() +
                                          "/c returned 500 Internal Server Error: boom");
  EXPECT_EQ(sleeps_.waits(), (std::vector<double>{3}));
}

// A Retry-After answered to one caller holds back the session's other callers until its wait is
// over (the rest_api source's parallel child requests); a plain backoff does not.
TEST(HttpSessionPauseTest, ARetryAfterHoldsBackTheSessionsOtherRequests) {
  LoopbackHttpServer server(LoopbackHttpServer::Order::kPerRoute);
  server.Expect("GET", "/a", Answer(429, "", {{"Retry-After", "5"}}));
  server.Expect("GET", "/a", Answer(200, "a"));
  server.Expect("GET", "/b", Answer(200, "b"));
  std::mutex mutex;
  std::condition_variable changed;
  bool paused = false;
  bool released = false;
  HttpSession session(HttpSessionOptions{.policy = ConfiguredPolicy(3), .sleep = [&](double) {
                                           std::unique_lock lock(mutex);
                                           paused = true;
                                           changed.notify_all();
                                           changed.wait(lock, [&] { return released; });
                                         }});
  std::thread first([&] { EXPECT_TRUE(session.Get(server.url() + "/a").has_value()); });
  {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return paused; });
  }
  std::atomic<bool> second_done{false};
  std::thread second([&] {
    EXPECT_TRUE(session.Get(server.url() + "/b").has_value());
    second_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(second_done.load());
  EXPECT_EQ(server.requests().size(), 1u);  // The 429 only: /b waits for the pause.
  {
    std::lock_guard lock(mutex);
    released = true;
  }
  changed.notify_all();
  first.join();
  second.join();
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST_F(HttpSessionTest, TheStatusBudgetEndsStatusRetries) {
  HttpPolicy policy = ConfiguredPolicy(10);
  policy.retries.status_budget = 1;
  server_.Expect("GET", "/busy", Answer(503));
  server_.Expect("GET", "/busy", Answer(503, "again"));
  HttpSession session = Session(policy);
  auto response = session.Get(server_.url() + "/busy");
  ASSERT_FALSE(response.has_value());
  EXPECT_NE(response.error().message().find("after 2 attempts"), std::string::npos)
      << response.error().message();
}

TEST_F(HttpSessionTest, MethodsOutsideTheAllowedOnesAreNotRetried) {
  server_.Expect("DELETE", "/v1/item", Answer(503, "busy"));
  HttpSession session = Session(ConfiguredPolicy(5));
  auto response = session.Send({.method = "DELETE", .url = server_.url() + "/v1/item"});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().message(), "HTTP request failed: DELETE " + server_.url() +
                                            "/v1/item returned 503 Service Unavailable: busy");
}

TEST_F(HttpSessionTest, ATruncatedBodyIsARetriedReadFailure) {
  server_.Expect("GET", "/page", {.status = 200, .body = "0123456789abcdef", .truncate = true});
  server_.Expect("GET", "/page", Answer(200, "0123456789abcdef"));
  HttpSession session = Session(ConfiguredPolicy(3));
  auto response = session.Get(server_.url() + "/page");
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  EXPECT_EQ(response->body, "0123456789abcdef");
  EXPECT_EQ(response->attempts, 2);
  EXPECT_EQ(sleeps_.waits(), (std::vector<double>{0}));
}

TEST_F(HttpSessionTest, ATruncatedBodyFailsMethodsThatAreNotRetried) {
  server_.Expect("PUT", "/upload", {.status = 200, .body = "0123456789abcdef", .truncate = true});
  HttpSession session = Session(ConfiguredPolicy(3));
  auto response = session.Send({.method = "PUT", .url = server_.url() + "/upload", .body = "x"});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(response.error().failure_class(), FailureClass::kSource);
  const std::string& message = response.error().message();
  EXPECT_EQ(
      message.rfind("HTTP request failed: PUT " + server_.url() + "/upload: truncated body", 0), 0u)
      << message;
}

TEST_F(HttpSessionTest, AnAnswerlessHangUpIsRetried) {
  server_.Expect("GET", "/page", {.hang_up = true});
  server_.Expect("GET", "/page", Answer(200, "here"));
  HttpSession session = Session(ConfiguredPolicy(3));
  auto response = session.Get(server_.url() + "/page");
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  EXPECT_EQ(response->body, "here");
  EXPECT_EQ(server_.requests().size(), 2u);
}

TEST_F(HttpSessionTest, ASilentServerHitsTheReadTimeout) {
  server_.Expect("GET", "/slow", {.status = 200, .body = "late", .delay = std::chrono::seconds(5)});
  HttpPolicy policy = ConfiguredPolicy(0);
  policy.timeouts.read_s = 0.3;
  HttpSession session = Session(policy);
  auto started = std::chrono::steady_clock::now();
  auto response = session.Get(server_.url() + "/slow");
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(response.error().message(), "HTTP request failed: GET " + server_.url() +
                                            "/slow: read timed out (no data for 0.3 s)");
  EXPECT_LT(elapsed, 4.0);
}

TEST_F(HttpSessionTest, APerRequestTimeoutReplacesThePolicys) {
  server_.Expect("GET", "/slow", {.status = 200, .body = "late", .delay = std::chrono::seconds(5)});
  HttpSession session = Session(ConfiguredPolicy(0));  // read timeout 10 s
  auto response =
      session.Send({.url = server_.url() + "/slow", .timeouts = HttpTimeouts{.read_s = 0.2}});
  ASSERT_FALSE(response.has_value());
  EXPECT_NE(response.error().message().find("read timed out (no data for 0.2 s)"),
            std::string::npos)
      << response.error().message();
}

TEST_F(HttpSessionTest, AnUnreachableServerIsRetriedThenNamed) {
  std::string url = "http://127.0.0.1:" + std::to_string(ClosedPort()) + "/v1/users";
  HttpSession session = Session(ConfiguredPolicy(2));
  auto response = session.Get(url);
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(response.error().failure_class(), FailureClass::kSource);
  EXPECT_EQ(response.error().message().rfind(
                "HTTP request failed after 3 attempts: GET " + url + ": ", 0),
            0u)
      << response.error().message();
  EXPECT_EQ(sleeps_.waits(), (std::vector<double>{0, 1}));
}

TEST_F(HttpSessionTest, RedirectsAreFollowed) {
  server_.Expect("GET", "/old", Answer(302, "", {{"Location", "/new?x=1"}}));
  server_.Expect("GET", "/new", Answer(200, "moved here"));
  HttpSession session = Session(ConfiguredPolicy(0));
  auto response = session.Get(server_.url() + "/old");
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  EXPECT_EQ(response->body, "moved here");
  EXPECT_EQ(response->url, server_.url() + "/new?x=1");
  EXPECT_EQ(server_.requests()[1].QueryValue("x"), "1");
}

TEST(HttpSessionConcurrencyTest, CallersOnSeveralThreadsEachGetTheirAnswer) {
  constexpr int kThreads = 6;
  constexpr int kRequestsEach = 4;
  LoopbackHttpServer server(LoopbackHttpServer::Order::kPerRoute);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kRequestsEach; ++i) {
      server.Expect("GET", "/item/" + std::to_string(t), Answer(200, "item " + std::to_string(t)));
    }
  }
  HttpSession session(HttpSessionOptions{.policy = ConfiguredPolicy(0)});
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRequestsEach; ++i) {
        auto response = session.Get(server.url() + "/item/" + std::to_string(t));
        if (!response) {
          failures[static_cast<size_t>(t)] = response.error().ToString();
        } else if (response->body != "item " + std::to_string(t)) {
          failures[static_cast<size_t>(t)] = "wrong body: " + response->body;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& failure : failures) EXPECT_EQ(failure, "");
  EXPECT_EQ(server.requests().size(), static_cast<size_t>(kThreads * kRequestsEach));
  EXPECT_LE(server.connections(), kThreads);
}

TEST(HttpStatusErrorTest, CodesSayWhetherToRetry) {
  HttpResponse response{.status = 429, .body = "limited", .attempts = 1};
  EXPECT_EQ(HttpStatusError("GET", "http://h/x", response).code(), StatusCode::kUnavailable);
  response.status = 502;
  EXPECT_EQ(HttpStatusError("GET", "http://h/x", response).code(), StatusCode::kUnavailable);
  response.status = 403;
  Status forbidden = HttpStatusError("POST", "http://h/x", response);
  EXPECT_EQ(forbidden.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(forbidden.failure_class(), FailureClass::kSource);
  EXPECT_EQ(forbidden.message(),
            "HTTP request failed: POST http://h/x returned 403 Forbidden: limited");
  response.status = 418;
  response.body.clear();
  response.attempts = 4;
  EXPECT_EQ(HttpStatusError("GET", "http://h/x", response).message(),
            "HTTP request failed after 4 attempts: GET http://h/x returned 418");
}

TEST(BodyExcerptTest, OneLineAndBounded) {
  EXPECT_EQ(BodyExcerpt("a\nb\r\tc"), "a b  c");
  EXPECT_EQ(BodyExcerpt(std::string(10, 'x'), 4), "xxxx...");
  EXPECT_EQ(BodyExcerpt("abcd", 4), "abcd");
  EXPECT_EQ(BodyExcerpt(std::string(400, 'y')).size(), 303u);
}

}  // namespace
}  // namespace bizon
