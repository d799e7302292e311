#include "monitoring/monitor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "bizon/clock.h"
#include "common/fork_guard.h"
#include "monitoring/datadog.h"
#include "monitoring/otel.h"

namespace bizon {
namespace {

Monitor& NoMonitor() {
  static Monitor none;
  return none;
}

Monitor* current_monitor = nullptr;

bool IsLowerHex(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool AllZero(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c == '0'; });
}

int HexDigit(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

/// How many records of a batch are looked at for a traceparent header.
constexpr size_t kTraceContextScan = 64;

}  // namespace

MetricTags MonitorIdentity::BaseTags() const {
  MetricTags tags = {{"pipeline_name", pipeline_name},
                     {"pipeline_stream", stream_name},
                     {"pipeline_source", source_name},
                     {"pipeline_destination", destination_name}};
  tags.insert(tags.end(), extra_tags.begin(), extra_tags.end());
  return tags;
}

std::optional<TraceContext> ParseTraceparent(std::string_view text) {
  // version "-" trace-id "-" parent-id "-" trace-flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55 chars.
  // Version 00 has exactly that; later versions may append "-..." fields; ff is invalid.
  if (text.size() < 55 || text[2] != '-' || text[35] != '-' || text[52] != '-') return std::nullopt;
  std::string_view version = text.substr(0, 2);
  std::string_view trace_id = text.substr(3, 32);
  std::string_view parent_id = text.substr(36, 16);
  std::string_view flags = text.substr(53, 2);
  if (!IsLowerHex(version) || !IsLowerHex(trace_id) || !IsLowerHex(parent_id) ||
      !IsLowerHex(flags) || version == "ff" || AllZero(trace_id) || AllZero(parent_id)) {
    return std::nullopt;
  }
  if (version == "00" ? text.size() != 55 : (text.size() > 55 && text[55] != '-')) {
    return std::nullopt;
  }
  return TraceContext{.trace_id = std::string(trace_id),
                      .parent_id = std::string(parent_id),
                      .flags = static_cast<uint8_t>(HexDigit(flags[0]) * 16 + HexDigit(flags[1]))};
}

std::optional<TraceContext> FindTraceContext(const RecordBatch& records) {
  constexpr std::string_view kHeaders = R"("headers":{)";
  constexpr std::string_view kName = R"("traceparent":")";
  size_t scan = std::min(records.size(), kTraceContextScan);
  for (size_t i = 0; i < scan; ++i) {
    std::string_view payload = records.payload(i);
    size_t headers = payload.find(kHeaders);
    if (headers == std::string_view::npos) continue;
    // The headers object holds strings and nulls only, so its end is the first '}' that is not
    // inside a string; a traceparent value never contains one.
    size_t end = headers + kHeaders.size();
    bool in_string = false;
    for (; end < payload.size(); ++end) {
      char c = payload[end];
      if (in_string) {
        if (c == '\\') {
          ++end;
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '}') {
        break;
      }
    }
    std::string_view object = payload.substr(headers, end - headers);
    size_t name = object.find(kName);
    if (name == std::string_view::npos) continue;
    std::string_view rest = object.substr(name + kName.size());
    size_t quote = rest.find('"');
    if (quote == std::string_view::npos) continue;
    if (auto context = ParseTraceparent(rest.substr(0, quote))) return context;
  }
  return std::nullopt;
}

const std::vector<double>& LatencySummary::Bounds() {
  static const std::vector<double> kBounds = {1,     5,     10,     25,     50,      100,
                                              250,   500,   1000,   2500,   5000,    10000,
                                              30000, 60000, 300000, 900000, 3600000, 86400000};
  return kBounds;
}

LatencySummary LatencySummary::Of(const std::vector<int64_t>& timestamps_us, int64_t now_us) {
  const std::vector<double>& bounds = Bounds();
  LatencySummary summary;
  summary.bucket_counts.assign(bounds.size() + 1, 0);
  size_t with_time = 0;
  for (int64_t timestamp : timestamps_us) with_time += timestamp != 0;
  if (with_time == 0) return summary;
  size_t stride = std::max<size_t>(1, (with_time + kMaxSamples - 1) / kMaxSamples);
  size_t seen = 0;
  for (int64_t timestamp : timestamps_us) {
    if (timestamp == 0) continue;
    double ms = static_cast<double>(std::max<int64_t>(0, now_us - timestamp)) / 1000.0;
    auto bucket = std::lower_bound(bounds.begin(), bounds.end(), ms) - bounds.begin();
    ++summary.bucket_counts[static_cast<size_t>(bucket)];
    if (summary.count == 0 || ms < summary.min_ms) summary.min_ms = ms;
    if (summary.count == 0 || ms > summary.max_ms) summary.max_ms = ms;
    summary.sum_ms += ms;
    ++summary.count;
    if (seen++ % stride == 0) summary.samples.push_back(ms);
  }
  summary.sample_rate =
      static_cast<double>(summary.samples.size()) / static_cast<double>(summary.count);
  return summary;
}

void LatencySummary::Merge(const LatencySummary& other) {
  if (other.count == 0) return;
  if (bucket_counts.empty()) bucket_counts.assign(Bounds().size() + 1, 0);
  for (size_t i = 0; i < bucket_counts.size() && i < other.bucket_counts.size(); ++i) {
    bucket_counts[i] += other.bucket_counts[i];
  }
  min_ms = count == 0 ? other.min_ms : std::min(min_ms, other.min_ms);
  max_ms = count == 0 ? other.max_ms : std::max(max_ms, other.max_ms);
  sum_ms += other.sum_ms;
  count += other.count;
}

void DurableTally::Add(const RecordBatch& records) {
  if (records.empty() || !CurrentMonitor().enabled()) return;
  size_t first = timestamps_us_.size();
  timestamps_us_.resize(first + records.size());
  for (size_t i = 0; i < records.size(); ++i) timestamps_us_[first + i] = records.timestamp_us(i);
  if (!records.has_destination_ids()) {  // Every record goes to the default destination.
    auto found = std::find_if(rows_.begin(), rows_.end(),
                              [](const auto& entry) { return entry.first.empty(); });
    if (found == rows_.end()) found = rows_.emplace(rows_.end(), std::string(), 0);
    found->second += static_cast<int64_t>(records.size());
    return;
  }
  // Per destination id, in order of first appearance (a handful of ids at most; runs of one id
  // are the common case, so the last one used is tried first).
  for (size_t i = 0; i < records.size(); ++i) {
    std::string_view id = records.destination_id(i);
    if (last_ >= rows_.size() || rows_[last_].first != id) {
      auto found = std::find_if(rows_.begin(), rows_.end(),
                                [&](const auto& entry) { return entry.first == id; });
      if (found == rows_.end()) found = rows_.emplace(rows_.end(), std::string(id), 0);
      last_ = static_cast<size_t>(found - rows_.begin());
    }
    ++rows_[last_].second;
  }
}

void DurableTally::Report(int64_t now_us) {
  Monitor& monitor = CurrentMonitor();
  for (const auto& [id, rows] : rows_) monitor.RecordsSynced(id, rows);
  if (!timestamps_us_.empty()) monitor.Latency(timestamps_us_, now_us);
  monitor.ProduceCheckpoints();
  Clear();
}

void DurableTally::Clear() {
  rows_.clear();
  timestamps_us_.clear();
}

ScopedIterationSpan::ScopedIterationSpan(int64_t iteration, int64_t start_us,
                                         const RecordBatch& records, const bool& failed)
    : span_{.iteration = iteration,
            .start_us = start_us,
            .records = static_cast<int64_t>(records.size())},
      failed_(failed) {
  Monitor& monitor = CurrentMonitor();
  if (!monitor.enabled()) return;
  monitor.RecordsProcessed(span_.records);
  if (monitor.tracing()) span_.parent = FindTraceContext(records);
  if (monitor.data_streams()) monitor.ConsumeCheckpoints(records);
}

ScopedIterationSpan::~ScopedIterationSpan() {
  Monitor& monitor = CurrentMonitor();
  if (!monitor.tracing()) return;
  span_.end_us = NowMicros();
  span_.error = failed_;
  monitor.Iteration(span_);
}

Monitor& CurrentMonitor() { return current_monitor != nullptr ? *current_monitor : NoMonitor(); }

ScopedMonitor::ScopedMonitor(std::unique_ptr<Monitor> monitor)
    : monitor_(monitor ? std::move(monitor) : std::make_unique<Monitor>()),
      previous_(current_monitor) {
  current_monitor = monitor_.get();
}

ScopedMonitor::~ScopedMonitor() {
  monitor_->Flush(std::chrono::milliseconds(2000));
  current_monitor = previous_;
}

QueuedMonitor::QueuedMonitor(const MonitorIdentity& identity, std::unique_ptr<Exporter> exporter,
                             bool tracing, size_t capacity)
    : identity_(identity),
      tracing_(tracing),
      capacity_(capacity),
      exporter_(std::move(exporter)),
      sender_((SenderForkGuard(), [this] { SenderLoop(); })) {
  std::unique_lock lock(mutex_);
  started_cv_.wait(lock, [this] { return started_; });
}

QueuedMonitor::~QueuedMonitor() { QueuedMonitor::Flush(std::chrono::milliseconds(0)); }

void QueuedMonitor::Push(MonitorEvent event) {
  // A forked child (the process runner's producer) has no sender thread, and its copy of the
  // queue's lock may have been taken by the parent's sender at fork(): it reports nothing.
  if (InForkedChild()) return;
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || queue_.size() >= capacity_) {
      ++dropped_;
      return;
    }
    queue_.push_back(std::move(event));
  }
  wake_.notify_one();
}

