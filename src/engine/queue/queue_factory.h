// Reads `engine.queue` for the network queues and opens their two ends.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "bizon/value.h"
#include "engine/queue/broker_queue.h"
#include "engine/queue/kafka_queue.h"
#include "engine/queue/rabbitmq_queue.h"

namespace bizon {

struct BrokerQueueConfig {
  enum class Kind { kKafka, kRabbitmq };
  Kind kind = Kind::kKafka;
  KafkaQueueConfig kafka;
  RabbitmqQueueConfig rabbitmq;
  /// Back-pressure: the producer pauses while the iterations it published but the destination
  /// has not recorded yet take more than this many bytes (queue `max_bytes`).
  int64_t max_unconsumed_bytes = 256LL * 1024 * 1024;

  /// "kafka topic bizon at 127.0.0.1:9092", for logs (no credentials).
  std::string Describe() const;
};

/// nullopt for the in-process queue (`python_queue`); the config of a kafka or rabbitmq queue.
/// `queue` is the validated `engine.queue` block.
std::optional<BrokerQueueConfig> ReadBrokerQueueConfig(const Value& queue);

Result<std::unique_ptr<BrokerSink>> OpenBrokerSink(const BrokerQueueConfig& config,
                                                   std::string job_id);
/// `next_iteration`: the first iteration the consumer needs.
Result<std::unique_ptr<BrokerSource>> OpenBrokerSource(const BrokerQueueConfig& config,
                                                       std::string job_id, int64_t next_iteration);

}  // namespace bizon
