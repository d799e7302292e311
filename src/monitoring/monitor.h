// Monitoring: the one interface the engine reports through (metrics and iteration spans), and the
// machinery every real monitor shares.
//
// The engine calls CurrentMonitor() at a few points (consumer, stream runner, progress). By
// default that is a monitor that does nothing. RunPipeline installs the configured one
// (`monitoring.type: datadog | otel`, or the OTEL_EXPORTER_OTLP_* variables) for the length of
// the run with ScopedMonitor.
//
// A real monitor never slows or fails the pipeline: each call builds a small event and appends it
// to a bounded in-memory queue (a short mutex, never a wait for the network); a sender thread
// takes the events and hands them to an Exporter (DogStatsD datagrams, the Datadog trace intake,
// OTLP/HTTP). When the queue is full, or an exporter cannot deliver, events are dropped and
// counted; the count is logged when the run ends. Flush() at the end of the run gives the sender
// a bounded time to deliver what is left.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "bizon/record_batch.h"
#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

using MetricTags = std::vector<std::pair<std::string, std::string>>;

/// What every metric and span carries: the original's base tags, then monitoring.config.tags.
struct MonitorIdentity {
  std::string pipeline_name;
  std::string source_name;
  std::string stream_name;
  std::string destination_name;
  /// destination.alias (the original's system type of the destination: bigquery for the three
  /// BigQuery destinations), else the destination's name: the type of data-streams produce
  /// checkpoints.
  std::string destination_alias;
  /// The destination id used when a record names none (destination.config.destination_id, else
  /// the destination's name).
  std::string default_destination_id;
  MetricTags extra_tags;

  /// pipeline_name, pipeline_stream, pipeline_source, pipeline_destination, then the extras.
  MetricTags BaseTags() const;
};

/// A W3C trace context (`traceparent: 00-<trace id>-<parent id>-<flags>`).
struct TraceContext {
  std::string trace_id;   // 32 lowercase hex digits, not all zero.
  std::string parent_id;  // 16 lowercase hex digits, not all zero.
  uint8_t flags = 0;
};

/// Parses a traceparent header value; nullopt for anything the W3C format does not allow.
std::optional<TraceContext> ParseTraceparent(std::string_view text);

/// The trace context of the first of a batch's first records whose Kafka-shaped payload carries
/// a valid `traceparent` header (`"headers":{..."traceparent":"00-..."...}`).
std::optional<TraceContext> FindTraceContext(const RecordBatch& records);

/// One iteration of the pipeline: fetched at `start_us`, handled by the consumer at `end_us`.
struct IterationSpan {
  int64_t iteration = 0;
  int64_t start_us = 0;
  int64_t end_us = 0;
  int64_t records = 0;
  bool error = false;
  std::optional<TraceContext> parent;
};

/// Source-to-destination latency of a batch: now minus each record's source timestamp, in
/// milliseconds. Bucket counts are exact over every record; `samples` is an evenly spaced subset
/// (at most kMaxSamples) for sinks that take raw values, with `sample_rate` = samples / count.
struct LatencySummary {
  static constexpr size_t kMaxSamples = 64;
  /// Upper bounds (ms) of the histogram buckets; one more bucket counts the rest.
  static const std::vector<double>& Bounds();

  int64_t count = 0;
  double sum_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  std::vector<int64_t> bucket_counts;  // Bounds().size() + 1 entries.
  std::vector<double> samples;
  double sample_rate = 1;

  /// Timestamps of 0 (unknown) are left out; one in the future counts as 0 ms.
  static LatencySummary Of(const std::vector<int64_t>& timestamps_us, int64_t now_us);
  void Merge(const LatencySummary& other);
};

/// The metrics, named as the original names them (bizon_pipeline.*).
namespace metric {
inline constexpr std::string_view kStatus = "bizon_pipeline.status";
inline constexpr std::string_view kRecordsSynced = "bizon_pipeline.records_synced";
inline constexpr std::string_view kLargeRecords = "bizon_pipeline.large_records";
inline constexpr std::string_view kRecordsProcessed = "bizon_pipeline.records_processed";
inline constexpr std::string_view kCompletion = "bizon_pipeline.completion_percent";
inline constexpr std::string_view kEta = "bizon_pipeline.eta_seconds";
inline constexpr std::string_view kLatency = "bizon_pipeline.source_latency_ms";
inline constexpr std::string_view kIterationSpan = "bizon.stream.iteration";
}  // namespace metric

class Monitor {
 public:
  virtual ~Monitor() = default;

  /// Whether anything is sent (callers skip collecting what would be thrown away).
  virtual bool enabled() const { return false; }
  /// Whether iteration spans are sent (callers skip looking for trace context otherwise).
  virtual bool tracing() const { return false; }

  /// bizon_pipeline.status +1, tagged pipeline_status:<status>.
  virtual void PipelineStatus(std::string_view /*status*/) {}
  /// Records read from the source (before transforms).
  virtual void RecordsProcessed(int64_t /*rows*/) {}
  /// Records durably written to one destination id (empty: the pipeline's default).
  virtual void RecordsSynced(std::string_view /*destination_id*/, int64_t /*rows*/) {}
  /// Records a destination had to treat as oversized.
  virtual void LargeRecords(int64_t /*rows*/, std::string_view /*destination_id*/) {}
  /// Completion and ETA, when the source announced its total.
  virtual void Progress(int64_t /*done*/, std::optional<int64_t> /*total*/,
                        double /*records_per_second*/) {}
  /// Latency of records that were just made durable: `now_us` minus each source timestamp.
  virtual void Latency(const std::vector<int64_t>& /*timestamps_us*/, int64_t /*now_us*/) {}
  virtual void Iteration(const IterationSpan& /*span*/) {}
  /// Whether data-streams checkpoints are set (DD_DATA_STREAMS_ENABLED with Datadog).
  virtual bool data_streams() const { return false; }
  /// A consume checkpoint for each record of a batch as the source gave it.
  virtual void ConsumeCheckpoints(const RecordBatch& /*records*/) {}
  /// The produce checkpoints of the records consumed since the last durable point.
  virtual void ProduceCheckpoints() {}
  /// Delivers what is queued, for at most `budget`; later calls do nothing.
  virtual void Flush(std::chrono::milliseconds /*budget*/) {}
};

