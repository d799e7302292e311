#include "http/http_session.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "bizon/clock.h"
#include "common/ascii.h"
#include "http/authenticator.h"

namespace bizon {
namespace {

constexpr size_t kMaxPooledHandles = 16;
// Spare bytes kept after each body, so a JSON parser that reads past the end needs no copy.
constexpr size_t kBodyPadding = 64;

std::string Upper(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

double BackoffScale() {
  static const double kScale = [] {
    const char* text = std::getenv("BIZON_HTTP_BACKOFF_SCALE");
    if (text == nullptr || *text == '\0') return 1.0;
    char* end = nullptr;
    double value = std::strtod(text, &end);
    if (end == text || value < 0) return 1.0;
    return value;
  }();
  return kScale;
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 413:
      return "Payload Too Large";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 520:
      return "Web Server Returned an Unknown Error";
    case 522:
      return "Connection Timed Out";
    case 524:
      return "A Timeout Occurred";
    default:
      return "";
  }
}

std::string DescribeStatus(int status) {
  std::string_view reason = ReasonPhrase(status);
  return reason.empty() ? std::to_string(status) : fmt::format("{} {}", status, reason);
}

// What a failed transfer means for the retry rules.
enum class TransportFailure { kNone, kConnect, kRead, kOther };

}  // namespace

void ScaledSleep(double seconds) {
  double scaled = seconds * BackoffScale();
  if (scaled <= 0) return;
  std::this_thread::sleep_for(std::chrono::duration<double>(scaled));
}

std::optional<std::string_view> HttpResponse::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (EqualsIgnoreAsciiCase(key, name)) return std::string_view(value);
  }
  return std::nullopt;
}

std::string BodyExcerpt(std::string_view body, size_t limit) {
  std::string out;
  for (char c : body.substr(0, limit)) {
    out.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
  }
  if (body.size() > limit) out += "...";
  return out;
}

Status HttpStatusError(std::string_view method, std::string_view url,
                       const HttpResponse& response) {
  StatusCode code = response.status == 429 || response.status >= 500
                        ? StatusCode::kUnavailable
                        : StatusCode::kFailedPrecondition;
  std::string attempts =
      response.attempts > 1 ? fmt::format(" after {} attempts", response.attempts) : "";
  std::string body = BodyExcerpt(response.body);
  return Status(code,
                fmt::format("HTTP request failed{}: {} {} returned {}{}{}", attempts, method, url,
                            DescribeStatus(response.status), body.empty() ? "" : ": ", body),
                FailureClass::kSource);
}

