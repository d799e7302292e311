// The `kafka` queue: frames travel through one topic, with the clients of kafka/client.h. The
// producer is idempotent with acks=all and waits for the delivery report of every frame; the
// consumer reads the topic's partitions with manual assignment (no group rebalance to wait for
// after a restart) and commits the group's offsets only when told the frames are durably written.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/queue/broker_queue.h"

namespace bizon {

/// Read from `engine.queue` by ReadBrokerQueueConfig (queue_options.h), which holds the defaults.
struct KafkaQueueConfig {
  std::string bootstrap_servers;
  std::string topic;
  std::string group_id;
  std::string auto_offset_reset;
  /// The largest Kafka message bizon sends; bigger iterations are cut into frames this size. A
  /// topic bizon creates gets this as its max.message.bytes.
  int64_t max_message_bytes = 0;
  /// What the consumer may prefetch from the broker (librdkafka's queued.max.messages.kbytes).
  int64_t consumer_prefetch_bytes = 0;
  /// How long a frame may wait for the broker's acknowledgement (broker down, restarting).
  int64_t delivery_timeout_ms = 300'000;
  /// librdkafka settings for the producer and the consumer (queue.client_config, then the SASL
  /// credentials of queue.authentication): security.protocol, sasl.*, ssl.*. Keys bizon sets
  /// itself for its delivery guarantees are refused.
  std::vector<std::pair<std::string, std::string>> client_settings;
};

Result<std::unique_ptr<BrokerSender>> OpenKafkaSender(const KafkaQueueConfig& config);
Result<std::unique_ptr<BrokerReceiver>> OpenKafkaReceiver(const KafkaQueueConfig& config);

}  // namespace bizon
