#include "google/google_endpoint.h"

#include <fmt/format.h>

#include <cstdlib>
#include <random>

namespace bizon {
namespace {

std::string TrimSlashes(std::string text) {
  while (!text.empty() && text.back() == '/') text.pop_back();
  return text;
}

}  // namespace

std::optional<std::string> GoogleEmulatorEndpoint(const GoogleEnvFunction& env,
                                                  const std::string& variable) {
  std::optional<std::string> host;
  if (env) {
    host = env(variable);
  } else if (const char* value = std::getenv(variable.c_str()); value != nullptr) {
    host = std::string(value);
  }
  if (!host || host->empty()) return std::nullopt;
  std::string endpoint = *host;
  if (endpoint.find("://") == std::string::npos) endpoint = "http://" + endpoint;
  return TrimSlashes(std::move(endpoint));
}

HttpSessionOptions GoogleApiSessionOptions(const std::shared_ptr<GoogleCredentials>& credentials,
                                           const HttpTimeouts& timeouts, const RetryPolicy& retries,
                                           HttpSleepFunction sleep) {
  HttpSessionOptions options;
  options.policy.configured = true;
  options.policy.timeouts = timeouts;
  options.policy.raise_for_status = false;
  options.policy.retries = retries;
  if (!credentials->anonymous()) {
    options.authenticator = std::make_shared<GoogleAuthenticator>(credentials);
  }
  options.sleep = std::move(sleep);
  return options;
}

Result<GoogleApiEndpoint> ResolveGoogleApiEndpoint(GoogleApiEndpointOptions options) {
  GoogleApiEndpoint out{.url = TrimSlashes(options.endpoint)};
  if (out.url.empty()) {
    if (std::optional<std::string> emulated =
            GoogleEmulatorEndpoint(options.env, options.emulator_variable)) {
      out.url = *emulated;
      out.emulator = true;
    } else {
      out.url = std::string(options.production);
    }
  }
  if (!out.url.starts_with("http://") && !out.url.starts_with("https://")) {
    return Fail(InvalidArgumentError(
        fmt::format("{} endpoint must be an http:// or https:// URL: {}", options.api, out.url)));
  }
  if (out.emulator) {
    out.credentials = MakeAnonymousGoogleCredentials();
  } else if (options.credentials) {
    out.credentials = std::move(options.credentials);
  } else {
    BIZON_ASSIGN_OR_RETURN(out.credentials, MakeGoogleCredentials({.scopes = {options.scope},
                                                                   .sleep = options.sleep,
                                                                   .env = options.env}));
  }
  return out;
}

GoogleMultipartBody MakeGoogleMultipartBody(std::string_view metadata_json, std::string_view data,
                                            std::string_view content_type) {
  static thread_local std::mt19937_64 generator(std::random_device{}());
  auto random_boundary = [] {
    return fmt::format("bizon_{:016x}{:016x}", generator(), generator());
  };
  std::string boundary = random_boundary();
  while (data.find(boundary) != std::string_view::npos) boundary = random_boundary();
  GoogleMultipartBody out;
  out.content_type = fmt::format("multipart/related; boundary={}", boundary);
  out.body = fmt::format(
      "--{0}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{1}\r\n"
      "--{0}\r\nContent-Type: {2}\r\n\r\n",
      boundary, metadata_json, content_type);
  out.body.reserve(out.body.size() + data.size() + boundary.size() + 8);
  out.body.append(data);
  out.body += fmt::format("\r\n--{}--\r\n", boundary);
  return out;
}

}  // namespace bizon
