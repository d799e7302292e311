#include "google/credentials.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "bizon/clock.h"
#include "bizon/secret_mask.h"
#include "google/jwt.h"
#include "http/url.h"

namespace bizon {
namespace {

constexpr int64_t kMicrosPerSecond = 1'000'000;
// google-auth's REFRESH_THRESHOLD (3 min 45 s).
constexpr int64_t kRefreshThresholdUs = 225 * kMicrosPerSecond;
// The lifetime google-auth gives a service-account assertion.
constexpr int64_t kAssertionLifetimeS = 3600;
constexpr std::string_view kJwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer";
constexpr std::string_view kDefaultMetadataHost = "metadata.google.internal";

void Mask(std::string_view secret) {
  if (!secret.empty()) SecretMask::Global().Add(secret);
}

// The PEM block, and each of its base64 lines, so that no part of a key survives in a log line.
void MaskPem(std::string_view pem) {
  Mask(pem);
  size_t start = 0;
  while (start < pem.size()) {
    size_t end = pem.find('\n', start);
    if (end == std::string_view::npos) end = pem.size();
    std::string_view line = pem.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() >= 16 && !line.starts_with("-----")) Mask(line);
    start = end + 1;
  }
}

Status KeyError(std::string_view origin, std::string_view problem) {
  return InvalidArgumentError(fmt::format("Google credentials {}: {}", origin, problem));
}

std::string StringField(const Value& key, std::string_view name) {
  const Value* value = key.Find(name);
  return value != nullptr && value->is_string() ? value->AsString() : std::string();
}

Result<Value> ParseKeyJson(std::string_view json, std::string_view origin) {
  Mask(json);
  auto parsed = Value::FromJson(json);
  if (!parsed || !parsed->is_map()) {
    // The parser's own message could point into the text; say only what is wrong.
    return Fail(KeyError(origin, "is not a JSON object (a key file's content is expected)"));
  }
  for (std::string_view secret : {"client_secret", "refresh_token", "private_key_id"}) {
    Mask(StringField(*parsed, secret));
  }
  MaskPem(StringField(*parsed, "private_key"));
  return std::move(*parsed);
}

Status MissingFields(std::string_view origin, std::string_view type, const Value& key,
                     std::initializer_list<std::string_view> required) {
  std::string missing;
  for (std::string_view name : required) {
    if (StringField(key, name).empty()) {
      missing += fmt::format("{}'{}'", missing.empty() ? "" : ", ", name);
    }
  }
  if (missing.empty()) return Status::Ok();
  return KeyError(origin, fmt::format("the {} key lacks {}", type, missing));
}

std::shared_ptr<HttpSession> TokenSession(const GoogleCredentialsOptions& options) {
  HttpPolicy policy;
  policy.configured = true;
  policy.timeouts = options.timeouts;
  policy.raise_for_status = false;
  policy.retries = RetryPolicy{.total = 4};
  return std::make_shared<HttpSession>(
      HttpSessionOptions{.policy = std::move(policy), .sleep = options.sleep});
}

// Reads {"access_token", "expires_in"} from a token endpoint's or metadata server's answer.
Result<GoogleAccessToken> ReadTokenResponse(std::string_view what, std::string_view method,
                                            std::string_view url,
                                            const Result<HttpResponse>& response) {
  if (!response) {
    return Fail(response.error()
                    .WithContext(fmt::format("Google {} request failed", what))
                    .WithFailureClass(FailureClass::kSource));
  }
  auto parsed = Value::FromJson(response->body);
  if (!response->ok()) {
    std::string reason;
    if (parsed && parsed->is_map()) {
      const Value* error = parsed->Find("error");
      if (error != nullptr && error->is_string()) reason = error->AsString();
      std::string description = parsed->GetString("error_description");
      if (!description.empty()) reason += (reason.empty() ? "" : ": ") + description;
    }
    if (reason.empty()) reason = BodyExcerpt(response->body, 200);
    StatusCode code = response->status == 429 || response->status >= 500
                          ? StatusCode::kUnavailable
                          : StatusCode::kFailedPrecondition;
    return Fail(Status(code,
                       fmt::format("Google {} refused: {} {} returned HTTP {}: {}", what, method,
                                   url, response->status, reason),
                       FailureClass::kSource));
  }
  const Value* token = parsed && parsed->is_map() ? parsed->Find("access_token") : nullptr;
  if (token == nullptr || !token->is_string() || token->AsString().empty()) {
    return Fail(Status(StatusCode::kFailedPrecondition,
                       fmt::format("Google {} answered without an access_token: {}", what, url),
                       FailureClass::kSource));
  }
  GoogleAccessToken out{.token = token->AsString()};
  Mask(out.token);
  if (const Value* expires = parsed->Find("expires_in"); expires != nullptr) {
    if (expires->is_integer()) out.expires_in_s = expires->AsInteger();
    if (expires->is_number() && !expires->is_integer()) {
      out.expires_in_s = static_cast<int64_t>(expires->AsDouble());
    }
  }
  return out;
}

Result<GoogleAccessToken> PostTokenForm(HttpSession& session, const std::string& uri,
                                        const QueryParams& form) {
  std::string body = FormEncode(form);
  Mask(body);
  return ReadTokenResponse(
      "token endpoint", "POST", uri,
      session.Send({.method = "POST",
                    .url = uri,
                    .headers = {{"Content-Type", "application/x-www-form-urlencoded"},
                                {"Accept", "application/json"}},
                    .body = std::move(body),
                    .authenticate = false}));
}

std::string JoinScopes(const std::vector<std::string>& scopes, std::string_view separator) {
  std::string out;
  for (const std::string& scope : scopes) {
    if (!out.empty()) out += separator;
    out += scope;
  }
  return out;
}

class ServiceAccountCredentials final : public GoogleCredentials {
 public:
  ServiceAccountCredentials(ServiceAccountKey key, std::vector<std::string> scopes,
                            std::shared_ptr<HttpSession> session)
      : key_(std::move(key)), scopes_(std::move(scopes)), session_(std::move(session)) {}

