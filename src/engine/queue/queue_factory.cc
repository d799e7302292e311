#include "engine/queue/queue_factory.h"

namespace bizon {

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
