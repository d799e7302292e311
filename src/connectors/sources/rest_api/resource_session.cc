#include "connectors/sources/rest_api/resource_session.h"

#include <fmt/format.h>

#include <utility>

#include "bizon/secret_mask.h"
#include "connectors/sources/rest_api/rest_api_spec.h"
#include "http/source_session.h"

namespace bizon {

QueryKeyAuthenticator::QueryKeyAuthenticator(std::string name, std::string key)
    : name_(std::move(name)), key_(std::move(key)) {
  SecretMask::Global().Add(key_);
}

Status QueryKeyAuthenticator::Apply(HttpRequest& request) {
  request.query.emplace_back(name_, key_);
  return Status::Ok();
}

Result<std::shared_ptr<Authenticator>> MakeResourceAuthenticator(const Value& auth) {
  std::string type = auth.GetString("type");
  if (type == "bearer") {
    return std::shared_ptr<Authenticator>(
        std::make_shared<TokenAuthenticator>(TokenParams{.token = auth.GetString("token")}));
  }
  if (type == "api_key") {
    std::string name = auth.GetString("name", "Authorization");
    std::string key = auth.GetString("api_key");
    if (auth.GetString("location", "header") == "query") {
      return std::shared_ptr<Authenticator>(
          std::make_shared<QueryKeyAuthenticator>(std::move(name), std::move(key)));
    }
    return std::shared_ptr<Authenticator>(std::make_shared<TokenAuthenticator>(
        TokenParams{.token = std::move(key), .auth_method = "", .auth_header = std::move(name)}));
  }
  if (type == "basic") {
    return std::shared_ptr<Authenticator>(std::make_shared<BasicAuthenticator>(BasicParams{
        .username = auth.GetString("username"), .password = auth.GetString("password")}));
  }
  return Fail(InvalidArgumentError(fmt::format("unknown auth type '{}'", type)));
}

Result<std::shared_ptr<HttpSession>> MakeResourceSession(const Value& source, const Value* auth) {
  SourceSessionOptions options;
  for (const auto& [name, value] : ParamsOf(source.Find("headers"))) {
    options.default_headers.emplace_back(name, value);
  }
  if (auth == nullptr) return MakeSourceSession(source, std::move(options));
  BIZON_ASSIGN_OR_RETURN(HttpPolicy policy, HttpPolicy::FromSourceConfig(source));
  BIZON_ASSIGN_OR_RETURN(std::shared_ptr<Authenticator> authenticator,
                         MakeResourceAuthenticator(*auth));
  return std::make_shared<HttpSession>(HttpSessionOptions{
      .policy = std::move(policy),
      .authenticator = std::move(authenticator),
      .default_headers = std::move(options.default_headers),
  });
}

}  // namespace bizon
