// Where a Google API client sends its requests, and with which credentials: an explicit
// endpoint, else the API's emulator variable (STORAGE_EMULATOR_HOST, BIGQUERY_EMULATOR_HOST; a
// host:port without a scheme is http://, as Google's SDKs read it; no token is sent then), else
// the production endpoint with the given credentials or Application Default Credentials.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "bizon/status.h"
#include "google/credentials.h"
#include "http/http_session.h"

namespace bizon {

struct GoogleApiEndpoint {
  /// scheme://host[:port], no trailing slash.
  std::string url;
  /// True when `url` came from the emulator variable.
  bool emulator = false;
  /// Anonymous for the emulator.
  std::shared_ptr<GoogleCredentials> credentials;
};

struct GoogleApiEndpointOptions {
  /// For messages: "BigQuery", "GCS".
  std::string_view api;
  /// Explicit scheme://host[:port]; empty: the emulator variable, else `production`.
  std::string endpoint;
  std::string emulator_variable;
  std::string_view production;
  /// Null: Application Default Credentials with `scope` (unless the emulator is used).
  std::shared_ptr<GoogleCredentials> credentials;
  std::string scope;
  HttpSleepFunction sleep = ScaledSleep;
  /// Default: getenv.
  GoogleEnvFunction env;
};

/// The HttpSession options of a Google API client: its timeouts and retries, no
/// raise-for-status (the client reads Google's error bodies itself), and the bearer token of
/// `credentials` unless they are anonymous.
HttpSessionOptions GoogleApiSessionOptions(const std::shared_ptr<GoogleCredentials>& credentials,
                                           const HttpTimeouts& timeouts, const RetryPolicy& retries,
                                           HttpSleepFunction sleep);

/// A multipart/related upload body (Google's `uploadType=multipart`): the JSON metadata part,
/// then `data` labelled `content_type`.
struct GoogleMultipartBody {
  /// The request's Content-Type header value, with the boundary.
  std::string content_type;
  std::string body;
};
GoogleMultipartBody MakeGoogleMultipartBody(std::string_view metadata_json, std::string_view data,
                                            std::string_view content_type);

/// An endpoint that is not an http:// or https:// URL is kInvalidArgument.
Result<GoogleApiEndpoint> ResolveGoogleApiEndpoint(GoogleApiEndpointOptions options);

/// The endpoint the emulator variable `variable` names, with http:// added when it has no scheme
/// and trailing slashes removed; nullopt when it is unset or empty.
std::optional<std::string> GoogleEmulatorEndpoint(const GoogleEnvFunction& env,
                                                  const std::string& variable);

}  // namespace bizon
