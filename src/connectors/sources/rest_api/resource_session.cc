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
  OptionReader options(ResourceAuthDeclaration(), auth);
  const std::string& type = options.Variant();
  std::shared_ptr<Authenticator> authenticator;
  if (type == "bearer") {
    authenticator =
        std::make_shared<TokenAuthenticator>(TokenParams{.token = options.String("token")});
  } else if (type == "api_key") {
    std::string name = options.String("name");
    std::string key = options.String("api_key");
    if (options.String("location") == "query") {
      authenticator = std::make_shared<QueryKeyAuthenticator>(std::move(name), std::move(key));
    } else {
      authenticator = std::make_shared<TokenAuthenticator>(
          TokenParams{.token = std::move(key), .auth_method = "", .auth_header = std::move(name)});
    }
  } else if (type == "basic") {
    authenticator = std::make_shared<BasicAuthenticator>(BasicParams{
        .username = options.String("username"), .password = options.String("password")});
  } else {
    return Fail(InvalidArgumentError(fmt::format("unknown auth type '{}'", type)));
  }
  BIZON_RETURN_IF_ERROR(options.status());
  return authenticator;
}

Result<std::shared_ptr<HttpSession>> MakeResourceSession(const Value& source, const Value* auth) {
  SourceSessionOptions options;
  OptionReader source_options(RestApiDeclaration(), source);
  for (const auto& [name, value] : ParamsOf(source_options.Find("headers"))) {
    options.default_headers.emplace_back(name, value);
  }
  BIZON_RETURN_IF_ERROR(source_options.status());
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
