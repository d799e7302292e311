// The `monitoring:` block of a pipeline file, declared beside its readers (MakeMonitor in
// monitor.h, ReadDatadogOptions in datadog.h), with the rule across its keys.
#pragma once

#include "bizon/config_spec.h"

namespace bizon {

/// `monitoring:` for the config loader: its declaration, and the rule that datadog needs a
/// `config` block naming a host (otel is configured by the OTEL_* variables).
ConfigSection MonitoringSection();

/// `monitoring.config`.
FieldSpec MonitoringConfigField();

}  // namespace bizon
