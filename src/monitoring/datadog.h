// Datadog: metrics as DogStatsD datagrams (UDP, or a Unix datagram socket for a `unix://` host),
// with enable_tracing one span per iteration sent to the agent's trace intake
// (PUT /v0.3/traces, JSON), and with DD_DATA_STREAMS_ENABLED=true the data-streams pathway
// stats (data_streams.h) sent to POST /v0.1/pipeline_stats.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bizon/value.h"
#include "monitoring/data_streams.h"
#include "monitoring/monitor.h"

namespace bizon {

struct DatadogOptions {
  /// DogStatsD over UDP: host and port.
  std::string statsd_host = "localhost";
  int statsd_port = 8125;
  /// DogStatsD over a Unix datagram socket (host `unix:///path`): the path; empty for UDP.
  std::string socket_path;
  bool tracing = false;
  /// Base URL of the trace agent: DD_TRACE_AGENT_URL, else http://<host>:<DD_TRACE_AGENT_PORT
  /// or 8126>.
  std::string trace_url;
  std::string service = "bizon";  // DD_SERVICE.
  std::string env;                // DD_ENV.
  std::string version;            // DD_VERSION.
  /// DD_DATA_STREAMS_ENABLED is exactly "true", as the original tests it.
  bool data_streams = false;

  std::string Target() const;
};

/// monitoring.config as the original reads it, minus its bug: the host is the value of the
/// variable datadog_host_env_var names when that is set, else datadog_agent_host (the original
/// dropped datadog_agent_host when no variable was named), else localhost with a warning.
Result<DatadogOptions> ReadDatadogOptions(const Value& config, EnvLookup env);

/// One DogStatsD line (no newline) for a count, gauge or latency event, base tags first.
std::string StatsdLine(const MonitorEvent& event, const MetricTags& base_tags);

/// Packs lines into datagrams of at most `max_bytes` (newline separated); a longer line goes
/// alone.
std::vector<std::string> PackDatagrams(const std::vector<std::string>& lines, size_t max_bytes);

/// The /v0.3/traces body for `spans`: an array of traces, each one span.
std::string DatadogTracesJson(const std::vector<IterationSpan>& spans,
                              const MonitorIdentity& identity, const DatadogOptions& options);

/// The exporter; it also sends what `streams` aggregates (every 10 s and at the end of the run)
/// when that is not null.
Result<std::unique_ptr<Exporter>> MakeDatadogExporter(
    const DatadogOptions& options, const MonitorIdentity& identity,
    std::shared_ptr<DataStreams> streams = nullptr);

/// The monitor for `monitoring.type: datadog`: a QueuedMonitor with that exporter, which also
/// sets the data-streams checkpoints when options.data_streams.
Result<std::unique_ptr<Monitor>> MakeDatadogMonitor(const DatadogOptions& options,
                                                    const MonitorIdentity& identity);

}  // namespace bizon
