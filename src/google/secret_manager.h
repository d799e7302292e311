// Google Secret Manager, REST API v1: the payload of one secret version, for `gsm://`
// references (src/config/references.cc calls it; this header stays small so the config layer
// needs none of the HTTP or credentials headers).
//
//   GET <endpoint>/v1/projects/<p>/secrets/<id>/versions/<v>:access
//   Authorization: Bearer <token with the cloud-platform scope>
//   -> {"name": "projects/<number>/secrets/<id>/versions/<n>",
//       "payload": {"data": "<base64>", "dataCrc32c": "<int64 as a string>"}}
//
// `data` is decoded from base64 and must be UTF-8 (the original decodes it as UTF-8); when the
// answer carries `dataCrc32c` the decoded bytes are checked against it. Errors are Google's
// {"error": {"code", "message", "status"}} shape, reported as "404 NOT_FOUND: <message>".
//
// The endpoint is https://secretmanager.googleapis.com, or the URL in
// BIZON_SECRETMANAGER_ENDPOINT (tests point it at tests/fakes/fake_secret_manager.py; Google's
// client libraries read no such variable). Credentials are Application Default Credentials
// through src/google/credentials.h, made on the first access.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "bizon/status.h"

namespace bizon {

inline constexpr std::string_view kSecretManagerEndpoint = "https://secretmanager.googleapis.com";
inline constexpr std::string_view kSecretManagerEndpointVariable = "BIZON_SECRETMANAGER_ENDPOINT";

/// The full secret version name a `gsm://` path stands for, as the original forms it:
/// `<id>` -> projects/<project>/secrets/<id>/versions/latest, `<id>/versions/<v>` pinned,
/// `projects/<p>/secrets/<id>/versions/<v>` as written. `project` is needed only by the short
/// forms; without it the error says where to set one. Segments holding '/', '?', '#', '%',
/// ':' or spaces are refused (they would change the request path).
Result<std::string> SecretVersionName(std::string_view path,
                                      const std::optional<std::string>& project);

/// CRC32C (Castagnoli) of `bytes`, as Secret Manager's dataCrc32c.
uint32_t Crc32c(std::string_view bytes);

struct SecretManagerOptions {
  /// `secrets.gsm.project_id`; unset falls back to GOOGLE_CLOUD_PROJECT, GCLOUD_PROJECT, then
  /// the credentials' own project (a key file's project_id), as google.auth.default() does.
  std::optional<std::string> project_id;
  /// Reads an environment variable; default getenv (tests replace it).
  std::function<std::optional<std::string>(const std::string& name)> env;
};

/// Resolves `gsm://` paths. Nothing is contacted before the first Resolve(); credentials and
/// the HTTP session are made then and reused. Not thread-safe (one per reference resolver).
class GoogleSecretManager {
 public:
  explicit GoogleSecretManager(SecretManagerOptions options);
  ~GoogleSecretManager();
  GoogleSecretManager(const GoogleSecretManager&) = delete;
  GoogleSecretManager& operator=(const GoogleSecretManager&) = delete;

  /// The secret's text for `path` (what follows `gsm://`). Errors name `gsm://<path>` and the
  /// version name, never a payload; the value is registered with the SecretMask.
  Result<std::string> Resolve(std::string_view path);

 private:
  struct Client;
  Status Connect();
  std::optional<std::string> Project() const;

  SecretManagerOptions options_;
  std::unique_ptr<Client> client_;
};

}  // namespace bizon
