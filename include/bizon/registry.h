// ConnectorRegistry: the explicit list of sources and destinations the binary knows.
//
// main() builds one, fills it with RegisterBuiltinConnectors (src/connectors/registration.h),
// which calls each connector's RegisterX(registry), and passes it down. There are no static
// initialisers; registering a name twice is an error.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bizon/config_spec.h"
#include "bizon/destination.h"
#include "bizon/source.h"
#include "bizon/status.h"

namespace bizon {

struct StreamSpec {
  std::string name;
  bool supports_incremental = false;
  std::string description;
};

/// Everything a source factory gets: the validated `source` block with defaults filled in.
struct SourceContext {
  std::string pipeline_name;
  std::string stream;
  SyncMode sync_mode = SyncMode::kFullRefresh;
  Value config;
};

/// Everything a destination factory gets: the validated `destination.config` block.
struct DestinationContext {
  SyncMetadata sync;
  Value config;
  /// True when the backend knows the job `job_id` and it will never succeed (failed, cancelled,
  /// or replaced by a newer job), so that what it left half done can be undone. Null when the
  /// caller cannot tell.
  std::function<Result<bool>(const std::string& job_id)> job_abandoned;
  /// Counts rows the destination had to write another way because they were too large for its
  /// usual path (the monitor's bizon_pipeline.large_records, tagged with `destination_id`).
  /// Null when the run is not monitored.
  std::function<void(int64_t rows, std::string_view destination_id)> large_records;
};

using SourceFactory = std::function<Result<std::unique_ptr<Source>>(const SourceContext&)>;
using DestinationFactory =
    std::function<Result<std::unique_ptr<Destination>>(const DestinationContext&)>;

struct SourceDescriptor {
  std::string name;
  std::string description;
  std::vector<StreamSpec> streams;
  /// True when stream names come from the pipeline's own config (rest_api endpoints): any
  /// non-empty `source.stream` is accepted and the connector checks it; `streams` then lists
  /// examples only.
  bool streams_from_config = false;
  /// With streams_from_config: checks `stream` against the streams a validated `source:` block
  /// declares, so that `config validate` reports an unknown one before anything runs. The error
  /// message is shown after the `source.stream` path. Null: checked only when the run starts.
  std::function<Status(const Value& source_config, const std::string& stream)> check_stream;
  /// The connector's own keys under `source:`, beside the common ones (name, stream, sync_mode...).
  ConfigSpec config;
  /// Completes the raw pipeline config before it is validated, from keys outside `source:` (the
  /// kafka source takes its topics from a `streams:` block). Null: nothing to complete.
  std::function<void(Value& config)> normalize_config;
  /// Rules across the whole normalized pipeline config that concern this source; violations
  /// carry full YAML paths. Null: none.
  std::function<std::vector<ConfigRuleViolation>(const Value& config)> check_pipeline;
  /// Null while the connector is declared but not yet implemented.
  SourceFactory factory;
};

struct DestinationDescriptor {
  std::string name;
  std::string description;
  /// The default `destination.alias`.
  std::string alias;
  /// The connector's own keys under `destination.config`, beside the buffer keys.
  ConfigSpec config;
  /// False for destinations that append even on a full refresh: a reset is rejected for them.
  bool supports_reset = true;
  /// True when several processes may write one stream at once, each under its own job, and a
  /// destination opened with another job's id and last state discards that job's writes after
  /// it (what Open() does on resume). Then a partitioned source (Kafka) in stream mode runs as
  /// one member of many; otherwise a second process of the pipeline is refused.
  bool concurrent_members = false;
  /// Checks a destination id the config names itself, so that `config validate` refuses what the
  /// destination would refuse when writing (an id from data is checked when it is written).
  /// Called for destination.config.destination_id and `destination_id_keys`, each record_schemas
  /// entry, each streams[].destination.table_id and source.topics[].destination_id, and for the
  /// default `<source>_<stream>` when none is set. The error message is shown after the id's
  /// yaml path. Null: ids are checked only when the run starts.
  std::function<Status(std::string_view destination_id, SyncMode sync_mode)> check_destination_id;
  /// Checks rules across `destination.config` options (given normalized) that the declared spec
  /// cannot express, so that `config validate` reports them with their line; the factory
  /// enforces them again. Null: none.
  std::function<std::vector<ConfigRuleViolation>(const Value& config, SyncMode sync_mode)>
      check_config;
  /// Completes the raw pipeline config before it is validated, from keys outside `destination:`.
  /// Null: nothing to complete.
  std::function<void(Value& config)> normalize_config;
  /// Rules across the whole normalized pipeline config that concern this destination (the
  /// bigquery destinations want each `streams[].destination.table_id` as project.dataset.table);
  /// violations carry full YAML paths. Null: none.
  std::function<std::vector<ConfigRuleViolation>(const Value& config)> check_pipeline;
  /// Keys of `destination.config` that, beside destination_id, name the default destination id.
  std::vector<std::string> destination_id_keys;
  DestinationFactory factory;
};

class ConnectorRegistry {
 public:
  Status AddSource(SourceDescriptor descriptor);
  Status AddDestination(DestinationDescriptor descriptor);

  const SourceDescriptor* FindSource(std::string_view name) const;
  const DestinationDescriptor* FindDestination(std::string_view name) const;

  /// In name order.
  std::vector<const SourceDescriptor*> sources() const;
  std::vector<const DestinationDescriptor*> destinations() const;

  /// Records a built-in connector this binary was built without (its family's CMake option OFF),
  /// so that a pipeline naming it is refused with the option that builds it.
  void AddUnbuilt(std::string name, std::string family);
  /// The family of the unbuilt connector `name`; empty for any other name.
  std::string_view UnbuiltFamily(std::string_view name) const;

 private:
  std::map<std::string, std::string, std::less<>> unbuilt_;
  std::map<std::string, SourceDescriptor, std::less<>> sources_;
  std::map<std::string, DestinationDescriptor, std::less<>> destinations_;
};

}  // namespace bizon