/// The monitor installed for this run (a no-op one when none is).
Monitor& CurrentMonitor();

/// Installs `monitor` as CurrentMonitor() for its lifetime; flushes it on destruction.
class ScopedMonitor {
 public:
  explicit ScopedMonitor(std::unique_ptr<Monitor> monitor);
  ~ScopedMonitor();
  ScopedMonitor(const ScopedMonitor&) = delete;
  ScopedMonitor& operator=(const ScopedMonitor&) = delete;
  Monitor& get() { return *monitor_; }

 private:
  std::unique_ptr<Monitor> monitor_;
  Monitor* previous_;
};

/// What the consumer handed to the destination since its last durable point: rows per
/// destination id and their source timestamps. Report() at the durable point emits
/// records_synced, the latency and the data-streams produce checkpoints; nothing is collected
/// while no monitor is enabled.
class DurableTally {
 public:
  void Add(const RecordBatch& records);
  void Report(int64_t now_us);
  void Clear();

 private:
  std::vector<std::pair<std::string, int64_t>> rows_;
  size_t last_ = 0;  // Index in rows_ of the id counted last.
  std::vector<int64_t> timestamps_us_;
};

/// One iteration as the consumer (or the stream runner) handles it: counts its records as
/// processed (and sets their data-streams consume checkpoints) on construction and sends its
/// span on destruction, marked as an error when `failed` is true by then. The trace context and
/// the checkpoints are read from the records at construction, before any transform changes them.
class ScopedIterationSpan {
 public:
  ScopedIterationSpan(int64_t iteration, int64_t start_us, const RecordBatch& records,
                      const bool& failed);
  ~ScopedIterationSpan();
  ScopedIterationSpan(const ScopedIterationSpan&) = delete;
  ScopedIterationSpan& operator=(const ScopedIterationSpan&) = delete;

 private:
  IterationSpan span_;
  const bool& failed_;
};

/// One event on its way to an exporter.
struct MonitorEvent {
  enum class Kind { kCount, kGauge, kLatency, kSpan };
  Kind kind = Kind::kCount;
  std::string_view name;  // One of metric::*.
  double value = 0;
  MetricTags tags;  // Beyond the base tags.
  LatencySummary latency;
  IterationSpan span;
  int64_t time_us = 0;
};

/// Delivers events; runs on the sender thread only.
class Exporter {
 public:
  virtual ~Exporter() = default;
  /// Takes a batch of events. Returns how many it could not deliver (dropped).
  virtual int64_t Export(std::vector<MonitorEvent>& events) = 0;
  /// Called about every 200 ms and once more at the end (`final`): periodic work such as the
  /// OTLP metric export. Returns how many events it dropped.
  virtual int64_t Tick(int64_t now_us, bool final) = 0;
};

/// The shared half of every real monitor: events into a bounded queue, a sender thread, the
/// drop counts.
class QueuedMonitor : public Monitor {
 public:
  QueuedMonitor(const MonitorIdentity& identity, std::unique_ptr<Exporter> exporter, bool tracing,
                size_t capacity = 20'000);
  ~QueuedMonitor() override;

  bool enabled() const override { return true; }
  bool tracing() const override { return tracing_; }
  void PipelineStatus(std::string_view status) override;
  void RecordsProcessed(int64_t rows) override;
  void RecordsSynced(std::string_view destination_id, int64_t rows) override;
  void LargeRecords(int64_t rows, std::string_view destination_id) override;
  void Progress(int64_t done, std::optional<int64_t> total, double records_per_second) override;
  void Latency(const std::vector<int64_t>& timestamps_us, int64_t now_us) override;
  void Iteration(const IterationSpan& span) override;
  void Flush(std::chrono::milliseconds budget) override;

  /// Events dropped so far: queue full, or not delivered by the exporter.
  int64_t dropped() const;

 private:
  void Push(MonitorEvent event);
  void SenderLoop();

  const MonitorIdentity identity_;
  const bool tracing_;
  const size_t capacity_;
  std::unique_ptr<Exporter> exporter_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<MonitorEvent> queue_;
  bool stopping_ = false;
  bool flushed_ = false;
  /// Set by the sender thread once it runs: the constructor waits for it, so that a fork() right
  /// after (the process runner's) never copies a thread still being set up by the runtime.
  bool started_ = false;
  std::condition_variable started_cv_;
  int64_t dropped_ = 0;
  std::thread sender_;
};

/// How the environment is read (tests pass their own).
using EnvLookup = std::optional<std::string> (*)(const char* name);
std::optional<std::string> ProcessEnv(const char* name);

/// The monitor the config asks for: `monitoring` (the config's block, may be null), else OTLP
/// when OTEL_EXPORTER_OTLP_ENDPOINT (or its traces/metrics variants) is set, else none (null).
Result<std::unique_ptr<Monitor>> MakeMonitor(const Value* monitoring,
                                             const MonitorIdentity& identity,
                                             EnvLookup env = ProcessEnv);

}  // namespace bizon
