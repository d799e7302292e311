#include "bizon/secret_mask.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <mutex>

namespace bizon {
namespace {

std::mutex& SecretMutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

bool LooksLikeCredentialName(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static constexpr std::string_view kParts[] = {
      "secret",  "password",   "passwd",        "token",     "apikey", "api_key",
      "api-key", "credential", "authorization", "signature", "cookie", "session",
      "private", "key.pem",    "userinfo",      "user.info"};
  static constexpr std::string_view kEndings[] = {"key", "keys", "sig", "pwd", "auth"};
  return std::any_of(std::begin(kParts), std::end(kParts),
                     [&](std::string_view part) { return lower.find(part) != lower.npos; }) ||
         std::any_of(std::begin(kEndings), std::end(kEndings),
                     [&](std::string_view ending) { return lower.ends_with(ending); });
}

SecretMask& SecretMask::Global() {
  static SecretMask mask;
  return mask;
}

void SecretMask::Add(std::string_view secret) {
  if (secret.size() < 4) return;
  std::lock_guard lock(SecretMutex());
  if (std::find(secrets_.begin(), secrets_.end(), secret) == secrets_.end()) {
    secrets_.emplace_back(secret);
  }
}

std::string SecretMask::Redact(std::string_view text) const {
  std::lock_guard lock(SecretMutex());
  std::string out(text);
  for (const std::string& secret : secrets_) {
    size_t pos = 0;
    while ((pos = out.find(secret, pos)) != std::string::npos) {
      out.replace(pos, secret.size(), "****");
      pos += 4;
    }
  }
  return out;
}

bool SecretMask::empty() const {
  std::lock_guard lock(SecretMutex());
  return secrets_.empty();
}

}  // namespace bizon
