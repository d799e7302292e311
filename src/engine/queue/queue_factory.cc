#include "engine/queue/queue_factory.h"

#include <fmt/format.h>

#include "bizon/secret_mask.h"

namespace bizon {
namespace {

const Value& Section(const Value& config, std::string_view name) {
  static const Value kEmpty = Value::EmptyMap();
  const Value* section = config.Find(name);
  return section != nullptr && section->is_map() ? *section : kEmpty;
}

std::string SettingText(const Value& value) {
  if (value.is_bool()) return value.AsBool() ? "true" : "false";
  return value.ToDisplayString();
}

/// queue.client_config, then the basic credentials of queue.authentication (as the kafka
/// source's: SASL PLAIN unless client_config names another mechanism). Passwords join the
/// SecretMask.
std::vector<std::pair<std::string, std::string>> KafkaClientSettings(const Value& server) {
  std::vector<std::pair<std::string, std::string>> settings;
  auto set = [&](std::string key, std::string value) {
    for (auto& setting : settings) {
      if (setting.first == key) {
        setting.second = std::move(value);
        return;
      }
    }
    settings.emplace_back(std::move(key), std::move(value));
  };
  bool mechanism = false;
  for (const auto& [key, value] : Section(server, "client_config").AsMap()) {
    std::string text = SettingText(value);
    if (key.find("password") != std::string::npos || key.find("secret") != std::string::npos) {
      SecretMask::Global().Add(text);
    }
    mechanism = mechanism || key == "sasl.mechanisms" || key == "sasl.mechanism";
    set(key, std::move(text));
  }
  const Value& params = Section(Section(server, "authentication"), "params");
  if (params.Find("username") != nullptr) {
    std::string password = params.GetString("password");
    SecretMask::Global().Add(password);
    if (!mechanism) set("sasl.mechanisms", "PLAIN");
    set("sasl.username", params.GetString("username"));
    set("sasl.password", std::move(password));
  }
  return settings;
}

}  // namespace

std::string BrokerQueueConfig::Describe() const {
  if (kind == Kind::kKafka) {
    return fmt::format("kafka topic {} at {}", kafka.topic, kafka.bootstrap_servers);
  }
  return fmt::format("rabbitmq queue {} at {}:{}", rabbitmq.queue_name, rabbitmq.host,
                     rabbitmq.port);
}

std::optional<BrokerQueueConfig> ReadBrokerQueueConfig(const Value& queue) {
  std::string type = queue.GetString("type", "python_queue");
  if (type != "kafka" && type != "rabbitmq") return std::nullopt;
  const Value& config = Section(queue, "config");
  const Value& server = Section(config, "queue");
  const Value& consumer = Section(config, "consumer");
  BrokerQueueConfig broker;
  broker.max_unconsumed_bytes = config.GetInteger("max_bytes", broker.max_unconsumed_bytes);
  if (type == "kafka") {
    broker.kind = BrokerQueueConfig::Kind::kKafka;
    KafkaQueueConfig& kafka = broker.kafka;
    kafka.bootstrap_servers = server.GetString("bootstrap_server");
    kafka.topic = server.GetString("topic", kafka.topic);
    kafka.max_message_bytes = server.GetInteger("max_message_bytes", kafka.max_message_bytes);
    kafka.group_id = consumer.GetString("group_id", kafka.group_id);
    kafka.auto_offset_reset = consumer.GetString("auto_offset_reset", kafka.auto_offset_reset);
    kafka.consumer_prefetch_bytes =
        consumer.GetInteger("prefetch_bytes", kafka.consumer_prefetch_bytes);
    kafka.client_settings = KafkaClientSettings(server);
  } else {
    broker.kind = BrokerQueueConfig::Kind::kRabbitmq;
    RabbitmqQueueConfig& rabbitmq = broker.rabbitmq;
    rabbitmq.host = server.GetString("host");
    rabbitmq.port = static_cast<int>(server.GetInteger("port", rabbitmq.port));
    rabbitmq.queue_name = server.GetString("queue_name");
    rabbitmq.exchange = server.GetString("exchange");
    rabbitmq.username = server.GetString("username", rabbitmq.username);
    rabbitmq.password = server.GetString("password", rabbitmq.password);
    rabbitmq.vhost = server.GetString("vhost", rabbitmq.vhost);
    rabbitmq.max_message_bytes = server.GetInteger("max_message_bytes", rabbitmq.max_message_bytes);
    if (const Value* tls = server.Find("tls"); tls != nullptr && tls->is_map()) {
      RabbitmqTlsConfig& settings = rabbitmq.tls;
      settings.enabled = true;
      settings.ca_certificate = tls->GetString("ca_certificate");
      settings.client_certificate = tls->GetString("client_certificate");
      settings.client_key = tls->GetString("client_key");
      settings.verify_peer = tls->GetBool("verify_peer", true);
      settings.verify_hostname = tls->GetBool("verify_hostname", true);
    }
    rabbitmq.prefetch_count =
        static_cast<int>(consumer.GetInteger("prefetch_count", rabbitmq.prefetch_count));
    rabbitmq.consumer_prefetch_bytes =
        consumer.GetInteger("prefetch_bytes", rabbitmq.consumer_prefetch_bytes);
  }
  return broker;
}

Result<std::unique_ptr<BrokerSink>> OpenBrokerSink(const BrokerQueueConfig& config,
                                                   std::string job_id) {
  auto sender = config.kind == BrokerQueueConfig::Kind::kKafka
                    ? OpenKafkaSender(config.kafka)
                    : OpenRabbitmqSender(config.rabbitmq);
  if (!sender) return Fail(sender.error().WithFailureClass(FailureClass::kQueue));
  return std::make_unique<BrokerSink>(std::move(*sender), std::move(job_id));
}

Result<std::unique_ptr<BrokerSource>> OpenBrokerSource(const BrokerQueueConfig& config,
                                                       std::string job_id, int64_t next_iteration) {
  auto receiver = config.kind == BrokerQueueConfig::Kind::kKafka
                      ? OpenKafkaReceiver(config.kafka)
                      : OpenRabbitmqReceiver(config.rabbitmq);
  if (!receiver) return Fail(receiver.error().WithFailureClass(FailureClass::kQueue));
  return std::make_unique<BrokerSource>(std::move(*receiver), std::move(job_id), next_iteration);
}

}  // namespace bizon
