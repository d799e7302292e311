#include "google/secret_manager.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "bizon/secret_mask.h"
#include "common/ascii.h"
#include "google/credentials.h"
#include "google/jwt.h"
#include "http/http_session.h"

namespace bizon {
namespace {

constexpr std::string_view kFullNameShape = "projects/<project>/secrets/<id>/versions/<version>";

// Secret ids and version ids are letters, digits, '-' and '_' (Secret Manager's own rule for
// ids; versions are numbers, `latest` or an alias); project ids may also hold '.' and ':'
// (domain-scoped projects). Anything else would change the request path or query.
bool IsSegment(std::string_view segment, bool project) {
  if (segment.empty()) return false;
  for (char c : segment) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
              (project && (c == '.' || c == ':'));
    if (!ok) return false;
  }
  return true;
}

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// "404 NOT_FOUND: Secret [...] not found or has no versions." from Google's error shape, else
// the status and an excerpt of whatever came back.
std::string DescribeError(const HttpResponse& response) {
  auto parsed = Value::FromJson(response.body);
  if (parsed && parsed->is_map()) {
    if (const Value* error = parsed->Find("error"); error != nullptr && error->is_map()) {
      std::string status = error->GetString("status");
      std::string message = error->GetString("message");
      return fmt::format("{}{}{}{}", response.status, status.empty() ? "" : " " + status,
                         message.empty() ? "" : ": ", message);
    }
  }
  return fmt::format("HTTP {}: {}", response.status, BodyExcerpt(response.body));
}

}  // namespace

Result<std::string> SecretVersionName(std::string_view path,
                                      const std::optional<std::string>& project) {
  path = TrimAsciiSpace(path);
  if (path.starts_with("projects/")) {
    std::vector<std::string_view> parts = Split(path, '/');
    if (parts.size() != 6 || parts[2] != "secrets" || parts[4] != "versions" ||
        !IsSegment(parts[1], true) || !IsSegment(parts[3], false) || !IsSegment(parts[5], false)) {
      return Fail(InvalidArgumentError(
          fmt::format("cannot resolve gsm://{}: a full secret version name has the shape {}", path,
                      kFullNameShape)));
    }
    return std::string(path);
  }
  std::string_view secret = path;
  std::string_view version = "latest";
  if (size_t at = path.find("/versions/"); at != std::string_view::npos) {
    secret = path.substr(0, at);
    version = path.substr(at + std::string_view("/versions/").size());
  }
  if (!IsSegment(secret, false) || !IsSegment(version, false)) {
    return Fail(InvalidArgumentError(fmt::format(
        "cannot resolve gsm://{}: expected '<id>', '<id>/versions/<version>' or '{}' (ids are "
        "letters, digits, '-' and '_')",
        path, kFullNameShape)));
  }
  if (!project || project->empty()) {
    return Fail(InvalidArgumentError(fmt::format(
        "cannot resolve gsm://{}: no GCP project. Set 'secrets.gsm.project_id' in the config, the "
        "GOOGLE_CLOUD_PROJECT env var, or use a full "
        "'gsm://projects/<project>/secrets/<id>/versions/<n>' path.",
        path)));
  }
  if (!IsSegment(*project, true)) {
    return Fail(InvalidArgumentError(fmt::format(
        "cannot resolve gsm://{}: the GCP project id holds characters a project id cannot: {}",
        path, *project)));
  }
  return fmt::format("projects/{}/secrets/{}/versions/{}", *project, secret, version);
}

uint32_t Crc32c(std::string_view bytes) {
  static const std::array<uint32_t, 256> kTable = [] {
    std::array<uint32_t, 256> table{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t crc = i;
      for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? 0x82F63B78u : 0);
      table[i] = crc;
    }
    return table;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (char c : bytes) crc = (crc >> 8) ^ kTable[(crc ^ static_cast<unsigned char>(c)) & 0xFF];
  return crc ^ 0xFFFFFFFFu;
}

struct GoogleSecretManager::Client {
  std::string endpoint;
  std::shared_ptr<GoogleCredentials> credentials;
  std::unique_ptr<HttpSession> session;
};

GoogleSecretManager::GoogleSecretManager(SecretManagerOptions options)
    : options_(std::move(options)) {
  if (!options_.env) options_.env = ProcessEnv;
}

GoogleSecretManager::~GoogleSecretManager() = default;

