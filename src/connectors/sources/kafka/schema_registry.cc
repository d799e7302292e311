#include "connectors/sources/kafka/schema_registry.h"

#include <fmt/format.h>

#include "bizon/value.h"
#include "http/authenticator.h"
#include "http/url.h"

namespace bizon::kafka {

Result<RegistryType> ParseRegistryType(std::string_view text) {
  if (text == "apicurio") return RegistryType::kApicurio;
  if (text == "confluent") return RegistryType::kConfluent;
  return Fail(InvalidArgumentError(
      fmt::format("Schema registry type {} not supported: use apicurio or confluent", text)));
}

SchemaRegistry::SchemaRegistry(SchemaRegistryOptions options) : options_(std::move(options)) {
  HttpPolicy policy;
  policy.configured = true;
  policy.timeouts = {.connect_s = options_.timeout_s, .read_s = options_.timeout_s};
  // 404 gets its own message below, so statuses are inspected here rather than raised.
  policy.raise_for_status = false;
  policy.retries.total = 3;
  policy.retries.backoff_factor = 0.5;
  std::shared_ptr<Authenticator> authenticator;
  if (!options_.username.empty()) {
    authenticator = std::make_shared<BasicAuthenticator>(
        BasicParams{.username = options_.username, .password = options_.password});
  }
  session_ = std::make_unique<HttpSession>(
      HttpSessionOptions{.policy = std::move(policy),
                         .authenticator = std::move(authenticator),
                         .default_headers = {{"Accept", "application/json"}}});
}

Result<const RegisteredSchema*> SchemaRegistry::Get(int64_t id) {
  if (auto cached = cache_.find(id); cached != cache_.end()) return cached->second.get();
  if (options_.url.empty()) {
    return Fail(FailedPreconditionError(fmt::format(
        "cannot fetch Avro schema {}: authentication.schema_registry_url is not set", id)));
  }
  std::string url =
      options_.type == RegistryType::kApicurio
          ? JoinUrl(options_.url, fmt::format("apis/registry/v2/ids/globalIds/{}", id))
          : JoinUrl(options_.url, fmt::format("schemas/ids/{}", id));
  BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->Get(url));
  ++fetches_;
  if (response.status == 404) {
    return Fail(NotFoundError(fmt::format("schema {} not found in registry {}", id, options_.url)));
  }
  if (!response.ok()) return Fail(HttpStatusError("GET", url, response));
  auto body = Value::FromJson(response.body);
  if (!body) {
    return Fail(InvalidArgumentError(
        fmt::format("the registry {} returned a schema {} that is not JSON: {}", options_.url, id,
                    body.error().message())));
  }
  Value schema = std::move(*body);
  if (options_.type == RegistryType::kConfluent) {
    const Value* text = schema.Find("schema");
    if (text == nullptr || !text->is_string()) {
      return Fail(InvalidArgumentError(fmt::format(
          "the registry {} answered schema {} without a \"schema\" string", options_.url, id)));
    }
    auto parsed = Value::FromJson(text->AsString());
    if (!parsed) {
      return Fail(InvalidArgumentError(fmt::format("schema {} from registry {} is not JSON: {}", id,
                                                   options_.url, parsed.error().message())));
    }
    schema = std::move(*parsed);
  }
  auto decoder = AvroDecoder::CompileParsed(schema);
  if (!decoder) {
    return Fail(
        decoder.error().WithContext(fmt::format("schema {} from registry {}", id, options_.url)));
  }
  if (schema.is_map()) schema.Set("name", "Envelope");
  auto entry = std::make_unique<RegisteredSchema>(
      RegisteredSchema{.decoder = std::move(*decoder), .record_json = schema.ToJson()});
  const RegisteredSchema* stored = entry.get();
  cache_.emplace(id, std::move(entry));
  return stored;
}

}  // namespace bizon::kafka
