#include "engine/queue/queue_factory.h"

#include <fmt/format.h>

namespace bizon {
namespace {

const Value& Section(const Value& config, std::string_view name) {
  static const Value kEmpty = Value::EmptyMap();
  const Value* section = config.Find(name);
  return section != nullptr && section->is_map() ? *section : kEmpty;
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
