#include "monitoring/datadog.h"

#include <fmt/format.h>
#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "bizon/clock.h"
#include "common/fork_guard.h"
#include "monitoring/monitoring_options.h"
#include "monitoring/telemetry_http.h"

namespace bizon {
namespace {

constexpr size_t kUdpDatagramBytes = 1432;  // Fits one Ethernet frame, as the clients do.
constexpr size_t kUnixDatagramBytes = 8192;
constexpr size_t kMaxPendingDatadogSpans = 2000;

/// Tag text the protocol cannot carry ('|', ',', '#', line breaks) becomes '_'; a ':' in a key
/// would move the key/value split, so it does too.
std::string TagText(std::string_view text, bool key) {
  std::string out(text);
  for (char& c : out) {
    if (c == '|' || c == ',' || c == '#' || c == '\n' || c == '\r' || (key && c == ':')) c = '_';
  }
  return out;
}

void AppendTags(std::string& line, const MetricTags& base, const MetricTags& extra) {
  bool first = true;
  for (const MetricTags* tags : {&base, &extra}) {
    for (const auto& [key, value] : *tags) {
      line += first ? "|#" : ",";
      first = false;
      line += TagText(key, true);
      line += ':';
      line += TagText(value, false);
    }
  }
}

std::string Number(double value) { return fmt::format("{}", value); }

uint64_t RandomId() {
  thread_local std::mt19937_64 generator(std::random_device{}());
  uint64_t id = 0;
  while (id == 0) id = generator() >> 1;  // 63 bits, as the tracers make them.
  return id;
}

uint64_t HexToU64(std::string_view hex) { return std::stoull(std::string(hex), nullptr, 16); }

/// How often the data-streams stats are sent (the tracers' interval, their bucket size).
constexpr int64_t kDataStreamsIntervalUs = DataStreams::kBucketNanos / 1000;

class DatadogExporter final : public Exporter {
 public:
  DatadogExporter(DatadogOptions options, MonitorIdentity identity, int fd, sockaddr_storage to,
                  socklen_t to_length, std::shared_ptr<DataStreams> streams)
      : options_(std::move(options)),
        identity_(std::move(identity)),
        base_tags_(identity_.BaseTags()),
        fd_(fd),
        to_(to),
        to_length_(to_length),
        streams_(std::move(streams)),
        last_streams_us_(NowMicros()) {}
  ~DatadogExporter() override { ::close(fd_); }

  int64_t Export(std::vector<MonitorEvent>& events) override {
    std::vector<std::string> lines;
    int64_t dropped = 0;
    for (MonitorEvent& event : events) {
      if (event.kind == MonitorEvent::Kind::kSpan) {
        if (spans_.size() >= kMaxPendingDatadogSpans) {
          ++dropped;
        } else {
          spans_.push_back(std::move(event.span));
        }
        continue;
      }
      lines.push_back(StatsdLine(event, base_tags_));
    }
    size_t max = options_.socket_path.empty() ? kUdpDatagramBytes : kUnixDatagramBytes;
    for (const std::string& datagram : PackDatagrams(lines, max)) {
      ssize_t sent = ::sendto(fd_, datagram.data(), datagram.size(), MSG_DONTWAIT,
                              reinterpret_cast<const sockaddr*>(&to_), to_length_);
      if (sent < 0) {
        dropped += 1 + static_cast<int64_t>(std::count(datagram.begin(), datagram.end(), '\n'));
        if (!warned_statsd_) {
          warned_statsd_ = true;
          spdlog::warn("Monitoring: cannot send to DogStatsD at {}: {}", options_.Target(),
                       std::strerror(errno));
        }
      }
    }
    return dropped;
  }

  int64_t Tick(int64_t now_us, bool final) override {
    SendDataStreams(now_us, final);
    return SendTraces(now_us, final);
  }

