#include "connectors/sources/kafka/kafka_options.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>

#include "bizon/secret_mask.h"
#include "kafka/client_config.h"

namespace bizon::kafka {
namespace {

/// Kafka's limit on a group.instance.id (as on a topic name).
constexpr size_t kMaxInstanceIdSize = 249;

bool IsInstanceIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

std::string SettingText(const Value& value) {
  if (value.is_bool()) return value.AsBool() ? "true" : "false";
  return value.ToDisplayString();
}

/// Sets `key` (replacing an earlier value) and records where the user wrote it (`path`, empty
/// for a derived setting).
void SetSetting(KafkaSourceOptions& options, const std::string& key, std::string value,
                std::string_view path) {
  if (path.empty()) {
    options.setting_paths.erase(key);
  } else {
    options.setting_paths[key] = std::string(path);
  }
  for (auto& setting : options.client_settings) {
    if (setting.first == key) {
      setting.second = std::move(value);
      return;
    }
  }
  options.client_settings.emplace_back(key, std::move(value));
}

/// commit_offsets: production commits the group's offsets only under ENVIRONMENT=production, as
/// the original did.
bool CommitsOffsets(std::string_view commit_offsets) {
  if (commit_offsets != "production") return true;
  const char* environment = std::getenv("ENVIRONMENT");
  if (environment != nullptr && std::string_view(environment) == "production") return true;
  spdlog::info(
      "kafka source: commit_offsets is 'production' and ENVIRONMENT is not: the group's offsets "
      "are not committed (the backend's cursor still records progress)");
  return false;
}

std::vector<TopicRoute> TopicsOf(const Value& config) {
  std::vector<TopicRoute> routes;
  if (const Value* topics = config.Find("topics"); topics != nullptr && topics->is_list()) {
    for (const Value& topic : topics->AsList()) {
      routes.push_back(
          {.name = topic.GetString("name"), .destination_id = topic.GetString("destination_id")});
    }
  }
  return routes;
}

/// consumer_config, as the user wrote it: it replaces the defaults as a whole (the spec filled
/// them in when absent).
Status ReadConsumerConfig(const Value& config, KafkaSourceOptions& options) {
  const Value* client = config.Find("consumer_config");
  if (client == nullptr || !client->is_map()) return Status::Ok();
  for (const auto& [key, value] : client->AsMap()) {
    std::string path = fmt::format("source.consumer_config.{}", key);
    if (!value.is_string() && !value.is_number() && !value.is_bool()) {
      return InvalidArgumentError(fmt::format("{}: expected a string, number or boolean", path));
    }
    std::string text = SettingText(value);
    if (IsSecretSetting(key)) SecretMask::Global().Add(text);
    SetSetting(options, key, std::move(text), path);
  }
  return Status::Ok();
}

/// The SASL credentials of `authentication.params` and the schema registry's access.
Status ReadAuthentication(const Value& config, KafkaSourceOptions& options) {
  const Value* authentication = config.Find("authentication");
  if (authentication == nullptr || !authentication->is_map()) return Status::Ok();
  const Value* params = authentication->Find("params");
  if (params != nullptr && params->is_map()) {
    std::string password = params->GetString("password");
    SecretMask::Global().Add(password);
    // PLAIN as the original, unless consumer_config names another mechanism (SCRAM-SHA-256,
    // SCRAM-SHA-512): the credentials are the same pair.
    if (FindSetting(options, "sasl.mechanisms") == nullptr &&
        FindSetting(options, "sasl.mechanism") == nullptr) {
      SetSetting(options, "sasl.mechanisms", "PLAIN", "");
    }
    SetSetting(options, "sasl.username", params->GetString("username"),
               "source.authentication.params.username");
    SetSetting(options, "sasl.password", std::move(password),
               "source.authentication.params.password");
  }
  BIZON_ASSIGN_OR_RETURN(options.registry.type, ParseRegistryType(authentication->GetString(
                                                    "schema_registry_type", "apicurio")));
  options.registry.url = authentication->GetString("schema_registry_url");
  options.registry.username = authentication->GetString("schema_registry_username");
  options.registry.password = authentication->GetString("schema_registry_password");
  SecretMask::Global().Add(options.registry.password);
  return Status::Ok();
}

/// Static membership (KIP-345) in stream mode: a restarted process takes its predecessor's
/// place in the group at once, instead of waiting for the dead member's session to expire.
void DeriveStaticMember(const SourceContext& context, KafkaSourceOptions& options) {
  if (FindSetting(options, "group.instance.id") != nullptr ||
      options.sync_mode != SyncMode::kStream)
    return;
  std::string host = HostName();
  if (host.empty()) {
    spdlog::warn("Kafka static membership is off: the host name is unknown (set HOSTNAME)");
    return;
  }
  SetSetting(options, "group.instance.id",
             StaticMemberId(context.pipeline_name, host, options.member), "");
}

}  // namespace

const std::string* FindSetting(const KafkaSourceOptions& options, std::string_view name) {
  for (const auto& [key, value] : options.client_settings) {
    if (key == name) return &value;
  }
  return nullptr;
}

std::string HostName() {
  if (const char* exported = std::getenv("HOSTNAME"); exported != nullptr && *exported != '\0') {
    return exported;
  }
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

std::string StaticMemberId(std::string_view pipeline, std::string_view host,
                           std::string_view member) {
  std::string id;
  bool exact = true;
  auto append = [&](std::string_view part) {
    if (!id.empty()) id += '.';
    for (char c : part) {
      exact = exact && IsInstanceIdChar(c);
      id += IsInstanceIdChar(c) ? c : '_';
    }
  };
  append(pipeline.empty() ? std::string_view("bizon") : pipeline);
  append(host);
  if (!member.empty()) append(member);
  if (exact && id.size() <= kMaxInstanceIdSize) return id;
  // Replaced characters or a cut could make two ids equal: a hash of the exact parts keeps
  // them apart (FNV-1a, stable across builds and hosts, unlike std::hash).
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (std::string_view part :
       {pipeline, std::string_view("\0", 1), host, std::string_view("\0", 1), member}) {
    for (char c : part) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 0x100000001b3ULL;
    }
  }
  std::string suffix = fmt::format(".{:016x}", hash);
  if (id.size() > kMaxInstanceIdSize - suffix.size()) id.resize(kMaxInstanceIdSize - suffix.size());
  return id + suffix;
}

Result<KafkaSourceOptions> ReadKafkaOptions(const SourceContext& context) {
  const Value& config = context.config;
  KafkaSourceOptions options;
  options.sync_mode = context.sync_mode;
  options.topics = TopicsOf(config);
  // Read against the declaration (kafka_spec.cc), which holds every default once.
  OptionReader declared(Option::Object("source", KafkaSourceFields()), config);
  options.group_id = declared.String("group_id");
  options.skip_message_empty_value = declared.Boolean("skip_message_empty_value");
  options.skip_message_invalid_keys = declared.Boolean("skip_message_invalid_keys");
  options.skip_message_on_decode_error = declared.Boolean("skip_message_on_decode_error");
  options.batch_size = declared.Integer("batch_size");
  options.consumer_timeout_s = declared.Integer("consumer_timeout");
  options.avro = declared.String("message_encoding") == "avro";
  options.commit_offsets = CommitsOffsets(declared.String("commit_offsets"));
  BIZON_RETURN_IF_ERROR(declared.status());

  BIZON_RETURN_IF_ERROR(ReadConsumerConfig(config, options));
  BIZON_RETURN_IF_ERROR(ReadAuthentication(config, options));
  SetSetting(options, "group.id", options.group_id, "source.group_id");
  options.bootstrap_servers = config.GetString("bootstrap_servers");
  SetSetting(options, "bootstrap.servers", options.bootstrap_servers, "source.bootstrap_servers");
  options.member = config.GetString("member");
  DeriveStaticMember(context, options);
  return options;
}

}  // namespace bizon::kafka
