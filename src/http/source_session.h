// The default HTTP session of a source, built from its validated `source:` mapping: the policy
// from `http` (or the historical one, see retry_policy.h) and the authenticator from
// `authentication` (see authenticator.h).
#pragma once

#include <memory>

#include "bizon/status.h"
#include "bizon/value.h"
#include "http/authenticator.h"
#include "http/http_session.h"

namespace bizon {

struct SourceSessionOptions {
  /// Passed to MakeAuthenticator (allowed types, a fixed token endpoint).
  AuthenticatorOptions auth;
  /// Headers every request of the source carries (an API version, Accept).
  HttpHeaders default_headers;
  /// Replaces the policy the config selects (a connector with a fixed policy of its own, as the
  /// original's sources that override get_session()).
  std::optional<HttpPolicy> policy;
  /// False builds no authenticator whatever `authentication` says (public APIs).
  bool use_authentication = true;
  HttpSleepFunction sleep = ScaledSleep;
};

Result<std::shared_ptr<HttpSession>> MakeSourceSession(const Value& source_config,
                                                       SourceSessionOptions options = {});

}  // namespace bizon
