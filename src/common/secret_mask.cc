#include "bizon/secret_mask.h"

#include <algorithm>
#include <mutex>

namespace bizon {
namespace {

std::mutex& SecretMutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

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
