// An HTTP/1.1 server on 127.0.0.1 for unit tests of the HTTP client and the API sources. It plays
// a script: each expected request (method and path) gets its scripted response, and every request
// is recorded (method, path, query, headers, body, the connection it came on) for the test to
// check against the API's documented shape. A request the script does not expect fails the test.
//
// Enough HTTP/1.1 for libcurl: requests with a Content-Length body, responses with Content-Length,
// persistent connections (several requests on one) unless a response says `Connection: close`.
// It can also answer late, truncate a body or hang up, for the client's timeout and read-error
// paths.
//
// Lifecycle: the server listens from construction to destruction, one thread per connection. The
// destructor fails the test for every scripted exchange that was never asked for.
//
// Thread-safety: Expect() and the accessors may be called while requests are being served.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "http/http_session.h"

namespace bizon::testing_support {

/// Decodes "a=1&b=x%20y+z" (a query string or a form body) into its pairs, in order.
QueryParams FormDecode(std::string_view text);

struct LoopbackRequest {
  std::string method;
  /// The request target as sent: path and query.
  std::string target;
  std::string path;
  /// The raw query string, without '?'.
  std::string query;
  /// Header names in lower case, in arrival order.
  HttpHeaders headers;
  std::string body;
  /// Which TCP connection it came on: 1 for the first the server accepted, and so on.
  int connection = 0;

  /// The first header named `name` (any case).
  std::optional<std::string> Header(std::string_view name) const;
  /// The query parameters, percent-decoded ('+' as a space), in order.
  QueryParams QueryParameters() const;
  /// The first query parameter named `name`, decoded.
  std::optional<std::string> QueryValue(std::string_view name) const;
};

struct LoopbackResponse {
  int status = 200;
  HttpHeaders headers;
  std::string body;
  /// How long the server waits, once it has read the request, before it answers.
  std::chrono::milliseconds delay{0};
  /// Ends the connection after this response (`Connection: close`).
  bool close = false;
  /// Announces the whole body but sends only its first half, then closes the connection.
  bool truncate = false;
  /// Closes the connection without answering.
  bool hang_up = false;

  /// A JSON body with Content-Type application/json.
  static LoopbackResponse Json(std::string body, int status = 200, HttpHeaders headers = {});
};

class LoopbackHttpServer {
 public:
  enum class Order {
    /// Requests must arrive in script order.
    kStrict,
    /// Each request takes the first unserved exchange with its method and path: for clients
    /// that send requests from several threads at once.
    kPerRoute,
  };

  explicit LoopbackHttpServer(Order order = Order::kStrict);
  ~LoopbackHttpServer();
  LoopbackHttpServer(const LoopbackHttpServer&) = delete;
  LoopbackHttpServer& operator=(const LoopbackHttpServer&) = delete;

  /// "http://127.0.0.1:<port>".
  std::string url() const;
  int port() const { return port_; }

  /// Scripts the next exchange: a request `method` `path` (no query) gets `response`.
  LoopbackHttpServer& Expect(std::string method, std::string path, LoopbackResponse response);
  /// Shorthand: a 200 JSON answer.
  LoopbackHttpServer& ExpectJson(std::string method, std::string path, std::string json);

  /// Every request received, in arrival order (unexpected ones included).
  std::vector<LoopbackRequest> requests() const;
  /// Scripted exchanges not asked for yet.
  size_t pending() const;
  /// TCP connections accepted so far.
  int connections() const;

 private:
  struct Exchange {
    std::string method;
    std::string path;
    LoopbackResponse response;
  };

  void Accept();
  void Serve(int fd, int connection);
  /// Records `request` and takes its scripted response; nullopt when it was not expected.
  std::optional<LoopbackResponse> Match(const LoopbackRequest& request);
  /// Waits for `fd` to become readable; false when the server is stopping.
  bool WaitReadable(int fd) const;
  /// Waits `delay`; false when the server is stopping.
  bool Pause(std::chrono::milliseconds delay) const;

  Order order_;
  int listen_fd_ = -1;
  int wake_read_ = -1;
  int wake_write_ = -1;
  int port_ = 0;
  std::thread acceptor_;

  mutable std::mutex mutex_;
  std::deque<Exchange> script_;
  std::vector<LoopbackRequest> requests_;
  std::vector<std::thread> workers_;
  int accepted_ = 0;
};

}  // namespace bizon::testing_support
