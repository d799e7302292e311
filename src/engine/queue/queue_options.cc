#include "engine/queue/queue_options.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "bizon/secret_mask.h"

namespace bizon {
namespace {

Option ByteLimit(std::string name, std::string description, int64_t default_bytes,
                 int64_t minimum) {
  Option limit = Option::Integer(std::move(name), std::move(description));
  limit.Default(default_bytes).Minimum(static_cast<double>(minimum));
  return limit;
}

/// max_nb_messages, the original's record bound, declared by every queue with its own meaning.
Option MaxNbMessages(std::string description) {
  Option bound = Option::Integer("max_nb_messages", std::move(description));
  bound.Default(1000000);
  return bound;
}

FieldSpec PythonQueueConfig() {
  return Option::Object(
             "config",
             {MaxNbMessages("The producer pauses once about this many records are queued.")
                  .Minimum(1),
              ByteLimit("max_bytes",
                        "The producer also pauses once queued records take this "
                        "many bytes.",
                        int64_t{16} * 1024 * 1024, 1),
              Option::Object(
                  "queue",
                  {Option::Integer("max_size", "Maximum queued iterations; 0 means unbounded.")
                       .Default(0)
                       .Minimum(0)},
                  "Queue sizing.")
                  .Default(Value::EmptyMap())
                  .OnUnknownKeys(UnknownKeys::kWarn),
              Option::Object("consumer",
                             {Option::Number("poll_interval", "Kept for compatibility.")
                                  .Default(1)
                                  .NoEffect("the consumer wakes as soon as a message arrives")},
                             "Consumer settings.")
                  .Default(Value::EmptyMap())},
             "In-process queue settings.")
      .Default(Value::EmptyMap());
}

/// Shared by the network queues.
std::vector<FieldSpec> NetworkQueueLimits() {
  return {
      MaxNbMessages("Kept for compatibility.").NoEffect("max_bytes bounds the queue of a broker"),
      ByteLimit("max_bytes",
                "The producer pauses while this many bytes are published but not yet "
                "written by the consumer (at least twice the destination buffer).",
                268435456, 1)};
}

/// queue.authentication of the kafka queue: the kafka source's basic credentials (SASL, PLAIN
/// unless client_config names another mechanism).
FieldSpec KafkaQueueAuthentication() {
  return Option::Object(
      "authentication",
      {Option::Enum("type", {"basic"}, "basic (the only kind).").Default("basic"),
       Option::Object("params", {Option::String("username", "SASL user name.").Required(),
                                 Option::String("password", "SASL password.").Default("").Secret()})
           .Required()},
      "SASL credentials of the brokers, as the kafka source's authentication: PLAIN unless "
      "client_config sets sasl.mechanisms.");
}

FieldSpec KafkaQueueConfigField() {
  std::vector<FieldSpec> fields = {
      Option::Object(
          "queue",
          {Option::String("bootstrap_server", "Broker address, host:port.").Required(),
           Option::String("topic", "Topic carrying the batches; one topic per pipeline stream.")
               .Default("bizon"),
           ByteLimit("max_message_bytes",
                     "Largest Kafka message bizon sends; bigger iterations are cut into "
                     "several. A topic bizon creates allows this size.",
                     1000000, 1024),
           Option::Map("client_config",
                       "librdkafka settings for the producer and the consumer, as the kafka "
                       "source's consumer_config: security.protocol (SSL, SASL_SSL, "
                       "SASL_PLAINTEXT), sasl.mechanisms (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), "
                       "ssl.ca.location, ssl.certificate.location, ssl.key.location, "
                       "ssl.key.password, ssl.endpoint.identification.algorithm... Settings "
                       "bizon makes for its guarantees (acks, enable.idempotence, group.id, "
                       "offsets) are refused.")
               .Default(Value::EmptyMap()),
           KafkaQueueAuthentication()})
          .Required(),
      Option::Object(
          "consumer",
          {Option::String("group_id", "Consumer group whose offsets record what was written.")
               .Default("bizon"),
           Option::String("auto_offset_reset", "Where a group without committed offsets starts.")
               .Default("earliest"),
           Option::Boolean("enable_auto_commit", "Kept for compatibility.")
               .Default(true)
               .NoEffect("offsets are committed once the destination wrote the records"),
           Option::Integer("consumer_timeout_ms", "Kept for compatibility.")
               .Default(1000)
               .NoEffect("the consumer waits for messages as long as the run lasts"),
           ByteLimit("prefetch_bytes", "Bytes the consumer may fetch ahead of the destination.",
                     67108864, 1048576)})
          .Default(Value::EmptyMap()),
  };
  for (FieldSpec& limit : NetworkQueueLimits()) fields.push_back(std::move(limit));
  return Option::Object("config", std::move(fields), "Kafka queue settings.").Required();
}

/// queue.tls of the rabbitmq queue (AMQPS; the broker's TLS port is usually 5671).
FieldSpec RabbitmqTls() {
  return Option::Object(
      "tls",
      {Option::String("ca_certificate",
                      "PEM file of the CA certificate(s) the broker's certificate must chain to; "
                      "unset: the system's."),
       Option::String("client_certificate",
                      "PEM file of the client certificate, for a broker that asks for one "
                      "(ssl_options.fail_if_no_peer_cert); needs client_key."),
       Option::String("client_key", "PEM file of the client certificate's private key."),
       Option::Boolean("verify_peer", "Check the broker's certificate chain.").Default(true),
       Option::Boolean("verify_hostname", "Check that the broker's certificate names host.")
           .Default(true)},
      "Connect over TLS (AMQPS, usually port 5671) when given; {} trusts the system's CAs.");
}

FieldSpec RabbitmqQueueConfigField() {
  std::vector<FieldSpec> fields = {
      Option::Object(
          "queue",
          {Option::String("host", "Broker host.").Required(), Option::Integer("port").Default(5672),
           Option::String("queue_name",
                          "Durable queue carrying the batches; one per pipeline stream.")
               .Required(),
           Option::String("exchange",
                          "Exchange to publish to (bound to the queue by its name); empty: the "
                          "default exchange.")
               .Default(""),
           Option::String("username").Default("guest"),
           Option::String("password").Default("guest").Secret(),
           Option::String("vhost").Default("/"),
           ByteLimit("max_message_bytes",
                     "Largest message bizon publishes; bigger iterations are cut into several.",
                     8388608, 1024),
           RabbitmqTls()})
          .Required(),
      Option::Object(
          "consumer",
          {Option::Number("poll_interval", "Kept for compatibility.")
               .Default(1)
               .NoEffect("messages are pushed to the consumer as they arrive"),
           Option::Integer("prefetch_count",
                           "basic.qos prefetch the consumer starts with; it grows while the "
                           "unacknowledged messages hold less than prefetch_bytes.")
               .Default(64)
               .Minimum(1)
               .Maximum(65535),
           ByteLimit("prefetch_bytes", "Bytes of unacknowledged messages the consumer may hold.",
                     134217728, 1048576)})
          .Default(Value::EmptyMap()),
  };
  for (FieldSpec& limit : NetworkQueueLimits()) fields.push_back(std::move(limit));
  return Option::Object("config", std::move(fields), "RabbitMQ queue settings.").Required();
}

VariantSpec QueueVariant(std::string tag, std::string description, FieldSpec config) {
  return {.tag = std::move(tag),
          .description = std::move(description),
          .fields = {Option::String("type"), std::move(config)},
          .unknown_keys = UnknownKeys::kError};
}

std::string SettingText(const Value& value) {
  if (value.is_bool()) return value.AsBool() ? "true" : "false";
  return value.ToDisplayString();
}

/// queue.client_config, then the basic credentials of queue.authentication (as the kafka
/// source's: SASL PLAIN unless client_config names another mechanism). Passwords join the
/// SecretMask.
std::vector<std::pair<std::string, std::string>> KafkaClientSettings(OptionReader& server) {
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
  if (const Value* client_config = server.Find("client_config");
      client_config != nullptr && client_config->is_map()) {
    for (const auto& [key, value] : client_config->AsMap()) {
      std::string text = SettingText(value);
      if (key.find("password") != std::string::npos || key.find("secret") != std::string::npos) {
        SecretMask::Global().Add(text);
      }
      mechanism = mechanism || key == "sasl.mechanisms" || key == "sasl.mechanism";
      set(key, std::move(text));
    }
  }
  const Value* authentication = server.Find("authentication");
  const Value* params = authentication != nullptr ? authentication->Find("params") : nullptr;
  if (params != nullptr && params->Find("username") != nullptr) {
    std::string password = params->GetString("password");
    SecretMask::Global().Add(password);
    if (!mechanism) set("sasl.mechanisms", "PLAIN");
    set("sasl.username", params->GetString("username"));
    set("sasl.password", std::move(password));
  }
  return settings;
}

}  // namespace

FieldSpec QueueField() {
  return Option::Variants(
             "queue", "type",
             {QueueVariant("python_queue", "In-process bounded queue (the default).",
                           PythonQueueConfig()),
              QueueVariant("kafka", "A Kafka topic.", KafkaQueueConfigField()),
              QueueVariant("rabbitmq", "A RabbitMQ queue.", RabbitmqQueueConfigField())},
             "How records travel from producer to consumer.")
      .Default(Value(Value::Map{{"type", "python_queue"}}))
      .DefaultVariant("python_queue");
}

Result<QueueLimits> ReadQueueLimits(const Value& queue) {
  OptionReader queue_options(QueueField(), queue);
  if (queue_options.Variant() != "python_queue") return QueueLimits{};
  OptionReader config = queue_options.Object("config");
  QueueLimits limits;
  limits.max_records = config.Integer("max_nb_messages");
  limits.max_bytes = config.Integer("max_bytes");
  limits.max_iterations = config.Object("queue").Integer("max_size");
  BIZON_RETURN_IF_ERROR(config.status());
  return limits;
}

std::string BrokerQueueConfig::Describe() const {
  if (kind == Kind::kKafka) {
    return fmt::format("kafka topic {} at {}", kafka.topic, kafka.bootstrap_servers);
  }
  return fmt::format("rabbitmq queue {} at {}:{}", rabbitmq.queue_name, rabbitmq.host,
                     rabbitmq.port);
}

std::optional<BrokerQueueConfig> ReadBrokerQueueConfig(const Value& queue) {
  OptionReader queue_options(QueueField(), queue);
  const std::string& type = queue_options.Variant();
  if (type != "kafka" && type != "rabbitmq") return std::nullopt;
  OptionReader config = queue_options.Object("config");
  OptionReader server = config.Object("queue");
  OptionReader consumer = config.Object("consumer");
  BrokerQueueConfig broker;
  broker.max_unconsumed_bytes = config.Integer("max_bytes");
  if (type == "kafka") {
    broker.kind = BrokerQueueConfig::Kind::kKafka;
    KafkaQueueConfig& kafka = broker.kafka;
    kafka.bootstrap_servers = server.String("bootstrap_server");
    kafka.topic = server.String("topic");
    kafka.max_message_bytes = server.Integer("max_message_bytes");
    kafka.group_id = consumer.String("group_id");
    kafka.auto_offset_reset = consumer.String("auto_offset_reset");
    kafka.consumer_prefetch_bytes = consumer.Integer("prefetch_bytes");
    kafka.client_settings = KafkaClientSettings(server);
  } else {
    broker.kind = BrokerQueueConfig::Kind::kRabbitmq;
    RabbitmqQueueConfig& rabbitmq = broker.rabbitmq;
    rabbitmq.host = server.String("host");
    rabbitmq.port = static_cast<int>(server.Integer("port"));
    rabbitmq.queue_name = server.String("queue_name");
    rabbitmq.exchange = server.String("exchange");
    rabbitmq.username = server.String("username");
    rabbitmq.password = server.String("password");
    rabbitmq.vhost = server.String("vhost");
    rabbitmq.max_message_bytes = server.Integer("max_message_bytes");
    if (const Value* tls = server.Find("tls"); tls != nullptr && tls->is_map()) {
      OptionReader tls_options = server.Object("tls");
      RabbitmqTlsConfig& settings = rabbitmq.tls;
      settings.enabled = true;
      settings.ca_certificate = tls->GetString("ca_certificate");
      settings.client_certificate = tls->GetString("client_certificate");
      settings.client_key = tls->GetString("client_key");
      settings.verify_peer = tls_options.Boolean("verify_peer");
      settings.verify_hostname = tls_options.Boolean("verify_hostname");
    }
    rabbitmq.prefetch_count = static_cast<int>(consumer.Integer("prefetch_count"));
    rabbitmq.consumer_prefetch_bytes = consumer.Integer("prefetch_bytes");
  }
  // Every name read above is declared in this file, for each variant: a misuse cannot come from
  // a config, and one in this code reads as 0 or empty, which queue_options_test.cc catches.
  config.status().IgnoreError();
  return broker;
}

}  // namespace bizon
