// The declaration every pipeline file of this binary is read against, assembled in one place:
// config's own keys, the registered connectors, and the sections the engine, monitoring and
// alerting declare beside the code that reads them.
#pragma once

#include "bizon/registry.h"
#include "config/pipeline_spec.h"

namespace bizon {

/// `registry` must outlive the declaration.
PipelineDeclaration DeclarePipeline(const ConnectorRegistry& registry);

}  // namespace bizon