 private:
  int64_t SendTraces(int64_t now_us, bool final) {
    if (spans_.empty() || (!final && now_us - last_trace_us_ < 1'000'000) ||
        (!final && !backoff_.ready(now_us))) {
      return 0;
    }
    last_trace_us_ = now_us;
    std::vector<IterationSpan> spans;
    spans.swap(spans_);
    auto sent = SendTelemetry("PUT", options_.trace_url + "/v0.3/traces",
                              {{"Content-Type", "application/json"},
                               {"X-Datadog-Trace-Count", std::to_string(spans.size())},
                               {"Datadog-Meta-Lang", "cpp"}},
                              DatadogTracesJson(spans, identity_, options_));
    if (!sent) {
      backoff_.Failed(now_us);
      if (!warned_traces_) {
        warned_traces_ = true;
        spdlog::warn("Monitoring: cannot send traces to the Datadog agent: {}",
                     sent.error().message());
      }
      return static_cast<int64_t>(spans.size());
    }
    backoff_.Succeeded();
    return 0;
  }

  /// Every 10 s and at the end: what the checkpoints aggregated, to /v0.1/pipeline_stats. What
  /// cannot be delivered is dropped (the tracers drop it too), with one warning per run.
  void SendDataStreams(int64_t now_us, bool final) {
    if (streams_ == nullptr || (!final && now_us - last_streams_us_ < kDataStreamsIntervalUs)) {
      return;
    }
    last_streams_us_ = now_us;
    std::string payload = streams_->TakePayload();
    if (!payload.empty()) {
      auto sent = SendTelemetry("POST", options_.trace_url + "/v0.1/pipeline_stats",
                                {{"Content-Type", "application/msgpack"},
                                 {"Content-Encoding", "gzip"},
                                 {"Datadog-Meta-Lang", "cpp"},
                                 {"Datadog-Meta-Tracer-Version", BIZON_VERSION}},
                                GzipStored(payload));
      if (!sent && !warned_streams_) {
        warned_streams_ = true;
        spdlog::warn(
            "Monitoring: cannot send data-streams stats to the Datadog agent, they are dropped: "
            "{}",
            sent.error().message());
      }
    }
    if (int64_t dropped = streams_->dropped(); final && dropped > 0) {
      spdlog::warn("Monitoring: {} data-streams checkpoints were dropped (too many pathways)",
                   dropped);
    }
  }

  const DatadogOptions options_;
  const MonitorIdentity identity_;
  const MetricTags base_tags_;
  int fd_;
  sockaddr_storage to_;
  socklen_t to_length_;
  std::vector<IterationSpan> spans_;
  int64_t last_trace_us_ = 0;
  DeliveryBackoff backoff_;
  std::shared_ptr<DataStreams> streams_;
  int64_t last_streams_us_;
  bool warned_statsd_ = false;
  bool warned_traces_ = false;
  bool warned_streams_ = false;
};

/// A QueuedMonitor that also sets the data-streams checkpoints, on the caller's thread (they
/// only aggregate, under the DataStreams lock; the exporter sends).
class DataStreamsMonitor final : public QueuedMonitor {
 public:
  DataStreamsMonitor(const MonitorIdentity& identity, std::unique_ptr<Exporter> exporter,
                     bool tracing, std::shared_ptr<DataStreams> streams)
      : QueuedMonitor(identity, std::move(exporter), tracing), streams_(std::move(streams)) {}

  bool data_streams() const override { return true; }
  void ConsumeCheckpoints(const RecordBatch& records) override {
    // A forked child (the process runner's producer) reports nothing, as QueuedMonitor.
    if (!InForkedChild()) streams_->Consume(records, NowMicros());
  }
  void ProduceCheckpoints() override {
    if (!InForkedChild()) streams_->Produce(NowMicros());
  }

 private:
  std::shared_ptr<DataStreams> streams_;
};

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return {};
  return name;
}

}  // namespace

std::string DatadogOptions::Target() const {
  return socket_path.empty() ? fmt::format("{}:{}", statsd_host, statsd_port)
                             : "unix://" + socket_path;
}

