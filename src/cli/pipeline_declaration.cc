#include "cli/pipeline_declaration.h"

#include "alerting/alerting_options.h"
#include "engine/engine_options.h"
#include "monitoring/monitoring_options.h"

namespace bizon {

PipelineDeclaration DeclarePipeline(const ConnectorRegistry& registry) {
  return {.registry = registry,
          .engine = EngineSection(),
          .monitoring = MonitoringSection(),
          .alerting = AlertingSection()};
}

}  // namespace bizon