struct HttpSession::Handle {
  CURL* curl = nullptr;
  Handle() : curl(curl_easy_init()) {}
  ~Handle() {
    if (curl != nullptr) curl_easy_cleanup(curl);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
};

struct HttpSession::Attempt {
  TransportFailure failure = TransportFailure::kNone;
  std::string error;
  HttpResponse response;
};

// What one Send has spent of the retry policy's budgets.
struct HttpSession::RetryState {
  int retries_left = 0;
  std::optional<int> status_retries_left;
  int failures = 0;  // Consecutive failed attempts: what the backoff grows with.
  int attempts = 0;
  bool refreshed_after_401 = false;
};

namespace {

// Transfer state shared with libcurl's callbacks.
struct Transfer {
  CURL* curl = nullptr;
  HttpResponse* response = nullptr;
  std::optional<double> read_timeout_s;
  std::chrono::steady_clock::time_point last_activity;
  bool connected = false;
  curl_off_t last_down = 0;
  curl_off_t last_up = 0;
  bool read_timed_out = false;
};

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  transfer->response->body.append(data, size * count);
  return size * count;
}

size_t WriteHeader(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  std::string_view line(data, size * count);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.starts_with("HTTP/")) {
    // A new response block (after a redirect or a 100 Continue) replaces the headers.
    transfer->response->headers.clear();
    return size * count;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return size * count;
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  transfer->response->headers.emplace_back(AsciiLower(line.substr(0, colon)), std::string(value));
  return size * count;
}

// Enforces the read timeout: the time without a byte sent or received once connected. libcurl
// calls this at least once a second while a transfer is idle.
int Progress(void* user, curl_off_t, curl_off_t down, curl_off_t, curl_off_t up) {
  auto* transfer = static_cast<Transfer*>(user);
  auto now = std::chrono::steady_clock::now();
  if (!transfer->connected) {
    curl_off_t connect_time = 0;
    curl_easy_getinfo(transfer->curl, CURLINFO_CONNECT_TIME_T, &connect_time);
    if (connect_time <= 0) return 0;
    transfer->connected = true;
    transfer->last_activity = now;
  }
  if (down != transfer->last_down || up != transfer->last_up) {
    transfer->last_down = down;
    transfer->last_up = up;
    transfer->last_activity = now;
    return 0;
  }
  if (transfer->read_timeout_s &&
      std::chrono::duration<double>(now - transfer->last_activity).count() >
          *transfer->read_timeout_s) {
    transfer->read_timed_out = true;
    return 1;  // Aborts the transfer.
  }
  return 0;
}

TransportFailure Classify(CURLcode code, bool connected) {
  switch (code) {
    case CURLE_OK:
      return TransportFailure::kNone;
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
      return TransportFailure::kConnect;
    case CURLE_OPERATION_TIMEDOUT:
      return connected ? TransportFailure::kRead : TransportFailure::kConnect;
    case CURLE_ABORTED_BY_CALLBACK:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return TransportFailure::kRead;
    default:
      return TransportFailure::kOther;
  }
}

// The options of every transfer: the URL, redirects, keep-alive, and the callbacks that fill the
// response through `transfer`. `error_buffer` must outlive the transfer.
void SetTransferOptions(CURL* curl, const std::string& url, bool reuse_connections,
                        char* error_buffer, Transfer& transfer) {
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 30L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  if (!reuse_connections) {
    curl_easy_setopt(curl, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
  }
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "bizon/" BIZON_VERSION);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, WriteHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
}

// The method (upper case) and, but for GET and HEAD, the body, which libcurl does not copy: it
// must outlive the transfer.
void SetMethod(CURL* curl, const std::string& method, const std::string& body) {
  if (method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else if (method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else {
    if (method == "POST") {
      curl_easy_setopt(curl, CURLOPT_POST, 1L);
    } else {
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
    }
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
}

// The request's headers after the session's defaults it does not set itself; the caller frees
// the list once the transfer is over.
curl_slist* HeaderList(const HttpHeaders& defaults, const HttpHeaders& headers) {
  curl_slist* header_list = nullptr;
  auto add_header = [&](std::string_view name, std::string_view value) {
    std::string line =
        value.empty() ? fmt::format("{};", name) : fmt::format("{}: {}", name, value);
    header_list = curl_slist_append(header_list, line.c_str());
  };
  for (const auto& [name, value] : defaults) {
    bool overridden = std::any_of(headers.begin(), headers.end(), [&](const auto& header) {
      return EqualsIgnoreAsciiCase(header.first, name);
    });
    if (!overridden) add_header(name, value);
  }
  for (const auto& [name, value] : headers) add_header(name, value);
  return curl_slist_append(header_list, "Expect:");  // No 100-continue round trip.
}

// libcurl enforces the connect timeout; Progress the read timeout, which libcurl has not.
void SetTimeouts(CURL* curl, const HttpTimeouts& timeouts, Transfer& transfer) {
  if (timeouts.connect_s) {
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                     std::max(1L, static_cast<long>(*timeouts.connect_s * 1000)));
  }
  if (timeouts.read_s) {
    transfer.read_timeout_s = timeouts.read_s;
    transfer.last_activity = std::chrono::steady_clock::now();
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, Progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &transfer);
  }
}

}  // namespace

HttpSession::HttpSession(HttpSessionOptions options) : options_(std::move(options)) {
  GlobalInit();
  if (!options_.sleep) options_.sleep = ScaledSleep;
}

HttpSession::~HttpSession() = default;

std::unique_ptr<HttpSession::Handle> HttpSession::Borrow() {
  {
    std::lock_guard lock(pool_mutex_);
    if (!pool_.empty()) {
      std::unique_ptr<Handle> handle = std::move(pool_.back());
      pool_.pop_back();
      return handle;
    }
  }
  return std::make_unique<Handle>();
}

void HttpSession::Return(std::unique_ptr<Handle> handle) {
  std::lock_guard lock(pool_mutex_);
  if (pool_.size() < kMaxPooledHandles) pool_.push_back(std::move(handle));
}

HttpSession::Attempt HttpSession::Perform(Handle& handle, const HttpRequest& request,
                                          const std::string& url) {
  Attempt attempt;
  CURL* curl = handle.curl;
  if (curl == nullptr) {
    attempt.failure = TransportFailure::kOther;
    attempt.error = "libcurl could not create a handle";
    return attempt;
  }
  // Reset clears the options of the previous request but keeps its connection open for reuse.
  curl_easy_reset(curl);
  Transfer transfer{.curl = curl, .response = &attempt.response};
  char error_buffer[CURL_ERROR_SIZE] = {0};
  SetTransferOptions(curl, url, options_.reuse_connections, error_buffer, transfer);
  std::string method = Upper(request.method);
  SetMethod(curl, method, request.body);
  curl_slist* header_list = HeaderList(options_.default_headers, request.headers);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, header_list);
  HttpTimeouts timeouts = request.timeouts.value_or(options_.policy.timeouts);
  SetTimeouts(curl, timeouts, transfer);

  CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(header_list);

  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  attempt.response.status = static_cast<int>(status);
  char* effective_url = nullptr;
  curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &effective_url);
  attempt.response.url = effective_url != nullptr ? effective_url : url;
  attempt.response.body.reserve(attempt.response.body.size() + kBodyPadding);

  if (code != CURLE_OK) {
    curl_off_t connect_time = 0;
    curl_easy_getinfo(curl, CURLINFO_CONNECT_TIME_T, &connect_time);
    bool connected = transfer.connected || connect_time > 0;
    attempt.failure = Classify(code, connected);
    if (transfer.read_timed_out) {
      attempt.failure = TransportFailure::kRead;
      attempt.error = fmt::format("read timed out (no data for {} s)", *transfer.read_timeout_s);
    } else if (code == CURLE_OPERATION_TIMEDOUT && !connected) {
      attempt.error = fmt::format("connect timed out after {} s", timeouts.connect_s.value_or(0));
    } else {
      attempt.error = error_buffer[0] != '\0' ? std::string(error_buffer)
                                              : std::string(curl_easy_strerror(code));
      if (code == CURLE_PARTIAL_FILE) attempt.error = "truncated body: " + attempt.error;
    }
  }
  return attempt;
}

Result<HttpResponse> HttpSession::Send(const HttpRequest& request) {
  // One handle for every attempt, back to the pool however the request ends.
  std::unique_ptr<Handle> handle = Borrow();
  Result<HttpResponse> response = SendWith(*handle, request);
  Return(std::move(handle));
  return response;
}

Result<HttpResponse> HttpSession::SendWith(Handle& handle, const HttpRequest& request) {
  const RetryPolicy& retry = options_.policy.retries;
  std::string method = Upper(request.method);
  std::string url = AppendQuery(request.url, request.query);
  bool raise_for_status = request.raise_for_status.value_or(options_.policy.raise_for_status);
  RetryState state{.retries_left = retry.total, .status_retries_left = retry.status_budget};
  while (true) {
    WaitOutPauses();
    BIZON_ASSIGN_OR_RETURN(Attempt attempt, SendOnce(handle, request, method, url, state));
    if (attempt.failure != TransportFailure::kNone) {
      BIZON_RETURN_IF_ERROR(BackOffAfterFailure(attempt, method, url, state));
      continue;
    }

    HttpResponse& response = attempt.response;
    if (response.status == 401 && request.authenticate && options_.authenticator &&
        !state.refreshed_after_401) {
      state.refreshed_after_401 = true;
      auto refreshed = options_.authenticator->RefreshAfterUnauthorized();
      if (!refreshed) return Fail(refreshed.error().WithFailureClass(FailureClass::kSource));
      if (*refreshed) {
        spdlog::info("Credentials refreshed after a 401; sending {} {} again", method, url);
        continue;
      }
    }
    if (BackOffAfterStatus(response, method, url, state)) continue;

    if (raise_for_status && !response.ok()) {
      return Fail(HttpStatusError(method, url, response));
    }
    return std::move(response);
  }
}

