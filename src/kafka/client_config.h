// ClientConfig: the settings of one librdkafka client, each checked as it is set.
#pragma once

#include <string>
#include <string_view>

#include "bizon/status.h"

struct rd_kafka_conf_s;

namespace bizon::kafka {

/// Whether a setting's value is a credential (sasl.username, sasl.password, ssl.key.password,
/// sasl.oauthbearer.client.secret...): never shown in logs or errors.
bool IsSecretSetting(std::string_view name);

/// Owns a librdkafka configuration until a client takes it (Client::Open).
///
/// Every Set() is checked: an unknown property or a value librdkafka refuses is an
/// invalid-argument (config) error naming the property, and the YAML path it came from when
/// there is one; the value of a secret setting never appears in it.
class ClientConfig {
 public:
  ClientConfig();
  ~ClientConfig();
  ClientConfig(ClientConfig&& other) noexcept;
  ClientConfig& operator=(ClientConfig&& other) noexcept;
  ClientConfig(const ClientConfig&) = delete;
  ClientConfig& operator=(const ClientConfig&) = delete;

  /// Sets `name` to `value`. `path` is where the user wrote it ("source.consumer_config.acks"),
  /// empty for a setting bizon derives itself.
  Status Set(std::string_view name, std::string_view value, std::string_view path = {});

  /// Hands the configuration over (to rd_kafka_new); the ClientConfig is empty afterwards.
  rd_kafka_conf_s* Release();

 private:
  rd_kafka_conf_s* conf_;
};

}  // namespace bizon::kafka
