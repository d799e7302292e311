// The producer role of a pipeline split across processes through a network queue
// (`bizon run --role producer`); the consumer side is the broker runner (MakeBrokerRunner).
#pragma once

#include <cstdint>
#include <string>

#include "bizon/backend.h"
#include "bizon/source.h"
#include "engine/queue/queue_factory.h"
#include "engine/runner/runner.h"

namespace bizon {

struct ProducerRoleResult {
  ProducerResult producer;
  std::string job_id;
  int64_t records_published = 0;
};

/// Waits up to `job_wait_s` for the consumer's running job, then produces into the broker.
ProducerRoleResult RunProducerRole(Source& source, Backend& backend,
                                   const PipelineSettings& settings, const BrokerQueueConfig& queue,
                                   double job_wait_s);

}  // namespace bizon