void QueuedMonitor::PipelineStatus(std::string_view status) {
  Push({.kind = MonitorEvent::Kind::kCount,
        .name = metric::kStatus,
        .value = 1,
        .tags = {{"pipeline_status", std::string(status)}},
        .time_us = NowMicros()});
}

void QueuedMonitor::RecordsProcessed(int64_t rows) {
  Push({.kind = MonitorEvent::Kind::kCount,
        .name = metric::kRecordsProcessed,
        .value = static_cast<double>(rows),
        .time_us = NowMicros()});
}

void QueuedMonitor::RecordsSynced(std::string_view destination_id, int64_t rows) {
  Push({.kind = MonitorEvent::Kind::kCount,
        .name = metric::kRecordsSynced,
        .value = static_cast<double>(rows),
        .tags = {{"destination_id",
                  std::string(destination_id.empty() ? identity_.default_destination_id
                                                     : destination_id)}},
        .time_us = NowMicros()});
}

void QueuedMonitor::LargeRecords(int64_t rows, std::string_view destination_id) {
  Push({.kind = MonitorEvent::Kind::kCount,
        .name = metric::kLargeRecords,
        .value = static_cast<double>(rows),
        .tags = {{"destination_id",
                  std::string(destination_id.empty() ? identity_.default_destination_id
                                                     : destination_id)}},
        .time_us = NowMicros()});
}

