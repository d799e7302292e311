#include "bizon/config_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace bizon {

Option::Option(std::string name, FieldType type, std::string description)
    : spec_{.name = std::move(name), .type = type, .description = std::move(description)} {}

Option Option::String(std::string name, std::string description) {
  return Option(std::move(name), FieldType::kString, std::move(description));
}

Option Option::Integer(std::string name, std::string description) {
  return Option(std::move(name), FieldType::kInteger, std::move(description));
}

Option Option::Number(std::string name, std::string description) {
  return Option(std::move(name), FieldType::kNumber, std::move(description));
}

Option Option::Boolean(std::string name, std::string description) {
  return Option(std::move(name), FieldType::kBoolean, std::move(description));
}

Option Option::Enum(std::string name, std::vector<std::string> values, std::string description) {
  Option option(std::move(name), FieldType::kEnum, std::move(description));
  option.spec_.enum_values = std::move(values);
  return option;
}

Option Option::Object(std::string name, std::vector<FieldSpec> fields, std::string description) {
  Option option(std::move(name), FieldType::kObject, std::move(description));
  option.spec_.fields = std::move(fields);
  return option;
}

Option Option::Variants(std::string name, std::string discriminator,
                        std::vector<VariantSpec> variants, std::string description) {
  Option option(std::move(name), FieldType::kObject, std::move(description));
  option.spec_.discriminator = std::move(discriminator);
  option.spec_.variants = std::move(variants);
  return option;
}

Option Option::List(std::string name, FieldSpec item, std::string description) {
  Option option(std::move(name), FieldType::kList, std::move(description));
  option.spec_.items = {std::move(item)};
  return option;
}

Option Option::Map(std::string name, std::string description) {
  return Option(std::move(name), FieldType::kMap, std::move(description));
}

Option& Option::Required() {
  spec_.required = true;
  return *this;
}

Option& Option::NotNull() {
  spec_.nullable = false;
  return *this;
}

Option& Option::NullIsValue() {
  spec_.null_is_value = true;
  return *this;
}

Option& Option::Default(Value value) {
  spec_.default_value = std::move(value);
  return *this;
}

Option& Option::Minimum(double minimum) {
  spec_.minimum = minimum;
  return *this;
}

Option& Option::Maximum(double maximum) {
  spec_.maximum = maximum;
  return *this;
}

Option& Option::Secret() {
  spec_.secret = true;
  return *this;
}

Option& Option::Example(std::string example) {
  spec_.example = std::move(example);
  return *this;
}

Option& Option::Deprecated(std::string instead) {
  spec_.deprecated = std::move(instead);
  return *this;
}

Option& Option::NoEffect(std::string why) {
  spec_.no_effect = std::move(why);
  return *this;
}

Option& Option::OnUnknownKeys(UnknownKeys policy) {
  spec_.unknown_keys = policy;
  return *this;
}

Option& Option::Items(FieldSpec item) {
  spec_.items = {std::move(item)};
  return *this;
}

Option& Option::DefaultVariant(std::string tag) {
  spec_.default_variant = std::move(tag);
  return *this;
}

namespace {

/// The variant of `declaration` that `block` selects: its discriminator's value, else the
/// default variant. Empty for an object without variants.
std::string VariantOf(const FieldSpec& declaration, const Value& block) {
  if (declaration.variants.empty()) return "";
  const Value* tag = block.Find(declaration.discriminator);
  return tag != nullptr && tag->is_string() ? tag->AsString() : declaration.default_variant;
}

/// The fields a block of `declaration` has: its own, or those of `variant`.
std::vector<FieldSpec> FieldsOf(const FieldSpec& declaration, std::string_view variant) {
  if (declaration.variants.empty()) return declaration.fields;
  for (const VariantSpec& candidate : declaration.variants) {
    if (candidate.tag == variant) return candidate.fields;
  }
  return {};
}

}  // namespace

OptionReader::OptionReader(const FieldSpec& declaration, Value block)
    : OptionReader(declaration, std::move(block), "", std::make_shared<Status>()) {}

OptionReader::OptionReader(const FieldSpec& declaration, Value block, std::string path,
                           std::shared_ptr<Status> status)
    : variant_(VariantOf(declaration, block)),
      fields_(FieldsOf(declaration, variant_)),
      block_(block.is_map() ? std::move(block) : Value::EmptyMap()),
      path_(std::move(path)),
      status_(std::move(status)) {}

void OptionReader::Misuse(std::string_view name, std::string_view problem) {
  if (!status_->ok()) return;  // The first one is reported.
  *status_ = InternalError(fmt::format("option {}{}: {}", path_, name, problem));
}

const FieldSpec* OptionReader::Declared(std::string_view name) {
  auto found = std::find_if(fields_.begin(), fields_.end(),
                            [&](const FieldSpec& field) { return field.name == name; });
  if (found != fields_.end()) return &*found;
  Misuse(name, "read but not declared");
  return nullptr;
}

const Value* OptionReader::Find(std::string_view name) {
  const FieldSpec* declared = Declared(name);
  if (declared == nullptr) return nullptr;
  const Value* held = block_.Find(name);
  if (held != nullptr && (!held->is_null() || declared->null_is_value)) return held;
  if (declared->default_value) return &*declared->default_value;
  return nullptr;
}

