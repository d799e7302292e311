#include "engine/runner/runner.h"

#include <spdlog/spdlog.h>

namespace bizon {

std::optional<RunRole> ParseRunRole(std::string_view text) {
  for (RunRole role : {RunRole::kAll, RunRole::kProducer, RunRole::kConsumer}) {
    if (ToString(role) == text) return role;
  }
  return std::nullopt;
}

std::string_view ToString(RunRole role) {
  switch (role) {
    case RunRole::kAll:
      return "all";
    case RunRole::kProducer:
      return "producer";
    case RunRole::kConsumer:
      return "consumer";
  }
  return "all";
}

std::unique_ptr<Runner> MakeRunner(RunnerKind kind, bool through_broker) {
  if (kind == RunnerKind::kStream) return MakeStreamRunner();
  if (through_broker) return MakeBrokerRunner();
  return kind == RunnerKind::kProcess ? MakeProcessRunner() : MakeThreadRunner();
}

void AcknowledgeLast(Source& source, Acknowledgements& acks, const PipelineSettings& settings,
                     const ConsumerResult& consumer) {
  std::optional<Value> recorded = acks.Take();
  if (!recorded || !consumer.ok()) return;
  if (Status committed = source.Commit(*recorded); !committed.ok()) {
    // Everything is written and recorded; only the source's own bookmark lags (a kafka group's
    // offsets), and the next run moves it.
    spdlog::warn("Source {}.{} could not acknowledge the last records written: {}",
                 settings.key.source_name, settings.key.stream_name, committed.message());
  }
}

}  // namespace bizon
