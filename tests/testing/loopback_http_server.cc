#include "testing/loopback_http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace bizon::testing_support {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::string PercentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+') {
      out.push_back(' ');
    } else if (c == '%' && i + 2 < text.size() && HexDigit(text[i + 1]) >= 0 &&
               HexDigit(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexDigit(text[i + 1]) * 16 + HexDigit(text[i + 2])));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(sent));
  }
  return true;
}

// The status line and headers of `response`, announcing `body_size` bytes. The status line has
// no reason phrase (RFC 9112 makes it optional): clients must not depend on one.
std::string ResponseHead(const LoopbackResponse& response, size_t body_size) {
  std::string head = "HTTP/1.1 " + std::to_string(response.status) + " \r\n";
  for (const auto& [name, value] : response.headers) head += name + ": " + value + "\r\n";
  head += "Content-Length: " + std::to_string(body_size) + "\r\n";
  if (response.close || response.truncate) head += "Connection: close\r\n";
  head += "\r\n";
  return head;
}

}  // namespace

QueryParams FormDecode(std::string_view text) {
  QueryParams params;
  while (!text.empty()) {
    size_t amp = text.find('&');
    std::string_view pair = text.substr(0, amp);
    text = amp == std::string_view::npos ? std::string_view() : text.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      params.emplace_back(PercentDecode(pair), "");
    } else {
      params.emplace_back(PercentDecode(pair.substr(0, eq)), PercentDecode(pair.substr(eq + 1)));
    }
  }
  return params;
}

std::optional<std::string> LoopbackRequest::Header(std::string_view name) const {
  std::string wanted = Lower(name);
  for (const auto& [key, value] : headers) {
    if (key == wanted) return value;
  }
  return std::nullopt;
}

QueryParams LoopbackRequest::QueryParameters() const { return FormDecode(query); }

std::optional<std::string> LoopbackRequest::QueryValue(std::string_view name) const {
  for (auto& [key, value] : QueryParameters()) {
    if (key == name) return value;
  }
  return std::nullopt;
}

LoopbackResponse LoopbackResponse::Json(std::string body, int status, HttpHeaders headers) {
  headers.emplace_back("Content-Type", "application/json");
  return {.status = status, .headers = std::move(headers), .body = std::move(body)};
}

LoopbackHttpServer::LoopbackHttpServer(Order order) : order_(order) {
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    ADD_FAILURE() << "loopback server: pipe2: " << std::strerror(errno);
    return;
  }
  wake_read_ = wake[0];
  wake_write_ = wake[1];
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;  // An ephemeral port.
  socklen_t length = sizeof(address);
  if (listen_fd_ < 0 ||
      ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ADD_FAILURE() << "loopback server: cannot listen on 127.0.0.1: " << std::strerror(errno);
    return;
  }
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { Accept(); });
}

LoopbackHttpServer::~LoopbackHttpServer() {
  if (wake_write_ >= 0) {
    char byte = 1;
    // A full pipe already wakes every waiter, so a failed write changes nothing.
    [[maybe_unused]] ssize_t written = ::write(wake_write_, &byte, 1);
  }
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mutex_);
    workers.swap(workers_);
  }
  for (std::thread& worker : workers) worker.join();
  for (int fd : {listen_fd_, wake_read_, wake_write_}) {
    if (fd >= 0) ::close(fd);
  }
  std::lock_guard lock(mutex_);
  for (const Exchange& exchange : script_) {
    ADD_FAILURE() << "loopback server: the scripted request " << exchange.method << " "
                  << exchange.path << " never came";
  }
}

std::string LoopbackHttpServer::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

LoopbackHttpServer& LoopbackHttpServer::Expect(std::string method, std::string path,
                                               LoopbackResponse response) {
  std::lock_guard lock(mutex_);
  script_.push_back({std::move(method), std::move(path), std::move(response)});
  return *this;
}

LoopbackHttpServer& LoopbackHttpServer::ExpectJson(std::string method, std::string path,
                                                   std::string json) {
  return Expect(std::move(method), std::move(path), LoopbackResponse::Json(std::move(json)));
}

std::vector<LoopbackRequest> LoopbackHttpServer::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

size_t LoopbackHttpServer::pending() const {
  std::lock_guard lock(mutex_);
  return script_.size();
}

int LoopbackHttpServer::connections() const {
  std::lock_guard lock(mutex_);
  return accepted_;
}

bool LoopbackHttpServer::WaitReadable(int fd) const {
  while (true) {
    pollfd fds[2] = {{.fd = wake_read_, .events = POLLIN, .revents = 0},
                     {.fd = fd, .events = POLLIN, .revents = 0}};
    int ready = ::poll(fds, 2, -1);
    if (ready < 0 && errno == EINTR) continue;
    return ready > 0 && fds[0].revents == 0 && fds[1].revents != 0;
  }
}