void QueuedMonitor::Progress(int64_t done, std::optional<int64_t> total,
                             double records_per_second) {
  if (!total || *total <= 0) return;
  int64_t now = NowMicros();
  double percent = std::min(100.0, 100.0 * static_cast<double>(done) / static_cast<double>(*total));
  Push({.kind = MonitorEvent::Kind::kGauge,
        .name = metric::kCompletion,
        .value = percent,
        .time_us = now});
  int64_t left = std::max<int64_t>(0, *total - done);
  if (left == 0 || records_per_second > 0) {
    Push({.kind = MonitorEvent::Kind::kGauge,
          .name = metric::kEta,
          .value = left == 0 ? 0 : static_cast<double>(left) / records_per_second,
          .time_us = now});
  }
}

void QueuedMonitor::Latency(const std::vector<int64_t>& timestamps_us, int64_t now_us) {
  LatencySummary summary = LatencySummary::Of(timestamps_us, now_us);
  if (summary.count == 0) return;
  Push({.kind = MonitorEvent::Kind::kLatency,
        .name = metric::kLatency,
        .latency = std::move(summary),
        .time_us = now_us});
}

void QueuedMonitor::Iteration(const IterationSpan& span) {
  if (!tracing_) return;
  Push({.kind = MonitorEvent::Kind::kSpan,
        .name = metric::kIterationSpan,
        .span = span,
        .time_us = span.end_us});
}

