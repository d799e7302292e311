#include "kafka/client_config.h"

#include <fmt/format.h>
#include <librdkafka/rdkafka.h>

#include <utility>

#include "bizon/secret_mask.h"

namespace bizon::kafka {
namespace {

/// `text` with every occurrence of `value` replaced by "****".
std::string WithoutValue(std::string text, std::string_view value) {
  if (value.empty()) return text;
  for (size_t at = text.find(value); at != std::string::npos; at = text.find(value, at + 4)) {
    text.replace(at, value.size(), "****");
  }
  return text;
}

}  // namespace

bool IsSecretSetting(std::string_view name) {
  return name == "sasl.username" || LooksLikeCredentialName(name);
}

ClientConfig::ClientConfig() : conf_(rd_kafka_conf_new()) {}

ClientConfig::~ClientConfig() {
  if (conf_ != nullptr) rd_kafka_conf_destroy(conf_);
}

ClientConfig::ClientConfig(ClientConfig&& other) noexcept
    : conf_(std::exchange(other.conf_, nullptr)) {}

ClientConfig& ClientConfig::operator=(ClientConfig&& other) noexcept {
  if (this != &other) {
    if (conf_ != nullptr) rd_kafka_conf_destroy(conf_);
    conf_ = std::exchange(other.conf_, nullptr);
  }
  return *this;
}

Status ClientConfig::Set(std::string_view name, std::string_view value, std::string_view path) {
  if (conf_ == nullptr) {
    return InternalError(fmt::format("Kafka setting {} set on a configuration already used", name));
  }
  char error[512] = {};
  std::string key(name);
  std::string text(value);
  if (rd_kafka_conf_set(conf_, key.c_str(), text.c_str(), error, sizeof(error)) ==
      RD_KAFKA_CONF_OK) {
    return Status::Ok();
  }
  // librdkafka quotes the value it refuses ("Invalid value \"x\" for configuration property").
  std::string reason = SecretMask::Global().Redact(error);
  if (IsSecretSetting(name)) reason = WithoutValue(std::move(reason), value);
  std::string where = path.empty() ? std::string() : fmt::format("{}: ", path);
  return InvalidArgumentError(fmt::format("{}librdkafka rejects {}: {}", where, name, reason));
}

rd_kafka_conf_s* ClientConfig::Release() { return std::exchange(conf_, nullptr); }

}  // namespace bizon::kafka
