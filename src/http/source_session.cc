#include "http/source_session.h"

namespace bizon {

Result<std::shared_ptr<HttpSession>> MakeSourceSession(const Value& source_config,
                                                       SourceSessionOptions options) {
  HttpPolicy policy;
  if (options.policy) {
    policy = *options.policy;
  } else {
    BIZON_ASSIGN_OR_RETURN(policy, HttpPolicy::FromSourceConfig(source_config));
  }
  options.auth.timeouts = policy.timeouts;
  options.auth.sleep = options.sleep;
  const Value* authentication =
      options.use_authentication ? source_config.Find("authentication") : nullptr;
  BIZON_ASSIGN_OR_RETURN(
      std::shared_ptr<Authenticator> authenticator,
      MakeAuthenticator(authentication != nullptr ? *authentication : Value(), options.auth));
  return std::make_shared<HttpSession>(HttpSessionOptions{
      .policy = std::move(policy),
      .authenticator = std::move(authenticator),
      .default_headers = std::move(options.default_headers),
      .sleep = std::move(options.sleep),
  });
}

}  // namespace bizon