  std::string Describe() const override { return "service account " + key_.client_email; }
  std::optional<std::string> project_id() const override {
    if (key_.project_id.empty()) return std::nullopt;
    return key_.project_id;
  }

 protected:
  Result<GoogleAccessToken> FetchToken() override {
    BIZON_ASSIGN_OR_RETURN(std::string assertion,
                           MakeServiceAccountAssertion(key_, scopes_, NowMicros() / 1'000'000));
    return PostTokenForm(*session_, key_.token_uri,
                         {{"grant_type", std::string(kJwtBearerGrant)}, {"assertion", assertion}});
  }

 private:
  ServiceAccountKey key_;
  std::vector<std::string> scopes_;
  std::shared_ptr<HttpSession> session_;
};

class AuthorizedUserCredentials final : public GoogleCredentials {
 public:
  AuthorizedUserCredentials(const Value& key, std::shared_ptr<HttpSession> session)
      : client_id_(StringField(key, "client_id")),
        client_secret_(StringField(key, "client_secret")),
        refresh_token_(StringField(key, "refresh_token")),
        token_uri_(StringField(key, "token_uri")),
        quota_project_(StringField(key, "quota_project_id")),
        session_(std::move(session)) {
    if (token_uri_.empty()) token_uri_ = kGoogleTokenUri;
  }

  std::string Describe() const override { return "authorized user (client " + client_id_ + ")"; }
  std::optional<std::string> project_id() const override {
    if (quota_project_.empty()) return std::nullopt;
    return quota_project_;
  }

 protected:
  // As google-auth: the refresh token keeps the scopes the user granted, none are asked for.
  Result<GoogleAccessToken> FetchToken() override {
    return PostTokenForm(*session_, token_uri_,
                         {{"grant_type", "refresh_token"},
                          {"client_id", client_id_},
                          {"client_secret", client_secret_},
                          {"refresh_token", refresh_token_}});
  }

 private:
  std::string client_id_;
  std::string client_secret_;
  std::string refresh_token_;
  std::string token_uri_;
  std::string quota_project_;
  std::shared_ptr<HttpSession> session_;
};

class MetadataServerCredentials final : public GoogleCredentials {
 public:
  MetadataServerCredentials(std::string host, std::vector<std::string> scopes, bool chosen_by_env,
                            std::shared_ptr<HttpSession> session)
      : host_(std::move(host)),
        scopes_(std::move(scopes)),
        chosen_by_env_(chosen_by_env),
        session_(std::move(session)) {}

  std::string Describe() const override { return "metadata server " + host_; }

