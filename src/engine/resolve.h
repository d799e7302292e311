// The first step of a run: everything the config says, checked and looked up before anything is
// opened. Every failure here is the user's config (class `config`).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "bizon/registry.h"
#include "bizon/source.h"
#include "config/pipeline_config.h"
#include "engine/queue/queue_factory.h"
#include "engine/runner/runner.h"
#include "engine/settings.h"
#include "python/python_source.h"
#include "python/python_transforms.h"

namespace bizon {

struct ResolvedRun {
  PipelineSettings settings;
  const SourceDescriptor* source_descriptor = nullptr;
  const DestinationDescriptor* destination_descriptor = nullptr;
  /// Set for a custom Python source (`--custom-source` / `source.source_file_path`).
  std::string python_source_path;
  PythonSourceOptions python_options;
  /// The config's `transforms:` list, when it has one, and its chain, compiled by the caller.
  const Value* transforms_config = nullptr;
  std::shared_ptr<TransformChain> transforms;
  /// The runner this run uses (a custom Python source cannot run in a forked producer).
  RunnerKind runner = RunnerKind::kThread;
  /// A kafka or rabbitmq queue; nullopt for the in-process one.
  std::optional<BrokerQueueConfig> broker;

  /// Iterations go through the broker (the stream runner has no queue).
  bool through_broker() const { return broker.has_value() && runner != RunnerKind::kStream; }

  /// A new instance of the source.
  Result<std::unique_ptr<Source>> MakeSource(const SourceContext& context) const;
};

/// `transforms`: the config's `transforms:` compiled by the caller (engine/embedded_python.h);
/// required when the config has transforms.
Result<ResolvedRun> ResolveRun(const LoadedConfig& config, const ConnectorRegistry& registry,
                               RunRole role, std::shared_ptr<TransformChain> transforms);

}  // namespace bizon
