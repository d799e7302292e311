// A runner lays out the two sides of one planned job: the producer (the source's Get loop) and
// the consumer (writes and the commit loop). Which runner a pipeline uses is parsed once
// (RunnerKind, engine/settings.h) and chosen once, in MakeRunner().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "bizon/destination.h"
#include "bizon/source.h"
#include "engine/consumer.h"
#include "engine/job.h"
#include "engine/producer.h"
#include "engine/settings.h"

namespace bizon {

class TransformChain;
class MemberLedger;
struct BrokerQueueConfig;

/// Which side of the pipeline this process runs (`bizon run --role`): both (the default), or
/// one of them, the other running in another process through a kafka or rabbitmq queue.
enum class RunRole { kAll, kProducer, kConsumer };
std::optional<RunRole> ParseRunRole(std::string_view text);
std::string_view ToString(RunRole role);

/// Everything a runner works with, opened and planned before it starts.
struct RunContext {
  Source& source;
  Destination& destination;
  Backend& backend;
  const PipelineSettings& settings;
  const JobPlan& plan;
  /// The compiled chain; null without transforms.
  TransformChain* transforms = nullptr;
  /// The config's `transforms:` list, for the process runner's worker processes.
  const Value* transforms_config = nullptr;
  /// Builds another instance of the source, for a producer in a forked process.
  std::function<Result<std::unique_ptr<Source>>()> make_source;
  /// The stream runner's partition ledger, when it runs as a member; null otherwise.
  MemberLedger* ledger = nullptr;
  RunRole role = RunRole::kAll;
  /// The network queue between the sides; null for the in-process channels.
  const BrokerQueueConfig* broker = nullptr;
};

/// Each side's result; a side a runner does not have stays unset.
struct RunnerResult {
  std::optional<ProducerResult> producer;
  std::optional<ConsumerResult> consumer;
  /// The stream runner's one loop.
  std::optional<Status> stream;
  /// The producer role: records it published this run.
  int64_t records_published = 0;
};

class Runner {
 public:
  virtual ~Runner() = default;
  virtual RunnerResult Run(const RunContext& context) = 0;
};

/// The runner for `kind`; with `through_broker` a network queue sits between the sides of the
/// thread and process runners (the stream runner has no queue).
std::unique_ptr<Runner> MakeRunner(RunnerKind kind, bool through_broker);

std::unique_ptr<Runner> MakeThreadRunner();
std::unique_ptr<Runner> MakeProcessRunner();
std::unique_ptr<Runner> MakeStreamRunner();
std::unique_ptr<Runner> MakeBrokerRunner();

/// Acknowledges the source up to what the consumer recorded after the producer's last fetch,
/// once the producer has ended and the source is the caller's alone.
void AcknowledgeLast(Source& source, Acknowledgements& acks, const PipelineSettings& settings,
                     const ConsumerResult& consumer);

}  // namespace bizon