 protected:
  Result<GoogleAccessToken> FetchToken() override {
    std::string base =
        host_.starts_with("http://") || host_.starts_with("https://") ? host_ : "http://" + host_;
    std::string url = JoinUrl(base, "computeMetadata/v1/instance/service-accounts/default/token");
    QueryParams query;
    if (!scopes_.empty()) query.emplace_back("scopes", JoinScopes(scopes_, ","));
    auto response = session_->Send({.url = url,
                                    .query = query,
                                    .headers = {{"Metadata-Flavor", "Google"}},
                                    .authenticate = false});
    if (!response && !chosen_by_env_) {
      // Nothing else was configured: say what was looked for, as google-auth does.
      return Fail(Status(StatusCode::kFailedPrecondition,
                         "no Google credentials found: no key configured, "
                         "GOOGLE_APPLICATION_CREDENTIALS unset, no gcloud "
                         "application_default_credentials.json, and the metadata server " +
                             host_ + " cannot be reached (" + response.error().message() + ")",
                         FailureClass::kSource));
    }
    return ReadTokenResponse("metadata server", "GET", url, response);
  }

 private:
  std::string host_;
  std::vector<std::string> scopes_;
  bool chosen_by_env_;
  std::shared_ptr<HttpSession> session_;
};

class AnonymousCredentials final : public GoogleCredentials {
 public:
  std::string Describe() const override { return "anonymous (no token)"; }
  bool anonymous() const override { return true; }

