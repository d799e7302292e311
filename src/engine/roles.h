// Runs through a network queue (kafka, rabbitmq), with the producer and the consumer in one
// process (`--role all`) or split across processes and hosts (`--role producer|consumer`).
//
// Who does what when split:
// - the consumer owns the job: it takes the run lock, runs InitJob (creating or resuming the
//   job), opens the destination, records the cursors and publishes;
// - the producer takes a lock of its own (one producer per pipeline), waits for the consumer's
//   running job in the shared backend, starts from that job's last destination cursor and
//   publishes every iteration, then the termination (or the error termination);
// - back-pressure: the producer pauses while what it published and the destination did not
//   record yet exceeds the queue's max_bytes, so a dead consumer stops it instead of letting
//   the broker grow; it stops when the consumer ends the job (fails, is replaced by a new job).
#pragma once

#include <optional>

#include "bizon/destination.h"
#include "bizon/source.h"
#include "engine/consumer.h"
#include "engine/job.h"
#include "engine/pipeline.h"
#include "engine/producer.h"
#include "engine/queue/queue_factory.h"

namespace bizon {

class TransformChain;

std::optional<RunRole> ParseRunRole(std::string_view text);
std::string_view ToString(RunRole role);

/// Config errors of a role: a split role needs a network queue and a backend both processes
/// reach. `file_name` prefixes the message like the other config errors.
Status CheckRole(RunRole role, const std::string& file_name, const Value& config,
                 const PipelineSettings& settings, std::string_view runner);

struct BrokeredSides {
  std::optional<ProducerResult> producer;  // Not set for the consumer role.
  ConsumerResult consumer;
  int64_t records_published = 0;
};

/// The consumer side (and, for RunRole::kAll, the producer on a thread beside it) of a job that
/// InitJob planned.
BrokeredSides RunThroughBroker(RunRole role, Source& source, Destination& destination,
                               Backend& backend, const PipelineSettings& settings,
                               const JobPlan& plan, const BrokerQueueConfig& queue,
                               TransformChain* transforms);

struct ProducerRoleResult {
  ProducerResult producer;
  std::string job_id;
  int64_t records_published = 0;
};

/// The producer role: waits up to `job_wait_s` for the consumer's running job, then produces.
ProducerRoleResult RunProducerRole(Source& source, Backend& backend,
                                   const PipelineSettings& settings, const BrokerQueueConfig& queue,
                                   double job_wait_s);

}  // namespace bizon