bool LoopbackHttpServer::Pause(std::chrono::milliseconds delay) const {
  if (delay.count() <= 0) return true;
  pollfd wake{.fd = wake_read_, .events = POLLIN, .revents = 0};
  int ready;
  while ((ready = ::poll(&wake, 1, static_cast<int>(delay.count()))) < 0 && errno == EINTR) {
  }
  return ready == 0;
}

void LoopbackHttpServer::Accept() {
  while (WaitReadable(listen_fd_)) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard lock(mutex_);
    int connection = ++accepted_;
    workers_.emplace_back([this, fd, connection] { Serve(fd, connection); });
  }
}

std::optional<LoopbackResponse> LoopbackHttpServer::Match(const LoopbackRequest& request) {
  std::lock_guard lock(mutex_);
  requests_.push_back(request);
  auto same_route = [&](const Exchange& exchange) {
    return exchange.method == request.method && exchange.path == request.path;
  };
  auto found =
      order_ == Order::kStrict
          ? (script_.empty() || !same_route(script_.front()) ? script_.end() : script_.begin())
          : std::find_if(script_.begin(), script_.end(), same_route);
  if (found == script_.end()) {
    std::string expected = script_.empty() ? std::string("no more requests")
                                           : script_.front().method + " " + script_.front().path;
    ADD_FAILURE() << "loopback server: unexpected request " << request.method << " "
                  << request.target << " (expected " << expected << ")";
    return std::nullopt;
  }
  LoopbackResponse response = std::move(found->response);
  script_.erase(found);
  return response;
}

void LoopbackHttpServer::Serve(int fd, int connection) {
  std::string buffer;
  // Reads until `buffer` holds at least `size` bytes; false when the client or the server ends.
  auto fill = [&](size_t size) {
    char chunk[16384];
    while (buffer.size() < size) {
      if (!WaitReadable(fd)) return false;
      ssize_t got = ::recv(fd, chunk, sizeof(chunk), 0);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      buffer.append(chunk, static_cast<size_t>(got));
    }
    return true;
  };
  while (true) {
    size_t head_end;
    while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
      if (!fill(buffer.size() + 1)) {
        ::close(fd);
        return;
      }
    }
    LoopbackRequest request{.connection = connection};
    std::string_view head(buffer.data(), head_end);
    size_t line_end = head.find("\r\n");
    std::string_view request_line = head.substr(0, line_end);
    size_t first_space = request_line.find(' ');
    size_t last_space = request_line.rfind(' ');
    if (first_space == std::string_view::npos || last_space <= first_space) {
      ADD_FAILURE() << "loopback server: malformed request line: " << request_line;
      break;
    }
    request.method = std::string(request_line.substr(0, first_space));
    request.target =
        std::string(request_line.substr(first_space + 1, last_space - first_space - 1));
    size_t question = request.target.find('?');
    request.path = request.target.substr(0, question);
    if (question != std::string::npos) request.query = request.target.substr(question + 1);
    size_t content_length = 0;
    std::string_view fields =
        line_end == std::string_view::npos ? std::string_view() : head.substr(line_end + 2);
    while (!fields.empty()) {
      size_t end = fields.find("\r\n");
      std::string_view line = fields.substr(0, end);
      fields = end == std::string_view::npos ? std::string_view() : fields.substr(end + 2);
      size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string name = Lower(Trim(line.substr(0, colon)));
      std::string value(Trim(line.substr(colon + 1)));
      if (name == "content-length") content_length = std::strtoul(value.c_str(), nullptr, 10);
      if (name == "transfer-encoding") {
        ADD_FAILURE() << "loopback server: request bodies must have a Content-Length, got "
                      << "Transfer-Encoding: " << value;
      }
      request.headers.emplace_back(std::move(name), std::move(value));
    }
    size_t body_start = head_end + 4;
    if (!fill(body_start + content_length)) break;
    request.body = buffer.substr(body_start, content_length);
    buffer.erase(0, body_start + content_length);

    std::optional<LoopbackResponse> response = Match(request);
    if (!response) {
      LoopbackResponse refusal{.status = 404, .body = "unexpected request", .close = true};
      SendAll(fd, ResponseHead(refusal, refusal.body.size()) + refusal.body);
      break;
    }
    if (!Pause(response->delay)) break;
    if (response->hang_up) break;
    if (response->truncate) {
      SendAll(fd, ResponseHead(*response, response->body.size()) +
                      response->body.substr(0, response->body.size() / 2));
      break;
    }
    if (!SendAll(fd, ResponseHead(*response, response->body.size()) + response->body)) break;
    if (response->close) break;
  }
  ::close(fd);
}

}  // namespace bizon::testing_support