void QueuedMonitor::SenderLoop() {
  std::vector<MonitorEvent> batch;
  {
    std::lock_guard lock(mutex_);
    started_ = true;
  }
  started_cv_.notify_all();
  while (true) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::milliseconds(200),
                     [this] { return stopping_ || !queue_.empty(); });
    }
    // Held for everything but the wait: no fork() while this thread is inside libcurl, a socket
    // call, a log sink or the allocator (an allocator lock copied held into the child stays
    // held there: ASan's, at least, is not reset by fork()).
    std::lock_guard fork_guard(SenderForkGuard());
    bool stopping;
    {
      std::lock_guard lock(mutex_);
      stopping = stopping_;
      batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
      queue_.clear();
    }
    int64_t lost = batch.empty() ? 0 : exporter_->Export(batch);
    batch.clear();
    lost += exporter_->Tick(NowMicros(), stopping);
    if (lost > 0) {
      std::lock_guard lock(mutex_);
      dropped_ += lost;
    }
    if (stopping) return;
  }
}

void QueuedMonitor::Flush(std::chrono::milliseconds budget) {
  {
    std::lock_guard lock(mutex_);
    if (flushed_) return;
    flushed_ = true;
    stopping_ = true;
  }
  wake_.notify_one();
  // The exporters bound each delivery by its own timeouts (well under the budget), so joining is
  // bounded too; the budget only decides whether the drop count is still worth a log line.
  (void)budget;
  if (sender_.joinable()) sender_.join();
  if (int64_t lost = dropped(); lost > 0) {
    spdlog::warn("Monitoring: {} metric or span events could not be delivered and were dropped",
                 lost);
  }
}

int64_t QueuedMonitor::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

std::optional<std::string> ProcessEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

Result<std::unique_ptr<Monitor>> MakeMonitor(const Value* monitoring,
                                             const MonitorIdentity& identity, EnvLookup env) {
  std::string type =
      monitoring != nullptr && monitoring->is_map() ? monitoring->GetString("type") : std::string();
  const Value* config = monitoring != nullptr ? monitoring->Find("config") : nullptr;
  MonitorIdentity tagged = identity;
  if (config != nullptr && config->is_map()) {
    if (const Value* tags = config->Find("tags"); tags != nullptr && tags->is_map()) {
      for (const auto& [key, value] : tags->AsMap()) {
        tagged.extra_tags.emplace_back(key, value.is_string() ? value.AsString() : value.ToJson());
      }
    }
  }
  if (type == "datadog") {
    BIZON_ASSIGN_OR_RETURN(DatadogOptions options,
                           ReadDatadogOptions(config != nullptr ? *config : Value(), env));
    return MakeDatadogMonitor(options, tagged);
  }
  if (type.empty() && !OtelSelectedByEnvironment(env)) return std::unique_ptr<Monitor>();
  std::optional<bool> enable_tracing;
  if (config != nullptr && config->is_map()) {
    if (const Value* flag = config->Find("enable_tracing"); flag != nullptr && flag->is_bool()) {
      enable_tracing = flag->AsBool();
    }
  }
  BIZON_ASSIGN_OR_RETURN(OtelOptions options, ReadOtelOptions(env, enable_tracing));
  if (!options.metrics && !options.traces) return std::unique_ptr<Monitor>();
  bool tracing = options.traces;
  spdlog::info("Monitoring: OTLP/HTTP{}{}",
               options.metrics ? ", metrics to " + options.metrics_url : "",
               options.traces ? ", traces to " + options.traces_url : "");
  return std::unique_ptr<Monitor>(
      std::make_unique<QueuedMonitor>(tagged, MakeOtelExporter(options, tagged), tracing));
}

}  // namespace bizon
