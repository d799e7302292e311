// Opens the two ends of a network queue read from `engine.queue` (queue_options.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/queue/broker_queue.h"
#include "engine/queue/kafka_queue.h"
#include "engine/queue/queue_options.h"
#include "engine/queue/rabbitmq_queue.h"

namespace bizon {

Result<std::unique_ptr<BrokerSink>> OpenBrokerSink(const BrokerQueueConfig& config,
                                                   std::string job_id);
/// `next_iteration`: the first iteration the consumer needs.
Result<std::unique_ptr<BrokerSource>> OpenBrokerSource(const BrokerQueueConfig& config,
                                                       std::string job_id, int64_t next_iteration);

}  // namespace bizon
