#include "engine/queue/queue_factory.h"

#include "bizon/build_features.h"
#include "common/connector_families.h"

namespace bizon {
namespace {

// The two ends of the broker the config names, or the refusal of a queue left out of the build.
Result<std::unique_ptr<BrokerSender>> OpenSender(const BrokerQueueConfig& config) {
  if (config.kind == BrokerQueueConfig::Kind::kKafka) {
#if BIZON_WITH_KAFKA
    return OpenKafkaSender(config.kafka);
#else
    return Fail(NotBuiltError("the 'kafka' queue", "kafka"));
#endif
  }
#if BIZON_WITH_RABBITMQ
  return OpenRabbitmqSender(config.rabbitmq);
#else
  return Fail(NotBuiltError("the 'rabbitmq' queue", "rabbitmq"));
#endif
}

Result<std::unique_ptr<BrokerReceiver>> OpenReceiver(const BrokerQueueConfig& config) {
  if (config.kind == BrokerQueueConfig::Kind::kKafka) {
#if BIZON_WITH_KAFKA
    return OpenKafkaReceiver(config.kafka);
#else
    return Fail(NotBuiltError("the 'kafka' queue", "kafka"));
#endif
  }
#if BIZON_WITH_RABBITMQ
  return OpenRabbitmqReceiver(config.rabbitmq);
#else
  return Fail(NotBuiltError("the 'rabbitmq' queue", "rabbitmq"));
#endif
}

}  // namespace

Result<std::unique_ptr<BrokerSink>> OpenBrokerSink(const BrokerQueueConfig& config,
                                                   std::string job_id) {
  auto sender = OpenSender(config);
  if (!sender) return Fail(sender.error().WithFailureClass(FailureClass::kQueue));
  return std::make_unique<BrokerSink>(std::move(*sender), std::move(job_id));
}

Result<std::unique_ptr<BrokerSource>> OpenBrokerSource(const BrokerQueueConfig& config,
                                                       std::string job_id, int64_t next_iteration) {
  auto receiver = OpenReceiver(config);
  if (!receiver) return Fail(receiver.error().WithFailureClass(FailureClass::kQueue));
  return std::make_unique<BrokerSource>(std::move(*receiver), std::move(job_id), next_iteration);
}

}  // namespace bizon
