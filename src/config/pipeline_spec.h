// The declaration of a whole pipeline file: config's own keys (name, id, transforms, secrets,
// streams and the keys every source and destination shares), each registered connector's
// ConfigSpec, and the sections the modules above config declare beside the code that reads them.
#pragma once

#include <string_view>
#include <vector>

#include "bizon/config_spec.h"
#include "bizon/registry.h"
#include "common/destination_fields.h"
#include "config/validator.h"

namespace bizon {

/// What a pipeline file is declared from, beyond config's own keys. The binary assembles it once
/// (cli/pipeline_declaration.h); config never names the modules the sections come from.
struct PipelineDeclaration {
  const ConnectorRegistry& registry;
  /// `engine:`: backend, queue, runner.
  ConfigSection engine;
  /// `monitoring:`: metrics and traces.
  ConfigSection monitoring;
  /// `alerting:`: Slack alerts.
  ConfigSection alerting;
};

/// Keys every source accepts (name, stream, sync_mode, ...), before a connector's own.
std::vector<FieldSpec> CommonSourceFields();
// Keys every destination accepts under `destination.config`: CommonDestinationFields(), in
// common/destination_fields.h, where the destinations read them too.

/// The root object: name, id, source, destination, transforms, engine, secrets, monitoring,
/// alerting, streams. Source and destination are discriminated by `name` over the registry.
/// `custom_source_name` non-empty: the source is a custom Python file under that name.
FieldSpec PipelineSpec(const PipelineDeclaration& declaration,
                       std::string_view custom_source_name = {});

/// Before validation: each connector named by the raw config completes it (normalize_config).
void NormalizeForConnectors(const ConnectorRegistry& registry, Value& raw);

/// After validation: a source or destination of a family this binary was built without (its
/// CMake option OFF) is named at its line with the option that builds it, instead of the list of
/// names the spec knows.
void ExplainUnbuiltConnectors(const ConnectorRegistry& registry, const Value& raw,
                              ValidationResult& result);

/// Rules that span several keys (streams need stream mode, unnest needs record_schemas, ...),
/// then the connectors' and the sections' own. Runs on the normalized config; `raw` gives line
/// numbers.
void CheckPipelineRules(const PipelineDeclaration& declaration, const Value& raw,
                        ValidationResult& result);

}  // namespace bizon