Result<HttpSession::Attempt> HttpSession::SendOnce(Handle& handle, const HttpRequest& request,
                                                   const std::string& method,
                                                   const std::string& url, RetryState& state) {
  HttpRequest sent = request;
  if (request.authenticate && options_.authenticator) {
    Status applied = options_.authenticator->Apply(sent);
    if (!applied.ok()) return Fail(applied.WithFailureClass(FailureClass::kSource));
  }
  ++state.attempts;
  auto started = std::chrono::steady_clock::now();
  // An authenticator may add query parameters (an API key): they go out, and stay out of the
  // URL that messages quote.
  Attempt attempt =
      Perform(handle, sent,
              sent.query.size() == request.query.size() ? url : AppendQuery(sent.url, sent.query));
  attempt.response.attempts = state.attempts;
  spdlog::debug("HTTP {} {}: {} in {} ms", method, url,
                attempt.failure == TransportFailure::kNone ? std::to_string(attempt.response.status)
                                                           : attempt.error,
                std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - started)
                    .count());
  return attempt;
}

Status HttpSession::BackOffAfterFailure(const Attempt& attempt, const std::string& method,
                                        const std::string& url, RetryState& state) {
  const RetryPolicy& retry = options_.policy.retries;
  bool retryable = attempt.failure == TransportFailure::kConnect ||
                   (attempt.failure == TransportFailure::kRead && retry.IsMethodRetryable(method));
  if (!retryable || state.retries_left <= 0) {
    std::string after = state.attempts > 1 ? fmt::format(" after {} attempts", state.attempts) : "";
    return Status(
        StatusCode::kUnavailable,
        fmt::format("HTTP request failed{}: {} {}: {}", after, method, url, attempt.error),
        FailureClass::kSource);
  }
  --state.retries_left;
  ++state.failures;
  double wait = retry.BackoffSeconds(state.failures);
  spdlog::warn("Retrying HTTP request in {:.1f} s (retry {} of {}): {} {}: {}", wait,
               retry.total - state.retries_left, retry.total, method, url, attempt.error);
  options_.sleep(wait);
  return Status::Ok();
}

bool HttpSession::BackOffAfterStatus(const HttpResponse& response, const std::string& method,
                                     const std::string& url, RetryState& state) {
  const RetryPolicy& retry = options_.policy.retries;
  std::optional<std::string_view> retry_after_header = response.Header("retry-after");
  if (!retry.IsRetryableStatus(method, response.status, retry_after_header.has_value()) ||
      state.retries_left <= 0 || (state.status_retries_left && *state.status_retries_left <= 0)) {
    return false;
  }
  --state.retries_left;
  if (state.status_retries_left) --*state.status_retries_left;
  ++state.failures;
  double wait = retry.BackoffSeconds(state.failures);
  std::string reason = "backoff";
  bool server_asked = false;
  if (retry_after_header) {
    std::optional<double> asked = ParseRetryAfter(*retry_after_header, NowMicros());
    // As urllib3: a Retry-After of 0 (or an unreadable one) falls back to the backoff.
    if (asked && *asked > 0) {
      wait = retry.RetryAfterSeconds(*asked);
      server_asked = true;
      reason = *asked > wait ? fmt::format("Retry-After {} s, capped", *asked)
                             : fmt::format("Retry-After {} s", *asked);
    }
  }
  spdlog::warn("Retrying HTTP request in {:.1f} s ({}; retry {} of {}): {} {} returned {}", wait,
               reason, retry.total - state.retries_left, retry.total, method, url,
               DescribeStatus(response.status));
  // The server's wait holds back the session's other requests too.
  if (server_asked) {
    Pause(wait);
  } else {
    options_.sleep(wait);
  }
  return true;
}

void HttpSession::WaitOutPauses() {
  std::unique_lock<std::mutex> lock(pause_mutex_);
  pause_ended_.wait(lock, [&] { return pauses_ == 0; });
}

void HttpSession::Pause(double seconds) {
  {
    std::lock_guard<std::mutex> lock(pause_mutex_);
    ++pauses_;
  }
  options_.sleep(seconds);
  {
    std::lock_guard<std::mutex> lock(pause_mutex_);
    --pauses_;
  }
  pause_ended_.notify_all();
}

Result<HttpResponse> HttpSession::Get(std::string url, QueryParams query) {
  return Send({.method = "GET", .url = std::move(url), .query = std::move(query)});
}

Result<HttpResponse> HttpSession::PostJson(std::string url, std::string json) {
  return Send({.method = "POST",
               .url = std::move(url),
               .headers = {{"Content-Type", "application/json"}},
               .body = std::move(json)});
}

}  // namespace bizon
