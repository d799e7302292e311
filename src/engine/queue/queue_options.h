// The `engine.queue` block: its declaration, and its readers into the typed configs of the
// in-process queue (QueueLimits) and the network queues (BrokerQueueConfig). Each default is the
// declaration's; the structs start at "no limit" or empty.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bizon/config_spec.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "engine/queue/kafka_queue.h"
#include "engine/queue/memory_queue.h"
#include "engine/queue/rabbitmq_queue.h"

namespace bizon {

/// `engine.queue`: python_queue (in-process, the default), kafka or rabbitmq.
FieldSpec QueueField();

/// The in-process queue's limits from the normalized `engine.queue` block (absent or null: the
/// defaults). A network queue has none: its own back-pressure is `max_bytes` of its config.
Result<QueueLimits> ReadQueueLimits(const Value& queue);

struct BrokerQueueConfig {
  enum class Kind { kKafka, kRabbitmq };
  Kind kind = Kind::kKafka;
  KafkaQueueConfig kafka;
  RabbitmqQueueConfig rabbitmq;
  /// Back-pressure: the producer pauses while the iterations it published but the destination
  /// has not recorded yet take more than this many bytes (queue `max_bytes`).
  int64_t max_unconsumed_bytes = 0;

  /// "kafka topic bizon at 127.0.0.1:9092", for logs (no credentials).
  std::string Describe() const;
};

/// nullopt for the in-process queue (`python_queue`); the config of a kafka or rabbitmq queue.
/// `queue` is the validated `engine.queue` block; a key it lacks takes the declared default.
std::optional<BrokerQueueConfig> ReadBrokerQueueConfig(const Value& queue);

}  // namespace bizon
