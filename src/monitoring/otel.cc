#include "monitoring/otel.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

#include "bizon/clock.h"
#include "bizon/value.h"

namespace bizon {
namespace {

constexpr size_t kMaxPendingOtelSpans = 2000;
constexpr size_t kSpansPerRequest = 512;

std::string Nanos(int64_t micros) { return std::to_string(micros * 1000); }

std::string RandomHex(size_t digits) {
  thread_local std::mt19937_64 generator(std::random_device{}());
  std::string out;
  while (out.size() < digits) out += fmt::format("{:016x}", generator());
  out.resize(digits);
  if (std::all_of(out.begin(), out.end(), [](char c) { return c == '0'; })) out.back() = '1';
  return out;
}

// {"key": key, "value": {kind: value}}, built with Set: GCC 12 at -O3 reports a false
// -Warray-bounds when a Value::Map of pairs is grown by hand here.
Value Attribute(const std::string& key, const char* kind, std::string value) {
  Value typed;
  typed.Set(kind, Value(std::move(value)));
  Value attribute;
  attribute.Set("key", Value(key));
  attribute.Set("value", std::move(typed));
  return attribute;
}

Value StringAttribute(const std::string& key, const std::string& value) {
  return Attribute(key, "stringValue", value);
}

Value IntAttribute(const std::string& key, int64_t value) {
  return Attribute(key, "intValue", std::to_string(value));
}

Value Attributes(const MetricTags& base, const MetricTags& extra) {
  Value::List list;
  for (const MetricTags* tags : {&base, &extra}) {
    for (const auto& [key, value] : *tags) list.push_back(StringAttribute(key, value));
  }
  return Value(std::move(list));
}

Value Resource(const OtelOptions& options) {
  return Value(Value::Map{{"attributes", Attributes(options.resource, {})}});
}

Value Scope() { return Value(Value::Map{{"name", "bizon"}}); }

std::string_view Unit(std::string_view name) {
  if (name == metric::kCompletion) return "%";
  if (name == metric::kEta) return "s";
  if (name == metric::kLatency) return "ms";
  return "{record}";
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> PercentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    int high = HexValue(text[i + 1]);
    int low = HexValue(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

std::string Trimmed(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  size_t end = text.find_last_not_of(" \t");
  return std::string(text.substr(begin, end - begin + 1));
}

std::string Endpoint(EnvLookup env, const char* specific, std::string_view path) {
  if (auto url = env(specific); url && !url->empty()) return *url;
  std::string base = env("OTEL_EXPORTER_OTLP_ENDPOINT").value_or("");
  if (base.empty()) base = "http://localhost:4318";
  while (base.ends_with('/')) base.pop_back();
  return base + std::string(path);
}

class OtelExporter final : public Exporter {
 public:
  OtelExporter(OtelOptions options, MonitorIdentity identity)
      : options_(std::move(options)),
        identity_(std::move(identity)),
        metrics_(identity_, NowMicros()),
        last_metrics_us_(NowMicros()) {
    headers_ = options_.headers;
    headers_.emplace_back("Content-Type", "application/json");
  }

  int64_t Export(std::vector<MonitorEvent>& events) override {
    int64_t dropped = 0;
    for (MonitorEvent& event : events) {
      if (event.kind == MonitorEvent::Kind::kSpan) {
        if (!options_.traces || spans_.size() >= kMaxPendingOtelSpans) {
          dropped += options_.traces ? 1 : 0;
        } else {
          spans_.push_back(std::move(event.span));
        }
      } else if (options_.metrics) {
        metrics_.Add(event);
        dirty_ = true;
      }
    }
    return dropped;
  }

  int64_t Tick(int64_t now_us, bool final) override {
    int64_t dropped = 0;
    bool ready = final || backoff_.ready(now_us);
    if (!spans_.empty() && ready && (final || now_us - last_traces_us_ >= 1'000'000)) {
      last_traces_us_ = now_us;
      while (!spans_.empty()) {
        size_t take = std::min(spans_.size(), kSpansPerRequest);
        std::vector<IterationSpan> batch(
            std::make_move_iterator(spans_.begin()),
            std::make_move_iterator(spans_.begin() + static_cast<std::ptrdiff_t>(take)));
        spans_.erase(spans_.begin(), spans_.begin() + static_cast<std::ptrdiff_t>(take));
        if (!Deliver(options_.traces_url, OtlpTracesJson(batch, identity_, options_), now_us)) {
          // The endpoint is down: what is left would only wait for the same timeout again.
          dropped += static_cast<int64_t>(batch.size() + spans_.size());
          spans_.clear();
          ready = false;  // Nor would the metrics get through now.
        }
      }
    }
    if (dirty_ && ready &&
        (final || now_us - last_metrics_us_ >= options_.export_interval_ms * 1000)) {
      last_metrics_us_ = now_us;
      // Cumulative sums: a failed export loses nothing but this point in time.
      if (Deliver(options_.metrics_url, metrics_.Json(options_, now_us), now_us)) {
        dirty_ = false;
      } else if (final) {
        ++dropped;
      }
    }
    return dropped;
  }

 private:
  bool Deliver(const std::string& url, const std::string& body, int64_t now_us) {
    auto sent = SendTelemetry("POST", url, headers_, body);
    if (sent) {
      backoff_.Succeeded();
      return true;
    }
    backoff_.Failed(now_us);
    if (!warned_) {
      warned_ = true;
      spdlog::warn("Monitoring: cannot send to the OTLP endpoint: {}", sent.error().message());
    }
    return false;
  }

  const OtelOptions options_;
  const MonitorIdentity identity_;
  TelemetryHeaders headers_;
  OtlpMetrics metrics_;
  bool dirty_ = false;
  std::vector<IterationSpan> spans_;
  int64_t last_traces_us_ = 0;
  int64_t last_metrics_us_;
  DeliveryBackoff backoff_;
  bool warned_ = false;
};

}  // namespace

bool OtelSelectedByEnvironment(EnvLookup env) {
  std::string disabled = env("OTEL_SDK_DISABLED").value_or("");
  std::transform(disabled.begin(), disabled.end(), disabled.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (disabled == "true") return false;
  for (const char* name : {"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                           "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"}) {
    if (auto value = env(name); value && !value->empty()) return true;
  }
  return false;
}

MetricTags ParseOtelList(std::string_view text, std::string_view variable) {
  MetricTags entries;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view entry = text.substr(start, comma - start);
    start = comma + 1;
    if (Trimmed(entry).empty()) continue;
    size_t equals = entry.find('=');
    std::string key = equals == std::string_view::npos ? "" : Trimmed(entry.substr(0, equals));
    std::optional<std::string> value = equals == std::string_view::npos
                                           ? std::nullopt
                                           : PercentDecode(Trimmed(entry.substr(equals + 1)));
    if (key.empty() || !value) {
      spdlog::warn("Monitoring: {}: skipping the malformed entry '{}' (want key=value)", variable,
                   Trimmed(entry));
      continue;
    }
    entries.emplace_back(std::move(key), std::move(*value));
  }
  return entries;
}

Result<OtelOptions> ReadOtelOptions(EnvLookup env, std::optional<bool> enable_tracing) {
  OtelOptions options;
  options.metrics_url = Endpoint(env, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "/v1/metrics");
  options.traces_url = Endpoint(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "/v1/traces");
  if (auto headers = env("OTEL_EXPORTER_OTLP_HEADERS")) {
    for (auto& [name, value] : ParseOtelList(*headers, "OTEL_EXPORTER_OTLP_HEADERS")) {
      options.headers.emplace_back(std::move(name), std::move(value));
    }
  }
  if (auto protocol = env("OTEL_EXPORTER_OTLP_PROTOCOL");
      protocol && !protocol->empty() && *protocol != "http/json") {
    spdlog::warn("Monitoring: OTEL_EXPORTER_OTLP_PROTOCOL={} is not supported; sending http/json",
                 *protocol);
  }
  MetricTags attributes;
  if (auto text = env("OTEL_RESOURCE_ATTRIBUTES")) {
    attributes = ParseOtelList(*text, "OTEL_RESOURCE_ATTRIBUTES");
  }
  std::string service = env("OTEL_SERVICE_NAME").value_or("");
  auto named = std::find_if(attributes.begin(), attributes.end(),
                            [](const auto& entry) { return entry.first == "service.name"; });
  if (service.empty()) service = named != attributes.end() ? named->second : "bizon";
  if (named != attributes.end()) attributes.erase(named);
  options.resource.emplace_back("service.name", service);
  options.resource.insert(options.resource.end(), attributes.begin(), attributes.end());
  options.metrics = env("OTEL_METRICS_EXPORTER").value_or("otlp") != "none";
  options.traces =
      env("OTEL_TRACES_EXPORTER").value_or("otlp") != "none" && enable_tracing.value_or(true);
  if (auto interval = env("OTEL_METRIC_EXPORT_INTERVAL"); interval && !interval->empty()) {
    try {
      options.export_interval_ms = std::max<int64_t>(100, std::stoll(*interval));
    } catch (const std::exception&) {
      spdlog::warn("Monitoring: OTEL_METRIC_EXPORT_INTERVAL={} is not a number of milliseconds",
                   *interval);
    }
  }
  return options;
}

std::string OtlpTracesJson(const std::vector<IterationSpan>& spans, const MonitorIdentity& identity,
                           const OtelOptions& options) {
  MetricTags base = identity.BaseTags();
  Value::List list;
  for (const IterationSpan& span : spans) {
    Value attributes = Attributes(base, {});
    attributes.AsList().push_back(IntAttribute("bizon.iteration", span.iteration));
    attributes.AsList().push_back(IntAttribute("bizon.records", span.records));
    Value::Map item;
    item.emplace_back("traceId", span.parent ? span.parent->trace_id : RandomHex(32));
    item.emplace_back("spanId", RandomHex(16));
    if (span.parent) item.emplace_back("parentSpanId", span.parent->parent_id);
    item.emplace_back("name", std::string(metric::kIterationSpan));
    item.emplace_back("kind", int64_t{1});  // SPAN_KIND_INTERNAL.
    item.emplace_back("startTimeUnixNano", Nanos(span.start_us));
    item.emplace_back("endTimeUnixNano", Nanos(std::max(span.start_us, span.end_us)));
    item.emplace_back("attributes", std::move(attributes));
    // STATUS_CODE_ERROR = 2, STATUS_CODE_OK = 1.
    item.emplace_back("status", Value(Value::Map{{"code", int64_t{span.error ? 2 : 1}}}));
    list.emplace_back(std::move(item));
  }
  Value::Map scope_spans{{"scope", Scope()}, {"spans", Value(std::move(list))}};
  Value::Map resource_spans{{"resource", Resource(options)},
                            {"scopeSpans", Value(Value::List{Value(std::move(scope_spans))})}};
  Value request(
      Value::Map{{"resourceSpans", Value(Value::List{Value(std::move(resource_spans))})}});
  return request.ToJson();
}

OtlpMetrics::OtlpMetrics(const MonitorIdentity& identity, int64_t start_us)
    : base_tags_(identity.BaseTags()), start_us_(start_us) {}

void OtlpMetrics::Add(const MonitorEvent& event) {
  auto found = std::find_if(series_.begin(), series_.end(), [&](const Series& series) {
    return series.name == event.name && series.tags == event.tags;
  });
  if (found == series_.end()) {
    series_.push_back({.name = event.name, .kind = event.kind, .tags = event.tags});
    found = series_.end() - 1;
  }
  switch (event.kind) {
    case MonitorEvent::Kind::kCount:
      found->count += static_cast<int64_t>(event.value);
      break;
    case MonitorEvent::Kind::kGauge:
      found->gauge = event.value;
      found->gauge_time_us = event.time_us;
      break;
    case MonitorEvent::Kind::kLatency:
      found->latency.Merge(event.latency);
      break;
    case MonitorEvent::Kind::kSpan:
      break;
  }
}

std::string OtlpMetrics::Json(const OtelOptions& options, int64_t now_us) const {
  // One Metric per name, with a data point per tag set, in order of first appearance.
  std::vector<std::string_view> names;
  for (const Series& series : series_) {
    if (std::find(names.begin(), names.end(), series.name) == names.end()) {
      names.push_back(series.name);
    }
  }
  Value::List metrics;
  for (std::string_view name : names) {
    Value::List points;
    MonitorEvent::Kind kind = MonitorEvent::Kind::kCount;
    for (const Series& series : series_) {
      if (series.name != name) continue;
      kind = series.kind;
      Value::Map point;
      point.emplace_back("attributes", Attributes(base_tags_, series.tags));
      if (kind != MonitorEvent::Kind::kGauge)
        point.emplace_back("startTimeUnixNano", Nanos(start_us_));
      point.emplace_back("timeUnixNano",
                         Nanos(kind == MonitorEvent::Kind::kGauge ? series.gauge_time_us : now_us));
      if (kind == MonitorEvent::Kind::kCount) {
        point.emplace_back("asInt", std::to_string(series.count));
      } else if (kind == MonitorEvent::Kind::kGauge) {
        point.emplace_back("asDouble", series.gauge);
      } else {
        point.emplace_back("count", std::to_string(series.latency.count));
        point.emplace_back("sum", series.latency.sum_ms);
        Value::List buckets;
        for (int64_t count : series.latency.bucket_counts)
          buckets.emplace_back(std::to_string(count));
        point.emplace_back("bucketCounts", Value(std::move(buckets)));
        Value::List bounds;
        for (double bound : LatencySummary::Bounds()) bounds.emplace_back(bound);
        point.emplace_back("explicitBounds", Value(std::move(bounds)));
        point.emplace_back("min", series.latency.min_ms);
        point.emplace_back("max", series.latency.max_ms);
      }
      points.emplace_back(std::move(point));
    }
    Value::Map data{{"dataPoints", Value(std::move(points))}};
    const char* field = "sum";
    if (kind == MonitorEvent::Kind::kCount) {
      data.emplace_back("aggregationTemporality", int64_t{2});  // CUMULATIVE.
      data.emplace_back("isMonotonic", true);
    } else if (kind == MonitorEvent::Kind::kGauge) {
      field = "gauge";
    } else {
      field = "histogram";
      data.emplace_back("aggregationTemporality", int64_t{2});
    }
    metrics.emplace_back(Value::Map{{"name", std::string(name)},
                                    {"unit", std::string(Unit(name))},
                                    {field, Value(std::move(data))}});
  }
  Value::Map scope_metrics{{"scope", Scope()}, {"metrics", Value(std::move(metrics))}};
  Value::Map resource_metrics{
      {"resource", Resource(options)},
      {"scopeMetrics", Value(Value::List{Value(std::move(scope_metrics))})}};
  Value request(
      Value::Map{{"resourceMetrics", Value(Value::List{Value(std::move(resource_metrics))})}});
  return request.ToJson();
}

std::unique_ptr<Exporter> MakeOtelExporter(const OtelOptions& options,
                                           const MonitorIdentity& identity) {
  return std::make_unique<OtelExporter>(options, identity);
}

}  // namespace bizon
