// Authenticators: how a source's requests carry credentials, built from the `authentication`
// block ({type, params}) with the original's param names and defaults.
//
// | type            | header                                                             |
// |-----------------|--------------------------------------------------------------------|
// | api_key, bearer | `<auth_header>: <auth_method> <token>` (bare token if method "")   |
// | basic           | `<auth_header>: <auth_method> base64(username:password)`           |
// | oauth           | `Authorization: Bearer <access token>`, refreshed (see below)      |
// | cookies         | `Cookie: k=v; ...` plus the extra `headers`                        |
//
// OAuth 2 (refresh-token grant by default): the token is refreshed before the first request,
// again once it is within `expiry_skew_seconds` of expiring (default: 10% of its lifetime, at
// most 60 s), and whenever a response is 401. The refresh is a form POST to
// `token_refresh_endpoint`, retried with exponential backoff for up to 300 s on 429 and 5xx.
//
// Every credential (tokens, passwords, cookie values, each new access token) is registered with
// the process-wide SecretMask, so no log line, error or result file shows it.
//
// Thread-safety: Apply() and Refresh() may be called from several threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bizon/status.h"
#include "bizon/value.h"
#include "http/http_session.h"

namespace bizon {

class Authenticator {
 public:
  virtual ~Authenticator() = default;
  /// Adds the credentials to `request`, refreshing them first when they are about to expire.
  virtual Status Apply(HttpRequest& request) = 0;
  /// Called after a 401: true when new credentials were obtained and the request is worth sending
  /// once more.
  virtual Result<bool> RefreshAfterUnauthorized() { return false; }
};

struct TokenParams {
  std::string token;
  std::string auth_method = "Bearer";
  std::string auth_header = "Authorization";
};

struct BasicParams {
  std::string username;
  std::string password;
  std::string auth_method = "Basic";
  std::string auth_header = "Authorization";
};

struct CookieParams {
  std::vector<std::pair<std::string, std::string>> cookies;
  HttpHeaders headers;
};

struct OAuth2Params {
  std::string token_refresh_endpoint;
  std::string client_id;
  std::string client_secret;
  std::optional<std::string> refresh_token;
  std::vector<std::string> scopes;
  /// An access token known up front, valid until token_expiry_date.
  std::optional<std::string> access_token;
  std::optional<std::string> token_expiry_date;
  std::optional<std::string> token_expiry_date_format;
  std::string access_token_name = "access_token";
  std::string expires_in_name = "expires_in";
  std::vector<std::pair<std::string, std::string>> refresh_request_body;
  std::string grant_type = "refresh_token";
  std::optional<std::string> response_field_path;
  std::optional<int64_t> expiry_skew_seconds;
};

class TokenAuthenticator final : public Authenticator {
 public:
  explicit TokenAuthenticator(TokenParams params);
  Status Apply(HttpRequest& request) override;
  /// The header value, e.g. "Bearer abc".
  const std::string& header_value() const { return value_; }

 private:
  std::string header_;
  std::string value_;
};

class BasicAuthenticator final : public Authenticator {
 public:
  explicit BasicAuthenticator(BasicParams params);
  Status Apply(HttpRequest& request) override;
  const std::string& header_value() const { return value_; }

 private:
  std::string header_;
  std::string value_;
};

class CookieAuthenticator final : public Authenticator {
 public:
  explicit CookieAuthenticator(CookieParams params);
  Status Apply(HttpRequest& request) override;

 private:
  std::string cookie_;
  HttpHeaders headers_;
};

class OAuth2Authenticator final : public Authenticator {
 public:
  /// `timeouts` apply to the refresh requests; `sleep` waits between their retries.
  OAuth2Authenticator(OAuth2Params params, HttpTimeouts timeouts = {},
                      HttpSleepFunction sleep = ScaledSleep);
  Status Apply(HttpRequest& request) override;
  Result<bool> RefreshAfterUnauthorized() override;

  /// Microseconds since the epoch when the token counts as expired (expiry minus the skew).
  int64_t refresh_at_us() const;

 private:
  /// Fetches a new access token (the caller holds mutex_) and schedules its refresh.
  Status RefreshLocked();
  /// The form POST to the token endpoint.
  HttpRequest RefreshRequest() const;
  /// Sends the refresh, retrying 429, 5xx and transport failures with exponential backoff for up
  /// to 300 s; any other answer but a 2xx is an error.
  Result<HttpResponse> PostRefresh(const HttpRequest& request);
  /// Sets when the token expires and when to refresh it, from the token endpoint's answer.
  Status ScheduleRefresh(const Value& token_response);

  OAuth2Params params_;
  HttpTimeouts timeouts_;
  HttpSleepFunction sleep_;
  std::unique_ptr<HttpSession> session_;
  mutable std::mutex mutex_;
  std::string access_token_;
  int64_t expires_at_us_ = 0;
  int64_t refresh_at_us_ = 0;
};

/// Options a connector gives MakeAuthenticator.
struct AuthenticatorOptions {
  /// The types the connector accepts; empty accepts all five.
  std::vector<std::string> allowed_types;
  /// Replaces params.token_refresh_endpoint (connectors with a fixed token URL).
  std::optional<std::string> token_refresh_endpoint;
  HttpTimeouts timeouts;
  HttpSleepFunction sleep = ScaledSleep;
};

/// The authenticator of an `authentication` block; null when the block is absent or null.
/// Unknown or disallowed types, and missing required params, are kInvalidArgument.
Result<std::shared_ptr<Authenticator>> MakeAuthenticator(const Value& authentication,
                                                         const AuthenticatorOptions& options = {});

/// Base64 (standard alphabet, padded).
std::string Base64Encode(std::string_view bytes);

}  // namespace bizon