 protected:
  Result<GoogleAccessToken> FetchToken() override { return GoogleAccessToken{}; }
};

// The credentials of one key file's content: service_account or authorized_user.
Result<std::shared_ptr<GoogleCredentials>> FromKeyJson(std::string_view json,
                                                       std::string_view origin,
                                                       const GoogleCredentialsOptions& options) {
  BIZON_ASSIGN_OR_RETURN(Value key, ParseKeyJson(json, origin));
  std::string type = StringField(key, "type");
  if (type == "service_account") {
    BIZON_ASSIGN_OR_RETURN(ServiceAccountKey parsed, ParseServiceAccountKey(json, origin));
    return std::make_shared<ServiceAccountCredentials>(std::move(parsed), options.scopes,
                                                       TokenSession(options));
  }
  if (type == "authorized_user") {
    BIZON_RETURN_IF_ERROR(
        MissingFields(origin, type, key, {"client_id", "client_secret", "refresh_token"}));
    return std::make_shared<AuthorizedUserCredentials>(key, TokenSession(options));
  }
  if (type.empty()) return Fail(KeyError(origin, "has no 'type' (service_account expected)"));
  return Fail(KeyError(origin, fmt::format("has type '{}', which is not supported here "
                                           "(service_account and authorized_user are)",
                                           type)));
}

Result<std::string> ReadKeyFile(const std::string& path, std::string_view origin) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail(KeyError(origin, "names a file that cannot be read: " + path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int64_t GoogleCredentials::refresh_at_us() const {
  std::lock_guard lock(mutex_);
  return refresh_at_us_;
}

Result<std::string> GoogleCredentials::AccessToken() {
  std::lock_guard lock(mutex_);
  int64_t now = now_us_ ? now_us_() : NowMicros();
  if (refresh_at_us_ != 0 && now < refresh_at_us_) return token_;
  return RefreshLocked();
}

Result<std::string> GoogleCredentials::Refresh() {
  std::lock_guard lock(mutex_);
  return RefreshLocked();
}

Result<std::string> GoogleCredentials::RefreshLocked() {
  int64_t fetched_at = now_us_ ? now_us_() : NowMicros();
  BIZON_ASSIGN_OR_RETURN(GoogleAccessToken fetched, FetchToken());
  token_ = std::move(fetched.token);
  if (!fetched.expires_in_s) {
    // No lifetime stated: kept until a 401 asks for another.
    refresh_at_us_ = INT64_MAX;
  } else {
    int64_t lifetime_us = std::max<int64_t>(*fetched.expires_in_s, 0) * kMicrosPerSecond;
    refresh_at_us_ = fetched_at + lifetime_us - std::min(kRefreshThresholdUs, lifetime_us / 10);
  }
  spdlog::debug("Google access token obtained from {}", Describe());
  return token_;
}

Result<ServiceAccountKey> ParseServiceAccountKey(std::string_view json, std::string_view origin) {
  BIZON_ASSIGN_OR_RETURN(Value key, ParseKeyJson(json, origin));
  if (std::string type = StringField(key, "type"); !type.empty() && type != "service_account") {
    return Fail(KeyError(origin, fmt::format("has type '{}', not service_account", type)));
  }
  BIZON_RETURN_IF_ERROR(
      MissingFields(origin, "service_account", key, {"client_email", "private_key"}));
  ServiceAccountKey out{.client_email = StringField(key, "client_email"),
                        .private_key = StringField(key, "private_key"),
                        .private_key_id = StringField(key, "private_key_id"),
                        .project_id = StringField(key, "project_id")};
  if (std::string uri = StringField(key, "token_uri"); !uri.empty()) out.token_uri = uri;
  // A key OpenSSL cannot read is a config error now, not a failed request later.
  auto probe = SignRs256("probe", out.private_key);
  if (!probe) return Fail(KeyError(origin, probe.error().message()));
  return out;
}

Result<std::string> MakeServiceAccountAssertion(const ServiceAccountKey& key,
                                                const std::vector<std::string>& scopes,
                                                int64_t issued_at_s) {
  Value header = Value::EmptyMap();
  if (!key.private_key_id.empty()) header.Set("kid", Value(key.private_key_id));
  Value claims(Value::Map{{"iss", Value(key.client_email)},
                          {"scope", Value(JoinScopes(scopes, " "))},
                          {"aud", Value(key.token_uri)},
                          {"iat", Value(issued_at_s)},
                          {"exp", Value(issued_at_s + kAssertionLifetimeS)}});
  BIZON_ASSIGN_OR_RETURN(std::string jwt, MakeRs256Jwt(header, claims, key.private_key));
  Mask(jwt);
  return jwt;
}

Result<std::shared_ptr<GoogleCredentials>> MakeGoogleCredentials(
    const GoogleCredentialsOptions& options) {
  GoogleEnvFunction env = options.env ? options.env : GoogleEnvFunction(ProcessEnv);
  std::shared_ptr<GoogleCredentials> credentials;
  if (!options.inline_key.empty()) {
    BIZON_ASSIGN_OR_RETURN(credentials,
                           FromKeyJson(options.inline_key, options.inline_key_origin, options));
  } else if (std::optional<std::string> path = env("GOOGLE_APPLICATION_CREDENTIALS")) {
    std::string origin = "GOOGLE_APPLICATION_CREDENTIALS (" + *path + ")";
    BIZON_ASSIGN_OR_RETURN(std::string text, ReadKeyFile(*path, origin));
    BIZON_ASSIGN_OR_RETURN(credentials, FromKeyJson(text, origin, options));
  } else {
    std::optional<std::string> config_dir = env("CLOUDSDK_CONFIG");
    if (!config_dir) {
      if (std::optional<std::string> home = env("HOME")) config_dir = *home + "/.config/gcloud";
    }
    std::string well_known =
        config_dir ? *config_dir + "/application_default_credentials.json" : std::string();
    if (std::ifstream probe(well_known); !well_known.empty() && probe) {
      std::string origin = "gcloud application default credentials (" + well_known + ")";
      BIZON_ASSIGN_OR_RETURN(std::string text, ReadKeyFile(well_known, origin));
      BIZON_ASSIGN_OR_RETURN(credentials, FromKeyJson(text, origin, options));
    } else {
      std::optional<std::string> host = env("GCE_METADATA_HOST");
      if (!host) host = env("GCE_METADATA_ROOT");
      bool chosen_by_env = host.has_value();
      credentials = std::make_shared<MetadataServerCredentials>(
          host.value_or(std::string(kDefaultMetadataHost)), options.scopes, chosen_by_env,
          TokenSession(options));
    }
  }
  spdlog::info("Google credentials: {}", credentials->Describe());
  return credentials;
}

std::shared_ptr<GoogleCredentials> MakeAnonymousGoogleCredentials() {
  return std::make_shared<AnonymousCredentials>();
}

Status GoogleAuthenticator::Apply(HttpRequest& request) {
  if (credentials_->anonymous()) return Status::Ok();
  BIZON_ASSIGN_OR_RETURN(std::string token, credentials_->AccessToken());
  request.headers.emplace_back("Authorization", "Bearer " + token);
  return Status::Ok();
}

Result<bool> GoogleAuthenticator::RefreshAfterUnauthorized() {
  if (credentials_->anonymous()) return false;
  auto refreshed = credentials_->Refresh();
  if (!refreshed) return Fail(refreshed.error());
  return true;
}

FieldSpec GoogleAuthenticationField() {
  return {
      .name = "authentication",
      .type = FieldType::kObject,
      .description = "Google credentials; without them Application Default Credentials are used.",
      .fields =
          {
              {.name = "service_account_key",
               .type = FieldType::kString,
               .description = "Service-account key file content (JSON text); empty means "
                              "Application Default Credentials.",
               .nullable = false,
               .default_value = "",
               .secret = true},
          },
      // The original drops unknown keys here without a word.
      .unknown_keys = UnknownKeys::kWarn,
  };
}

std::optional<std::string> ProcessEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

}  // namespace bizon