Result<DatadogOptions> ReadDatadogOptions(const Value& config, EnvLookup env) {
  DatadogOptions options;
  std::string variable = config.GetString("datadog_host_env_var");
  std::optional<std::string> from_env;
  if (!variable.empty()) from_env = env(variable.c_str());
  std::string configured = config.GetString("datadog_agent_host");
  if (from_env && !from_env->empty()) {
    options.statsd_host = *from_env;
  } else if (!configured.empty()) {
    options.statsd_host = configured;
  } else {
    spdlog::warn(
        "Monitoring: monitoring.config.datadog_host_env_var names {}, which is not set, and no "
        "datadog_agent_host is given; sending to localhost",
        variable);
  }
  OptionReader declared(MonitoringConfigField(), config);
  options.statsd_port = static_cast<int>(declared.Integer("datadog_agent_port"));
  BIZON_RETURN_IF_ERROR(declared.status());
  if (options.statsd_port <= 0 || options.statsd_port > 65535) {
    return Fail(InvalidArgumentError(fmt::format(
        "monitoring.config.datadog_agent_port: {} is not a port", options.statsd_port)));
  }
  constexpr std::string_view kUnix = "unix://";
  if (options.statsd_host.starts_with(kUnix)) {
    options.socket_path = options.statsd_host.substr(kUnix.size());
    if (options.socket_path.empty() ||
        options.socket_path.size() >= sizeof(sockaddr_un::sun_path)) {
      return Fail(InvalidArgumentError(
          fmt::format("monitoring.config: the DogStatsD socket path '{}' is empty or too long",
                      options.socket_path)));
    }
  }
  options.tracing = config.GetBool("enable_tracing");
  std::optional<std::string> trace_url = env("DD_TRACE_AGENT_URL");
  if (trace_url && !trace_url->empty()) {
    options.trace_url = *trace_url;
    while (options.trace_url.ends_with('/')) options.trace_url.pop_back();
  } else {
    std::optional<std::string> port = env("DD_TRACE_AGENT_PORT");
    std::string host = options.socket_path.empty() ? options.statsd_host : "localhost";
    if (host.find(':') != std::string::npos) host = "[" + host + "]";  // IPv6 literal.
    options.trace_url =
        fmt::format("http://{}:{}", host, port && !port->empty() ? *port : std::string("8126"));
  }
  if (auto service = env("DD_SERVICE"); service && !service->empty()) options.service = *service;
  if (auto environment = env("DD_ENV")) options.env = *environment;
  if (auto version = env("DD_VERSION")) options.version = *version;
  options.data_streams = env("DD_DATA_STREAMS_ENABLED") == "true";
  return options;
}

std::string StatsdLine(const MonitorEvent& event, const MetricTags& base_tags) {
  std::string line(event.name);
  switch (event.kind) {
    case MonitorEvent::Kind::kCount:
      line += ':' + Number(event.value) + "|c";
      break;
    case MonitorEvent::Kind::kGauge:
      line += ':' + Number(event.value) + "|g";
      break;
    case MonitorEvent::Kind::kLatency:
      for (double sample : event.latency.samples) line += ':' + Number(sample);
      line += "|d";
      if (event.latency.sample_rate < 1) line += fmt::format("|@{:.6g}", event.latency.sample_rate);
      break;
    case MonitorEvent::Kind::kSpan:
      return {};
  }
  AppendTags(line, base_tags, event.tags);
  return line;
}

std::vector<std::string> PackDatagrams(const std::vector<std::string>& lines, size_t max_bytes) {
  std::vector<std::string> datagrams;
  std::string current;
  for (const std::string& line : lines) {
    if (line.empty()) continue;
    if (!current.empty() && current.size() + 1 + line.size() > max_bytes) {
      datagrams.push_back(std::move(current));
      current.clear();
    }
    if (!current.empty()) current += '\n';
    current += line;
  }
  if (!current.empty()) datagrams.push_back(std::move(current));
  return datagrams;
}