const Value* OptionReader::Read(std::string_view name, bool (Value::*has_type)() const) {
  const Value* value = Find(name);
  if (value == nullptr) {
    if (status_->ok() && Declared(name) != nullptr) Misuse(name, "has no value and no default");
    return nullptr;
  }
  if (!(value->*has_type)()) {
    Misuse(name, fmt::format("holds a value of type {}", ToString(value->kind())));
    return nullptr;
  }
  return value;
}

int64_t OptionReader::Integer(std::string_view name) {
  const Value* value = Read(name, &Value::is_integer);
  return value != nullptr ? value->AsInteger() : 0;
}

double OptionReader::Number(std::string_view name) {
  const Value* value = Read(name, &Value::is_number);
  return value != nullptr ? value->AsDouble() : 0;
}

bool OptionReader::Boolean(std::string_view name) {
  const Value* value = Read(name, &Value::is_bool);
  return value != nullptr && value->AsBool();
}

std::string OptionReader::String(std::string_view name) {
  const Value* value = Read(name, &Value::is_string);
  return value != nullptr ? value->AsString() : std::string();
}

OptionReader OptionReader::Object(std::string_view name) {
  const FieldSpec* declared = Declared(name);
  const Value* value = Find(name);
  return OptionReader(declared != nullptr ? *declared : FieldSpec{},
                      value != nullptr ? *value : Value(), path_ + std::string(name) + ".",
                      status_);
}

// --- The authentication block of sources -----------------------------------------------------

namespace {

std::vector<FieldSpec> TokenParams() {
  return {
      Option::String("token", "API token sent on every request.").Required().Secret(),
      Option::String("auth_method", "Scheme placed before the token; empty sends the bare token.")
          .Default("Bearer"),
      Option::String("auth_header", "Header carrying the token.").Default("Authorization"),
  };
}

std::vector<FieldSpec> BasicParams() {
  return {
      Option::String("username", "User name.").Required(),
      Option::String("password", "Password.").Default("").Secret(),
      Option::String("auth_method", "Scheme name.").Default("Basic"),
      Option::String("auth_header", "Header carrying the credentials.").Default("Authorization"),
  };
}

std::vector<FieldSpec> OauthParams() {
  return {
      Option::String("token_refresh_endpoint", "URL of the token endpoint.").Required(),
      Option::String("client_id", "OAuth client id.").Required(),
      Option::String("client_secret", "OAuth client secret.").Required().Secret(),
      Option::String("refresh_token", "Refresh token, for the refresh_token grant.").Secret(),
      Option::List("scopes", Option::String(""), "Scopes requested, sent comma-separated."),
      Option::String("token_expiry_date", "Expiry of an access token supplied up front."),
      Option::String("token_expiry_date_format",
                     "strftime format of expires_in when it is a date."),
      Option::String("access_token_name", "Response field holding the access token.")
          .Default("access_token"),
      Option::String("expires_in_name", "Response field holding the lifetime in seconds.")
          .Default("expires_in"),
      Option::Map("refresh_request_body", "Extra form fields sent with the refresh request."),
      Option::String("grant_type", "OAuth grant type.").Default("refresh_token"),
      Option::String("response_field_path",
                     "Path of the object holding the token in the response."),
      Option::Integer("expiry_skew_seconds",
                      "Refresh this many seconds before expiry (default: 10% of the lifetime, "
                      "at most 60).")
          .Minimum(0),
  };
}

std::vector<FieldSpec> CookieParams() {
  return {
      Option::Map("cookies", "Cookies sent on each request.")
          .Required()
          .Secret()
          .Items(Option::String("").Secret()),
      Option::Map("headers", "Extra headers.").Default(Value::EmptyMap()).Items(Option::String("")),
  };
}

VariantSpec AuthVariant(const std::string& type) {
  std::vector<FieldSpec> params;
  std::string description;
  if (type == "api_key" || type == "bearer") {
    params = TokenParams();
    description = "A token in a header.";
  } else if (type == "basic") {
    params = BasicParams();
    description = "HTTP basic authentication.";
  } else if (type == "oauth") {
    params = OauthParams();
    description = "OAuth 2 with token refresh.";
  } else {
    params = CookieParams();
    description = "Session cookies.";
  }
  VariantSpec variant{
      .tag = type,
      .description = description,
      .fields = {Option::String("type").Required(),
                 // The original ignores keys it does not know in params: warned, not refused.
                 Option::Object("params", std::move(params),
                                "Credentials for this authentication type.")
                     .OnUnknownKeys(UnknownKeys::kWarn)},
      // Connectors read extra keys beside params (kafka's schema registry settings).
      .unknown_keys = UnknownKeys::kWarn};
  if (type == "api_key" || type == "bearer") {
    // The seed README's shorthand: `api_key: ...` beside `type`, instead of params.token.
    variant.fields.push_back(Option::String("api_key", "Shorthand for params.token.").Secret());
  }
  return variant;
}

}  // namespace

FieldSpec AuthenticationField(const std::vector<std::string>& types, bool required) {
  std::vector<VariantSpec> variants;
  variants.reserve(types.size());
  for (const std::string& type : types) variants.push_back(AuthVariant(type));
  Option field = Option::Variants("authentication", "type", std::move(variants),
                                  "How the source authenticates: type and params.");
  if (required) field.Required();
  return field;
}

}  // namespace bizon
