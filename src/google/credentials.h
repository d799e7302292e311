// Google credentials: where an OAuth 2 access token for Google APIs comes from, cached and
// renewed before it expires. One GoogleCredentials per client (a source, a destination, the
// secrets resolver), each with its own scopes: nothing is exported process-wide.
//
// | kind             | token from                                                               |
// |------------------|--------------------------------------------------------------------------|
// | service_account  | an RS256 JWT (iss = client_email, scope, aud = token_uri, iat, exp = iat |
// |                  | + 1 h, kid = private_key_id) exchanged at the key's `token_uri` with the |
// |                  | jwt-bearer grant                                                         |
// | authorized_user  | the refresh-token grant (client_id, client_secret, refresh_token) at     |
// |                  | `token_uri`, default https://oauth2.googleapis.com/token                 |
// | metadata server  | GET http://<GCE_METADATA_HOST or metadata.google.internal>/computeMetadata |
// |                  | /v1/instance/service-accounts/default/token?scopes=..., Metadata-Flavor   |
// | anonymous        | no token at all (emulators)                                              |
//
// Application Default Credentials (an empty inline key) follow google-auth's order: the file
// GOOGLE_APPLICATION_CREDENTIALS names, then gcloud's well-known file
// ($CLOUDSDK_CONFIG/application_default_credentials.json, else
// ~/.config/gcloud/application_default_credentials.json), then the metadata server.
//
// A token is renewed once it is within min(225 s, 10% of its lifetime) of expiring (google-auth
// renews 3 min 45 s ahead; the 10% keeps short-lived tokens usable), and on demand after a 401.
// Key material (the private key, client secrets, refresh tokens, signed assertions) and every
// access token go to the process-wide SecretMask; no error message quotes them.
//
// Thread-safety: AccessToken() and Refresh() may be called from several threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bizon/config_spec.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "http/authenticator.h"
#include "http/http_session.h"

namespace bizon {

inline constexpr std::string_view kGoogleTokenUri = "https://oauth2.googleapis.com/token";
inline constexpr std::string_view kGoogleCloudPlatformScope =
    "https://www.googleapis.com/auth/cloud-platform";

struct GoogleAccessToken {
  std::string token;
  /// Lifetime in seconds as the server stated it; unset when it gave none.
  std::optional<int64_t> expires_in_s;
};

class GoogleCredentials {
 public:
  virtual ~GoogleCredentials() = default;

  /// The cached token, fetched first when there is none or it is about to expire. Empty for
  /// anonymous credentials.
  Result<std::string> AccessToken();
  /// Fetches a new token whatever the cache holds (after a 401).
  Result<std::string> Refresh();

  /// For logs: "service account reader@p.iam.gserviceaccount.com", "metadata server ...".
  virtual std::string Describe() const = 0;
  /// The project the credentials belong to, when they say (a key's project_id).
  virtual std::optional<std::string> project_id() const { return std::nullopt; }
  virtual bool anonymous() const { return false; }

  /// Microseconds since the epoch at which the cached token counts as expired; 0 with none.
  int64_t refresh_at_us() const;

  /// Replaces the clock (tests).
  void set_clock(std::function<int64_t()> now_us) { now_us_ = std::move(now_us); }

 protected:
  virtual Result<GoogleAccessToken> FetchToken() = 0;

 private:
  Result<std::string> RefreshLocked();

  mutable std::mutex mutex_;
  std::string token_;
  int64_t refresh_at_us_ = 0;
  std::function<int64_t()> now_us_;
};

/// A parsed service-account key file (the fields the token exchange needs).
struct ServiceAccountKey {
  std::string client_email;
  std::string private_key;
  std::string private_key_id;
  std::string token_uri = std::string(kGoogleTokenUri);
  std::string project_id;
};

/// Reads a service-account key's JSON text. `origin` names it in errors (a yaml path, a file);
/// errors are kInvalidArgument, class config, and never quote the text. Registers the key's
/// secrets with the SecretMask.
Result<ServiceAccountKey> ParseServiceAccountKey(std::string_view json, std::string_view origin);

/// The signed assertion of `key` for `scopes` at `issued_at_s` (seconds since the epoch).
Result<std::string> MakeServiceAccountAssertion(const ServiceAccountKey& key,
                                                const std::vector<std::string>& scopes,
                                                int64_t issued_at_s);

/// Reads an environment variable; replaced in tests.
using GoogleEnvFunction = std::function<std::optional<std::string>(const std::string& name)>;
/// The process environment's `name`; nullopt when unset or empty. The GoogleEnvFunction used when
/// none is given.
std::optional<std::string> ProcessEnv(const std::string& name);

struct GoogleCredentialsOptions {
  /// Inline key file content (a service_account or authorized_user JSON); empty uses
  /// Application Default Credentials.
  std::string inline_key;
  /// Names the inline key in errors, e.g. "source.service_account_key (line 7)".
  std::string inline_key_origin = "service_account_key";
  std::vector<std::string> scopes = {std::string(kGoogleCloudPlatformScope)};
  /// Timeouts of the token requests.
  HttpTimeouts timeouts = {.connect_s = 10, .read_s = 60};
  HttpSleepFunction sleep = ScaledSleep;
  /// Default: getenv.
  GoogleEnvFunction env;
};

/// The credentials an inline key, or else Application Default Credentials, select. An
/// unreadable or unsupported key file is kInvalidArgument (class config); having none at all is
/// only found out when the metadata server cannot be reached for the first token.
Result<std::shared_ptr<GoogleCredentials>> MakeGoogleCredentials(
    const GoogleCredentialsOptions& options);

/// Credentials that send no token (emulators).
std::shared_ptr<GoogleCredentials> MakeAnonymousGoogleCredentials();

/// The `authentication` option block of a connector that calls Google (the bigquery destinations,
/// gcs): a service-account key, else Application Default Credentials.
FieldSpec GoogleAuthenticationField();

/// The HTTP toolkit's Authenticator over Google credentials: `Authorization: Bearer <token>`,
/// renewed before expiry and once after a 401. Anonymous credentials add nothing.
class GoogleAuthenticator final : public Authenticator {
 public:
  explicit GoogleAuthenticator(std::shared_ptr<GoogleCredentials> credentials)
      : credentials_(std::move(credentials)) {}
  Status Apply(HttpRequest& request) override;
  Result<bool> RefreshAfterUnauthorized() override;

 private:
  std::shared_ptr<GoogleCredentials> credentials_;
};

}  // namespace bizon