std::string DatadogTracesJson(const std::vector<IterationSpan>& spans,
                              const MonitorIdentity& identity, const DatadogOptions& options) {
  MetricTags meta = identity.BaseTags();
  if (!options.env.empty()) meta.emplace_back("env", options.env);
  if (!options.version.empty()) meta.emplace_back("version", options.version);
  std::string out = "[";
  for (const IterationSpan& span : spans) {
    if (out.size() > 1) out += ',';
    uint64_t trace_id = RandomId();
    uint64_t parent_id = 0;
    MetricTags span_meta = meta;
    if (span.parent) {
      trace_id = HexToU64(std::string_view(span.parent->trace_id).substr(16));
      parent_id = HexToU64(span.parent->parent_id);
      span_meta.emplace_back("_dd.p.tid", span.parent->trace_id.substr(0, 16));
    }
    out += fmt::format(R"([{{"trace_id":{},"span_id":{},"parent_id":{},"name":)", trace_id,
                       RandomId(), parent_id);
    AppendJsonString(out, metric::kIterationSpan);
    out += R"(,"resource":)";
    AppendJsonString(out, identity.source_name + "." + identity.stream_name);
    out += R"(,"service":)";
    AppendJsonString(out, options.service);
    out += fmt::format(
        R"(,"type":"worker","start":{},"duration":{},"error":{},"meta":{{)", span.start_us * 1000,
        std::max<int64_t>(0, span.end_us - span.start_us) * 1000, span.error ? 1 : 0);
    bool first = true;
    for (const auto& [key, value] : span_meta) {
      if (!first) out += ',';
      first = false;
      AppendJsonString(out, key);
      out += ':';
      AppendJsonString(out, value);
    }
    out +=
        fmt::format(R"(}},"metrics":{{"_sampling_priority_v1":1,"iteration":{},"records":{}}}}}])",
                    span.iteration, span.records);
  }
  out += ']';
  return out;
}

Result<std::unique_ptr<Exporter>> MakeDatadogExporter(const DatadogOptions& options,
                                                      const MonitorIdentity& identity,
                                                      std::shared_ptr<DataStreams> streams) {
  sockaddr_storage to{};
  socklen_t length = 0;
  int fd = -1;
  if (!options.socket_path.empty()) {
    fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    auto* address = reinterpret_cast<sockaddr_un*>(&to);
    address->sun_family = AF_UNIX;
    std::memcpy(address->sun_path, options.socket_path.c_str(), options.socket_path.size() + 1);
    length = sizeof(sockaddr_un);
  } else {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo* found = nullptr;
    int resolved = ::getaddrinfo(options.statsd_host.c_str(),
                                 std::to_string(options.statsd_port).c_str(), &hints, &found);
    if (resolved != 0 || found == nullptr) {
      return Fail(Status(StatusCode::kUnavailable,
                         fmt::format("monitoring: cannot resolve the DogStatsD host '{}': {}",
                                     options.statsd_host, ::gai_strerror(resolved))));
    }
    std::memcpy(&to, found->ai_addr, found->ai_addrlen);
    length = found->ai_addrlen;
    fd = ::socket(found->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ::freeaddrinfo(found);
  }
  if (fd < 0) {
    return Fail(Status(
        StatusCode::kUnavailable,
        fmt::format("monitoring: cannot open a DogStatsD socket: {}", std::strerror(errno))));
  }
  return std::unique_ptr<Exporter>(
      std::make_unique<DatadogExporter>(options, identity, fd, to, length, std::move(streams)));
}

Result<std::unique_ptr<Monitor>> MakeDatadogMonitor(const DatadogOptions& options,
                                                    const MonitorIdentity& identity) {
  std::shared_ptr<DataStreams> streams;
  if (options.data_streams) {
    streams = std::make_shared<DataStreams>(DataStreamsOptions{
        .service = options.service,
        .env = options.env,
        .version = options.version,
        .hostname = HostName(),
        .tracer_version = BIZON_VERSION,
        .destination_type = identity.destination_alias.empty() ? identity.destination_name
                                                               : identity.destination_alias,
        .default_destination_id = identity.default_destination_id});
  }
  BIZON_ASSIGN_OR_RETURN(std::unique_ptr<Exporter> exporter,
                         MakeDatadogExporter(options, identity, streams));
  spdlog::info("Monitoring: DogStatsD to {}{}{}", options.Target(),
               options.tracing ? ", traces to " + options.trace_url : "",
               streams ? ", data streams to " + options.trace_url : "");
  if (streams == nullptr) {
    return std::unique_ptr<Monitor>(
        std::make_unique<QueuedMonitor>(identity, std::move(exporter), options.tracing));
  }
  return std::unique_ptr<Monitor>(std::make_unique<DataStreamsMonitor>(
      identity, std::move(exporter), options.tracing, std::move(streams)));
}

}  // namespace bizon
