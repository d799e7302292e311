// OpenTelemetry: the same metrics and iteration spans as Datadog, sent over OTLP/HTTP with the
// JSON encoding (POST <endpoint>/v1/metrics and /v1/traces, Content-Type application/json),
// configured by the standard OTEL_* variables.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "monitoring/monitor.h"
#include "monitoring/telemetry_http.h"

namespace bizon {

struct OtelOptions {
  std::string metrics_url;
  std::string traces_url;
  TelemetryHeaders headers;  // OTEL_EXPORTER_OTLP_HEADERS.
  /// service.name first, then OTEL_RESOURCE_ATTRIBUTES.
  MetricTags resource;
  bool metrics = true;
  bool traces = true;
  int64_t export_interval_ms = 60'000;  // OTEL_METRIC_EXPORT_INTERVAL.
};

/// Whether an OTLP endpoint variable is set (and OTEL_SDK_DISABLED is not true).
bool OtelSelectedByEnvironment(EnvLookup env);

/// Reads the OTEL_* variables. `enable_tracing` is monitoring.config.enable_tracing when given
/// (traces are on by default with otel).
Result<OtelOptions> ReadOtelOptions(EnvLookup env, std::optional<bool> enable_tracing);

/// key=value,key=value with percent-encoded values (OTEL_RESOURCE_ATTRIBUTES, _HEADERS); a
/// malformed entry is skipped with a warning naming the variable.
MetricTags ParseOtelList(std::string_view text, std::string_view variable);

/// The ExportTraceServiceRequest JSON for `spans`.
std::string OtlpTracesJson(const std::vector<IterationSpan>& spans, const MonitorIdentity& identity,
                           const OtelOptions& options);

/// Cumulative metric state, and its ExportMetricsServiceRequest JSON.
class OtlpMetrics {
 public:
  OtlpMetrics(const MonitorIdentity& identity, int64_t start_us);
  void Add(const MonitorEvent& event);
  bool empty() const { return series_.empty(); }
  std::string Json(const OtelOptions& options, int64_t now_us) const;

 private:
  struct Series {
    std::string_view name;
    MonitorEvent::Kind kind;
    MetricTags tags;  // Beyond the base tags.
    int64_t count = 0;
    double gauge = 0;
    int64_t gauge_time_us = 0;
    LatencySummary latency;
  };
  MetricTags base_tags_;
  int64_t start_us_;
  std::vector<Series> series_;
};

std::unique_ptr<Exporter> MakeOtelExporter(const OtelOptions& options,
                                           const MonitorIdentity& identity);

}  // namespace bizon
