// The process-wide set of secrets that logs, errors and result files redact.
//
// Public because a connector that obtains a credential at run time (a session token, a password
// read from its own config) must register it, as the built-in ones do. Resolved `env://` and
// `gsm://` references are registered by the config loader.
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace bizon {

/// Whether a setting, query parameter or header named `name` (any case) usually carries a
/// credential: names holding secret, password, token, api key, credential, signature, cookie,
/// session or private, and names ending in key, sig, pwd or auth (`api_key`, `X-Api-Key`,
/// `Authorization`, `sasl.password`, `ssl.key.pem`, `access_token`). Errs on the side of masking:
/// a value wrongly masked only hides that text from logs.
bool LooksLikeCredentialName(std::string_view name);

class SecretMask {
 public:
  /// The one set of the process.
  static SecretMask& Global();

  /// Adds `secret` to the set. Values shorter than 4 characters are ignored: redacting them
  /// would mangle ordinary words (they are masked only where printed as fields).
  void Add(std::string_view secret);

  /// `text` with each occurrence of every registered secret replaced by "****".
  std::string Redact(std::string_view text) const;

  bool empty() const;

 private:
  std::vector<std::string> secrets_;
};

}  // namespace bizon
