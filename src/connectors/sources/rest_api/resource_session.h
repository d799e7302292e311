// The HTTP session of a rest_api resource: the source's own (its `authentication` block), or, for a
// resource with an `auth` block, a session of its own under the same policy and headers, with
// those credentials: bearer, basic, or an API key in a header or in the query string.
#pragma once

#include <memory>
#include <string>

#include "bizon/status.h"
#include "bizon/value.h"
#include "http/authenticator.h"
#include "http/http_session.h"

namespace bizon {

/// Adds `name=<key>` to every request's query. The key is registered with the secret mask, so
/// the URLs quoted in logs and errors show it masked.
class QueryKeyAuthenticator final : public Authenticator {
 public:
  QueryKeyAuthenticator(std::string name, std::string key);
  Status Apply(HttpRequest& request) override;

 private:
  std::string name_;
  std::string key_;
};

/// The authenticator of a validated resource `auth` block.
Result<std::shared_ptr<Authenticator>> MakeResourceAuthenticator(const Value& auth);

/// A session for `source` (the validated source block: its policy and headers) whose credentials
/// are `auth` (a resource's block) when given, else the source's `authentication`.
Result<std::shared_ptr<HttpSession>> MakeResourceSession(const Value& source, const Value* auth);

}  // namespace bizon
