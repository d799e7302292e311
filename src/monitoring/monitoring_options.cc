#include "monitoring/monitoring_options.h"

#include <vector>

namespace bizon {
namespace {

std::vector<ConfigRuleViolation> CheckMonitoring(const Value& monitoring) {
  const Value* type = monitoring.Find("type");
  if (type == nullptr || !type->is_string() || type->AsString() != "datadog") return {};
  const Value* config = monitoring.Find("config");
  if (config == nullptr || config->is_null()) {
    return {{.path = "", .message = "monitoring.config is required for type datadog"}};
  }
  if (!config->is_map()) return {};
  const Value* host = config->Find("datadog_agent_host");
  const Value* host_env = config->Find("datadog_host_env_var");
  if ((host == nullptr || host->is_null()) && (host_env == nullptr || host_env->is_null())) {
    return {{.path = "config",
             .message = "either datadog_agent_host or datadog_host_env_var must be specified"}};
  }
  return {};
}

}  // namespace

FieldSpec MonitoringConfigField() {
  return Option::Object(
      "config",
      {Option::Boolean("enable_tracing", "Send one span per iteration (otel: default true)."),
       Option::String("datadog_agent_host", "DogStatsD host."),
       Option::String("datadog_host_env_var", "Variable holding the DogStatsD host."),
       Option::Integer("datadog_agent_port").Default(8125),
       Option::Map("tags").Default(Value::EmptyMap())},
      "Required for datadog; optional for otel (tags, enable_tracing).");
}

ConfigSection MonitoringSection() {
  return {.field = Option::Object(
              "monitoring",
              {Option::Enum("type", {"datadog", "otel"},
                            "datadog (DogStatsD and the agent's trace intake) or otel (OTLP/HTTP).")
                   .Required(),
               Option::Boolean("enable_tracing", "Kept for compatibility.")
                   .NoEffect("config.enable_tracing is the one read"),
               MonitoringConfigField()},
              "Metrics and tracing."),
          .check = CheckMonitoring};
}

}  // namespace bizon
