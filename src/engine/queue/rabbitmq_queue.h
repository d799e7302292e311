// The `rabbitmq` queue: frames travel through one durable queue as persistent messages
// (rabbitmq-c stays in this file's .cc). The publisher waits for the broker's confirm of every
// frame; the consumer acknowledges manually, once told the frames are durably written, under a
// basic.qos prefetch. Both sides reconnect after a lost connection (a broker restart).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/queue/broker_queue.h"

namespace bizon {

/// TLS to the broker (queue.tls): on when the block is given.
struct RabbitmqTlsConfig {
  bool enabled = false;
  std::string ca_certificate;      // PEM file of the CA(s) to trust; "": the system's.
  std::string client_certificate;  // PEM file, for a broker that asks for one.
  std::string client_key;          // Its private key (PEM).
  bool verify_peer = true;         // Check the broker's certificate chain.
  bool verify_hostname = true;     // Check that it names `host`.
};

/// Read from `engine.queue` by ReadBrokerQueueConfig (queue_options.h), which holds the defaults.
struct RabbitmqQueueConfig {
  std::string host;
  int port = 0;
  std::string queue_name;
  std::string exchange;  // "": the default exchange, routing by queue name.
  std::string username;
  std::string password;
  std::string vhost;
  /// The largest message bizon publishes; bigger iterations are cut into frames this size.
  int64_t max_message_bytes = 0;
  /// basic.qos prefetch (messages) the consumer starts with. It grows while the unacknowledged
  /// frames hold less than `consumer_prefetch_bytes`, so a destination buffer bigger than the
  /// prefetch still fills instead of waiting for its flush timeout.
  int prefetch_count = 0;
  int64_t consumer_prefetch_bytes = 0;
  /// How long the publisher keeps retrying one message while the broker is unreachable.
  int64_t publish_timeout_ms = 300'000;
  RabbitmqTlsConfig tls;
};

Result<std::unique_ptr<BrokerSender>> OpenRabbitmqSender(const RabbitmqQueueConfig& config);
Result<std::unique_ptr<BrokerReceiver>> OpenRabbitmqReceiver(const RabbitmqQueueConfig& config);

}  // namespace bizon