Status GoogleSecretManager::Connect() {
  auto client = std::make_unique<Client>();
  client->endpoint = std::string(kSecretManagerEndpoint);
  if (std::optional<std::string> endpoint =
          options_.env(std::string(kSecretManagerEndpointVariable))) {
    if (!endpoint->starts_with("http://") && !endpoint->starts_with("https://")) {
      return InvalidArgumentError(
          fmt::format("{} must be a URL starting with http:// or https://: {}",
                      kSecretManagerEndpointVariable, *endpoint));
    }
    while (endpoint->ends_with('/')) endpoint->pop_back();
    client->endpoint = std::move(*endpoint);
  }
  BIZON_ASSIGN_OR_RETURN(client->credentials,
                         MakeGoogleCredentials({.inline_key = "",
                                                .scopes = {std::string(kGoogleCloudPlatformScope)},
                                                .env = options_.env}));
  spdlog::debug("Google Secret Manager at {} with {}", client->endpoint,
                client->credentials->Describe());
  // google-cloud-secret-manager retries UNAVAILABLE and RESOURCE_EXHAUSTED; so do 429 and 5xx
  // here, a few times, with the policy's backoff. Other answers are reported, not retried.
  HttpPolicy policy{.configured = true,
                    .timeouts = {.connect_s = 10, .read_s = 60},
                    .raise_for_status = false,
                    .retries = RetryPolicy{.total = 5, .backoff_factor = 1}};
  client->session = std::make_unique<HttpSession>(HttpSessionOptions{
      .policy = std::move(policy),
      .authenticator = std::make_shared<GoogleAuthenticator>(client->credentials)});
  client_ = std::move(client);
  return Status::Ok();
}

std::optional<std::string> GoogleSecretManager::Project() const {
  if (options_.project_id && !options_.project_id->empty()) return options_.project_id;
  for (const char* name : {"GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"}) {
    if (std::optional<std::string> project = options_.env(name)) return project;
  }
  if (client_ != nullptr) return client_->credentials->project_id();
  return std::nullopt;
}

Result<std::string> GoogleSecretManager::Resolve(std::string_view raw_path) {
  std::string path(TrimAsciiSpace(raw_path));
  // A malformed path is refused before any credentials are looked for (the placeholder project
  // only lets the short forms be checked).
  if (auto checked = SecretVersionName(path, std::string("_")); !checked) {
    return Fail(std::move(checked.error()));
  }
  if (client_ == nullptr) {
    Status connected = Connect();
    if (!connected.ok()) {
      return Fail(InvalidArgumentError(
          fmt::format("cannot resolve gsm://{}: {}", path, connected.message())));
    }
  }
  BIZON_ASSIGN_OR_RETURN(std::string name, SecretVersionName(path, Project()));
  std::string url = fmt::format("{}/v1/{}:access", client_->endpoint, name);
  auto failed = [&](std::string_view problem) {
    return Fail(InvalidArgumentError(
        fmt::format("could not access '{}' for gsm://{}: {}", name, path, problem)));
  };
  auto response = client_->session->Get(url);
  if (!response) return failed(response.error().message());
  if (!response->ok()) return failed(DescribeError(*response));

  auto parsed = Value::FromJson(response->body);
  const Value* payload = parsed && parsed->is_map() ? parsed->Find("payload") : nullptr;
  const Value* data = payload != nullptr && payload->is_map() ? payload->Find("data") : nullptr;
  if (payload != nullptr && payload->is_map() && data == nullptr) {
    // proto3 JSON leaves out empty bytes: an empty secret version.
    static const Value kEmpty{std::string()};
    data = &kEmpty;
  }
  if (data == nullptr || !data->is_string()) {
    return failed("the answer has no payload.data (not an AccessSecretVersionResponse)");
  }
  std::optional<std::string> value = Base64Decode(data->AsString());
  if (!value) return failed("payload.data is not base64");
  SecretMask::Global().Add(*value);
  if (const Value* crc = payload->Find("dataCrc32c"); crc != nullptr && !crc->is_null()) {
    // int64 fields are JSON strings in proto3; accept a number too.
    std::string text = crc->is_string() ? crc->AsString() : crc->ToDisplayString();
    int64_t expected = -1;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), expected);
    if (error != std::errc() || end != text.data() + text.size() ||
        expected != static_cast<int64_t>(Crc32c(*value))) {
      return failed("the payload does not match its dataCrc32c checksum (corrupted in transit)");
    }
  }
  if (simdjson::validate_utf8(value->data(), value->size()) == false) {
    return failed("the payload is not UTF-8 text");
  }
  return std::move(*value);
}

}  // namespace bizon
