#include "http/authenticator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>

#include "bizon/clock.h"
#include "bizon/secret_mask.h"

namespace bizon {
namespace {

constexpr int64_t kMicrosPerSecond = 1'000'000;
constexpr int64_t kDayMicros = 86'400 * kMicrosPerSecond;
// The original retries a failed refresh with exponential backoff for at most this long.
constexpr double kRefreshRetryBudgetSeconds = 300;

void Mask(std::string_view secret) {
  if (!secret.empty()) SecretMask::Global().Add(secret);
}

Status AuthError(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message), FailureClass::kConfig);
}

std::optional<std::string> OptionalString(const Value& map, std::string_view key) {
  const Value* value = map.Find(key);
  if (value == nullptr || value->is_null()) return std::nullopt;
  return value->ToDisplayString();
}

// Follows "data.token" or "data/token" through nested objects.
const Value* Descend(const Value& root, std::string_view path) {
  const Value* node = &root;
  size_t start = 0;
  while (node != nullptr && start <= path.size()) {
    size_t end = path.find_first_of("./", start);
    std::string_view segment =
        path.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!segment.empty()) node = node->Find(segment);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return node;
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t chunk = (static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16) |
                     (static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8) |
                     static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 2]));
    out.push_back(kAlphabet[(chunk >> 18) & 63]);
    out.push_back(kAlphabet[(chunk >> 12) & 63]);
    out.push_back(kAlphabet[(chunk >> 6) & 63]);
    out.push_back(kAlphabet[chunk & 63]);
  }
  size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t chunk = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (rest == 2) chunk |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    out.push_back(kAlphabet[(chunk >> 18) & 63]);
    out.push_back(kAlphabet[(chunk >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(chunk >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

// --- Token -----------------------------------------------------------------------------------

TokenAuthenticator::TokenAuthenticator(TokenParams params)
    : header_(std::move(params.auth_header)),
      value_(params.auth_method.empty() ? params.token
                                        : fmt::format("{} {}", params.auth_method, params.token)) {
  Mask(params.token);
}

Status TokenAuthenticator::Apply(HttpRequest& request) {
  request.headers.emplace_back(header_, value_);
  return Status::Ok();
}

// --- Basic -----------------------------------------------------------------------------------

BasicAuthenticator::BasicAuthenticator(BasicParams params)
    : header_(std::move(params.auth_header)) {
  std::string encoded = Base64Encode(fmt::format("{}:{}", params.username, params.password));
  value_ = fmt::format("{} {}", params.auth_method, encoded);
  Mask(params.password);
  Mask(encoded);
}

Status BasicAuthenticator::Apply(HttpRequest& request) {
  request.headers.emplace_back(header_, value_);
  return Status::Ok();
}

// --- Cookies ---------------------------------------------------------------------------------

CookieAuthenticator::CookieAuthenticator(CookieParams params)
    : headers_(std::move(params.headers)) {
  for (const auto& [name, value] : params.cookies) {
    if (!cookie_.empty()) cookie_ += "; ";
    cookie_ += fmt::format("{}={}", name, value);
    Mask(value);
  }
}

Status CookieAuthenticator::Apply(HttpRequest& request) {
  if (!cookie_.empty()) request.headers.emplace_back("Cookie", cookie_);
  for (const auto& header : headers_) request.headers.push_back(header);
  return Status::Ok();
}

// --- OAuth 2 ---------------------------------------------------------------------------------

OAuth2Authenticator::OAuth2Authenticator(OAuth2Params params, HttpTimeouts timeouts,
                                         HttpSleepFunction sleep)
    : params_(std::move(params)), timeouts_(timeouts), sleep_(std::move(sleep)) {
  Mask(params_.client_secret);
  if (params_.refresh_token) Mask(*params_.refresh_token);
  if (params_.access_token) {
    Mask(*params_.access_token);
    access_token_ = *params_.access_token;
  }
  // Expired a day ago unless told otherwise, so the first request refreshes.
  expires_at_us_ = NowMicros() - kDayMicros;
  if (params_.token_expiry_date) {
    auto parsed = ParseTimestamp(*params_.token_expiry_date);
    if (parsed) {
      expires_at_us_ = *parsed;
    } else {
      spdlog::warn("Ignoring token_expiry_date, which is not an ISO 8601 timestamp: {}",
                   *params_.token_expiry_date);
    }
  }
  refresh_at_us_ = expires_at_us_;
  HttpPolicy policy;
  policy.retries.total = 0;  // The refresh has retries of its own.
  policy.raise_for_status = false;
  policy.timeouts = timeouts_;
  session_ = std::make_unique<HttpSession>(HttpSessionOptions{.policy = policy, .sleep = sleep_});
}

int64_t OAuth2Authenticator::refresh_at_us() const {
  std::lock_guard lock(mutex_);
  return refresh_at_us_;
}

Status OAuth2Authenticator::Apply(HttpRequest& request) {
  std::lock_guard lock(mutex_);
  if (access_token_.empty() || NowMicros() >= refresh_at_us_)
    BIZON_RETURN_IF_ERROR(RefreshLocked());
  request.headers.emplace_back("Authorization", fmt::format("Bearer {}", access_token_));
  return Status::Ok();
}

Result<bool> OAuth2Authenticator::RefreshAfterUnauthorized() {
  std::lock_guard lock(mutex_);
  BIZON_RETURN_IF_ERROR(RefreshLocked());
  return true;
}

Status OAuth2Authenticator::RefreshLocked() {
  BIZON_ASSIGN_OR_RETURN(HttpResponse response, PostRefresh(RefreshRequest()));
  auto parsed = Value::FromJson(response.body);
  if (!parsed) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("OAuth token refresh failed: the token endpoint answered invalid "
                              "JSON: {}",
                              BodyExcerpt(response.body, 100)),
                  FailureClass::kSource);
  }
  const Value* root = &*parsed;
  if (params_.response_field_path) root = Descend(*parsed, *params_.response_field_path);
  const Value* token = root == nullptr ? nullptr : root->Find(params_.access_token_name);
  if (token == nullptr || !token->is_string() || token->AsString().empty()) {
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("OAuth token refresh failed: the response has no '{}' field",
                              params_.access_token_name),
                  FailureClass::kSource);
  }
  access_token_ = token->AsString();
  Mask(access_token_);
  if (const Value* rotated = root->Find("refresh_token");
      rotated != nullptr && rotated->is_string() && !rotated->AsString().empty()) {
    params_.refresh_token = rotated->AsString();
    Mask(*params_.refresh_token);
  }
  return ScheduleRefresh(*root);
}

HttpRequest OAuth2Authenticator::RefreshRequest() const {
  QueryParams form = {{"grant_type", params_.grant_type},
                      {"client_id", params_.client_id},
                      {"client_secret", params_.client_secret}};
  if (params_.refresh_token) form.emplace_back("refresh_token", *params_.refresh_token);
  if (!params_.scopes.empty()) {
    std::string scope;
    for (const std::string& item : params_.scopes) scope += (scope.empty() ? "" : ",") + item;
    form.emplace_back("scope", scope);
  }
  for (const auto& [key, value] : params_.refresh_request_body) {
    bool taken = std::any_of(form.begin(), form.end(),
                             [&](const auto& field) { return field.first == key; });
    if (!taken) form.emplace_back(key, value);
  }
  return HttpRequest{.method = "POST",
                     .url = params_.token_refresh_endpoint,
                     .headers = {{"Content-Type", "application/x-www-form-urlencoded"},
                                 {"Accept", "application/json"}},
                     .body = FormEncode(form),
                     .authenticate = false};
}

Result<HttpResponse> OAuth2Authenticator::PostRefresh(const HttpRequest& request) {
  double waited = 0;
  double wait = 1;
  Result<HttpResponse> response = Fail(InternalError("no refresh attempted"));
  while (true) {
    response = session_->Send(request);
    bool transient = !response || response->status == 429 || response->status >= 500;
    if (!transient || waited + wait > kRefreshRetryBudgetSeconds) break;
    spdlog::warn("OAuth token refresh failed; retrying in {:.0f} s: {}", wait,
                 response ? fmt::format("HTTP {}", response->status) : response.error().message());
    sleep_(wait);
    waited += wait;
    wait *= 2;
  }
  if (!response) {
    return Fail(response.error()
                    .WithContext("OAuth token refresh failed")
                    .WithFailureClass(FailureClass::kSource));
  }
  if (!response->ok()) {
    Status error = HttpStatusError("POST", params_.token_refresh_endpoint, *response);
    return Fail(Status(error.code(), "OAuth token refresh failed: " + error.message(),
                       FailureClass::kSource));
  }
  return response;
}

Status OAuth2Authenticator::ScheduleRefresh(const Value& token_response) {
  int64_t now = NowMicros();
  const Value* expires = token_response.Find(params_.expires_in_name);
  if (expires == nullptr || expires->is_null()) {
    // Nothing to schedule by: the token is refreshed when a response says 401.
    expires_at_us_ = refresh_at_us_ = INT64_MAX;
    spdlog::info("OAuth token refreshed; no '{}' in the response, so it is renewed on a 401",
                 params_.expires_in_name);
    return Status::Ok();
  }
  if (params_.token_expiry_date_format) {
    std::tm parts{};
    std::string text = expires->ToDisplayString();
    if (strptime(text.c_str(), params_.token_expiry_date_format->c_str(), &parts) == nullptr) {
      return Status(StatusCode::kFailedPrecondition,
                    fmt::format("OAuth token refresh failed: '{}' does not match "
                                "token_expiry_date_format {}: {}",
                                params_.expires_in_name, *params_.token_expiry_date_format, text),
                    FailureClass::kSource);
    }
    expires_at_us_ = static_cast<int64_t>(timegm(&parts)) * kMicrosPerSecond;
  } else {
    double seconds = 0;
    if (expires->is_number()) {
      seconds = expires->AsDouble();
    } else if (expires->is_string()) {
      seconds = std::strtod(expires->AsString().c_str(), nullptr);
    }
    expires_at_us_ = now + static_cast<int64_t>(seconds * kMicrosPerSecond);
  }
  int64_t lifetime = std::max<int64_t>(0, expires_at_us_ - now);
  int64_t skew = params_.expiry_skew_seconds
                     ? *params_.expiry_skew_seconds * kMicrosPerSecond
                     : std::min<int64_t>(lifetime / 10, 60 * kMicrosPerSecond);
  refresh_at_us_ = expires_at_us_ - skew;
  spdlog::info("OAuth token refreshed; valid for {:.0f} s", static_cast<double>(lifetime) / 1e6);
  return Status::Ok();
}

// --- Factory ---------------------------------------------------------------------------------

namespace {

// authentication.params.<key>, which authentication type `type` requires.
Result<std::string> RequiredParam(const Value& params, std::string_view key,
                                  std::string_view type) {
  std::optional<std::string> value = OptionalString(params, key);
  if (!value || value->empty()) {
    return Fail(AuthError(
        fmt::format("authentication.params.{} is required for authentication type {}", key, type)));
  }
  return *value;
}

// An empty `allowed` accepts every type.
Status CheckAllowedType(const std::string& type, const std::vector<std::string>& allowed) {
  if (allowed.empty() || std::find(allowed.begin(), allowed.end(), type) != allowed.end()) {
    return Status::Ok();
  }
  std::string listed;
  for (const std::string& item : allowed) listed += (listed.empty() ? "" : ", ") + item;
  return AuthError(
      fmt::format("authentication.type: this source accepts {}, got '{}'", listed, type));
}

// api_key and bearer: params.token, or the `api_key` shorthand beside `type`.
Result<std::shared_ptr<Authenticator>> MakeTokenAuthenticator(const Value& authentication,
                                                              const Value& params,
                                                              const std::string& type) {
  TokenParams token;
  std::optional<std::string> value = OptionalString(params, "token");
  if (!value) value = OptionalString(authentication, "api_key");  // The seed's shorthand.
  if (!value || value->empty()) {
    return Fail(AuthError(
        fmt::format("authentication.params.token is required for authentication type {}", type)));
  }
  token.token = *value;
  token.auth_method = params.GetString("auth_method", "Bearer");
  token.auth_header = params.GetString("auth_header", "Authorization");
  return std::shared_ptr<Authenticator>(std::make_shared<TokenAuthenticator>(std::move(token)));
}

Result<std::shared_ptr<Authenticator>> MakeBasicAuthenticator(const Value& params) {
  BasicParams basic;
  BIZON_ASSIGN_OR_RETURN(basic.username, RequiredParam(params, "username", "basic"));
  basic.password = params.GetString("password", "");
  basic.auth_method = params.GetString("auth_method", "Basic");
  basic.auth_header = params.GetString("auth_header", "Authorization");
  return std::shared_ptr<Authenticator>(std::make_shared<BasicAuthenticator>(std::move(basic)));
}

Result<std::shared_ptr<Authenticator>> MakeCookieAuthenticator(const Value& params) {
  CookieParams cookies;
  const Value* map = params.Find("cookies");
  if (map == nullptr || !map->is_map()) {
    return Fail(
        AuthError("authentication.params.cookies is required for authentication type "
                  "cookies"));
  }
  for (const auto& [name, value] : map->AsMap()) {
    cookies.cookies.emplace_back(name, value.ToDisplayString());
  }
  if (const Value* headers = params.Find("headers"); headers != nullptr && headers->is_map()) {
    for (const auto& [name, value] : headers->AsMap()) {
      cookies.headers.emplace_back(name, value.ToDisplayString());
    }
  }
  return std::shared_ptr<Authenticator>(std::make_shared<CookieAuthenticator>(std::move(cookies)));
}

Result<std::shared_ptr<Authenticator>> MakeOAuth2Authenticator(
    const Value& params, const AuthenticatorOptions& options) {
  OAuth2Params oauth;
  if (options.token_refresh_endpoint) {
    oauth.token_refresh_endpoint = *options.token_refresh_endpoint;
  } else {
    BIZON_ASSIGN_OR_RETURN(oauth.token_refresh_endpoint,
                           RequiredParam(params, "token_refresh_endpoint", "oauth"));
  }
  BIZON_ASSIGN_OR_RETURN(oauth.client_id, RequiredParam(params, "client_id", "oauth"));
  BIZON_ASSIGN_OR_RETURN(oauth.client_secret, RequiredParam(params, "client_secret", "oauth"));
  oauth.refresh_token = OptionalString(params, "refresh_token");
  if (const Value* scopes = params.Find("scopes"); scopes != nullptr && scopes->is_list()) {
    for (const Value& scope : scopes->AsList()) oauth.scopes.push_back(scope.ToDisplayString());
  }
  oauth.access_token = OptionalString(params, "access_token");
  oauth.token_expiry_date = OptionalString(params, "token_expiry_date");
  oauth.token_expiry_date_format = OptionalString(params, "token_expiry_date_format");
  oauth.access_token_name = params.GetString("access_token_name", "access_token");
  oauth.expires_in_name = params.GetString("expires_in_name", "expires_in");
  if (const Value* body = params.Find("refresh_request_body"); body != nullptr && body->is_map()) {
    for (const auto& [key, value] : body->AsMap()) {
      oauth.refresh_request_body.emplace_back(key, value.ToDisplayString());
    }
  }
  oauth.grant_type = params.GetString("grant_type", "refresh_token");
  oauth.response_field_path = OptionalString(params, "response_field_path");
  if (const Value* skew = params.Find("expiry_skew_seconds");
      skew != nullptr && skew->is_integer()) {
    oauth.expiry_skew_seconds = skew->AsInteger();
  }
  return std::shared_ptr<Authenticator>(
      std::make_shared<OAuth2Authenticator>(std::move(oauth), options.timeouts, options.sleep));
}

}  // namespace

Result<std::shared_ptr<Authenticator>> MakeAuthenticator(const Value& authentication,
                                                         const AuthenticatorOptions& options) {
  if (authentication.is_null()) return std::shared_ptr<Authenticator>();
  if (!authentication.is_map()) return Fail(AuthError("authentication must be a mapping"));
  std::string type = authentication.GetString("type");
  BIZON_RETURN_IF_ERROR(CheckAllowedType(type, options.allowed_types));
  static const Value kEmpty = Value::EmptyMap();
  const Value* found = authentication.Find("params");
  const Value& params = found != nullptr && found->is_map() ? *found : kEmpty;
  if (type == "api_key" || type == "bearer") {
    return MakeTokenAuthenticator(authentication, params, type);
  }
  if (type == "basic") return MakeBasicAuthenticator(params);
  if (type == "cookies") return MakeCookieAuthenticator(params);
  if (type == "oauth") return MakeOAuth2Authenticator(params, options);
  return Fail(AuthError(fmt::format(
      "authentication.type: expected one of oauth, api_key, bearer, basic, cookies, got '{}'",
      type)));
}

}  // namespace bizon
