// The declaration of a whole pipeline file, assembled from the engine's own option lists and
// each registered connector's ConfigSpec.
#pragma once

#include <vector>

#include "bizon/config_spec.h"
#include "bizon/registry.h"
#include "config/validator.h"

namespace bizon {

/// Keys every source accepts (name, stream, sync_mode, ...), before a connector's own.
std::vector<FieldSpec> CommonSourceFields();
/// Keys every destination accepts under `destination.config` (buffer_size, ...).
std::vector<FieldSpec> CommonDestinationFields();

/// The root object: name, id, source, destination, transforms, engine, secrets, monitoring,
/// alerting, streams. Source and destination are discriminated by `name` over `registry`.
/// `custom_source_name` non-empty: the source is a custom Python file under that name.
FieldSpec PipelineSpec(const ConnectorRegistry& registry, std::string_view custom_source_name = {});

/// Rules that span several keys (streams need stream mode, unnest needs record_schemas, ...).
/// Runs on the normalized config; `raw` gives line numbers.
void CheckPipelineRules(const ConnectorRegistry& registry, const Value& raw,
                        ValidationResult& result);

}  // namespace bizon
