// HttpSession: the HTTP client sources talk through (libcurl underneath).
//
// One session per source. It keeps connections open between requests (one libcurl handle per
// concurrent caller, reused), negotiates HTTP/2 where the server offers it and accepts gzip,
// brotli and zstd bodies. Every request goes through the session's HttpPolicy (retries, timeouts,
// raise-for-status, see retry_policy.h) and its Authenticator.
//
// Thread-safety: Send() may be called from several threads at once (the notion source fetches
// blocks in parallel, the rest_api source a child resource's pages); each call borrows a handle
// of its own. A Retry-After the server sends to one of them pauses them all: every request the
// session sends while that wait is under way waits for its end first.
//
// Waits between retries go through `sleep`, which tests replace; the default sleeps for the wait
// multiplied by the environment variable BIZON_HTTP_BACKOFF_SCALE (default 1), which end-to-end
// tests set to a small value so a ten-retry policy runs in milliseconds. Log lines always show the
// policy's wait, not the scaled one.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bizon/status.h"
#include "http/retry_policy.h"
#include "http/url.h"

namespace bizon {

class Authenticator;

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method = "GET";
  /// Absolute URL; `query` is appended to it.
  std::string url;
  QueryParams query;
  HttpHeaders headers;
  std::string body;
  /// Per-request timeouts, instead of the policy's.
  std::optional<HttpTimeouts> timeouts;
  /// Per-request raise-for-status, instead of the policy's.
  std::optional<bool> raise_for_status;
  /// False skips the session's authenticator (token endpoints, pre-signed URLs).
  bool authenticate = true;
};

struct HttpResponse {
  int status = 0;
  /// Final URL, after redirects.
  std::string url;
  /// Header names in lower case, in arrival order.
  HttpHeaders headers;
  std::string body;
  /// How many times the request was sent.
  int attempts = 0;

  bool ok() const { return status >= 200 && status < 300; }
  /// First header named `name` (any case).
  std::optional<std::string_view> Header(std::string_view name) const;
};

/// Waits `seconds`; replaced in tests.
using HttpSleepFunction = std::function<void(double seconds)>;

/// Sleeps `seconds` × BIZON_HTTP_BACKOFF_SCALE.
void ScaledSleep(double seconds);

struct HttpSessionOptions {
  HttpPolicy policy;
  std::shared_ptr<Authenticator> authenticator;
  /// Sent with every request unless the request sets the same header.
  HttpHeaders default_headers;
  HttpSleepFunction sleep = ScaledSleep;
  /// false: every request opens its own connection and closes it after the answer. libcurl sends
  /// a request again by itself when a reused connection turns out dead before any answer, and
  /// fails with a send error when the server closes it while the request goes out; a protocol
  /// whose requests must not be repeated blindly (a resumable upload's chunks) turns this off.
  bool reuse_connections = true;
};

class HttpSession {
 public:
  explicit HttpSession(HttpSessionOptions options);
  ~HttpSession();
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;

  /// Sends `request`, retrying as the policy says. Fails (failure class source) when the server
  /// cannot be reached or read, or, with raise-for-status, when the final response is not 2xx:
  /// the error then names the method, URL, status and an excerpt of the last response body.
  Result<HttpResponse> Send(const HttpRequest& request);

  Result<HttpResponse> Get(std::string url, QueryParams query = {});
  /// POSTs `json` with Content-Type application/json.
  Result<HttpResponse> PostJson(std::string url, std::string json);

  const HttpPolicy& policy() const { return options_.policy; }
  const HttpSleepFunction& sleep() const { return options_.sleep; }

 private:
  struct Handle;
  struct Attempt;
  struct RetryState;

  std::unique_ptr<Handle> Borrow();
  void Return(std::unique_ptr<Handle> handle);
  /// Send's attempts, on one handle, until the policy stops retrying.
  Result<HttpResponse> SendWith(Handle& handle, const HttpRequest& request);
  /// One attempt: the authenticator's credentials, the transfer, and a debug line about it.
  Result<Attempt> SendOnce(Handle& handle, const HttpRequest& request, const std::string& method,
                           const std::string& url, RetryState& state);
  /// After a failed transfer: OK once the backoff is waited out when the policy retries it, else
  /// the error that ends the request.
  Status BackOffAfterFailure(const Attempt& attempt, const std::string& method,
                             const std::string& url, RetryState& state);
  /// After a response: true once the wait (its Retry-After, else the backoff) is over when the
  /// policy retries its status and the budgets allow another attempt.
  bool BackOffAfterStatus(const HttpResponse& response, const std::string& method,
                          const std::string& url, RetryState& state);
  Attempt Perform(Handle& handle, const HttpRequest& request, const std::string& url);
  /// Waits until every Retry-After wait under way in another call has ended.
  void WaitOutPauses();
  /// Waits `seconds` (a Retry-After) while the session's other requests wait too.
  void Pause(double seconds);

  HttpSessionOptions options_;
  std::mutex pause_mutex_;
  std::condition_variable pause_ended_;
  int pauses_ = 0;  // Retry-After waits under way.
  std::mutex pool_mutex_;
  std::vector<std::unique_ptr<Handle>> pool_;
};

/// The error for a final non-2xx response: "HTTP request failed: GET <url> returned 503 after 11
/// attempts: <body excerpt>". 429 and 5xx are kUnavailable (retry later), 4xx kFailedPrecondition.
Status HttpStatusError(std::string_view method, std::string_view url, const HttpResponse& response);

/// At most `limit` bytes of `body`, on one line, for error messages.
std::string BodyExcerpt(std::string_view body, size_t limit = 300);

}  // namespace bizon
