#include "monitoring/monitor.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "monitoring/datadog.h"
#include "monitoring/otel.h"

namespace bizon {
namespace {

std::map<std::string, std::string>& FakeEnv() {
  static std::map<std::string, std::string> env;
  return env;
}

std::optional<std::string> LookupFakeEnv(const char* name) {
  auto found = FakeEnv().find(name);
  if (found == FakeEnv().end()) return std::nullopt;
  return found->second;
}

Value Config(std::string_view json) { return *Value::FromJson(json); }

MonitorIdentity Identity() {
  return {.pipeline_name = "orders",
          .source_name = "dummy",
          .stream_name = "creatures",
          .destination_name = "logger",
          .default_destination_id = "out",
          .extra_tags = {{"team", "data"}}};
}

TEST(MonitorDatadogTest, HostComesFromTheNamedVariableThenTheConfiguredHost) {
  FakeEnv() = {{"DD_AGENT_HOST", "10.1.2.3"}};
  auto from_env = ReadDatadogOptions(
      Config(R"({"datadog_host_env_var":"DD_AGENT_HOST","datadog_agent_host":"h"})"),
      LookupFakeEnv);
  ASSERT_TRUE(from_env);
  EXPECT_EQ(from_env->statsd_host, "10.1.2.3");
  EXPECT_EQ(from_env->statsd_port, 8125);
  EXPECT_EQ(from_env->trace_url, "http://10.1.2.3:8126");

  // The original's bug: with no variable named, the configured host was dropped.
  auto configured = ReadDatadogOptions(
      Config(R"({"datadog_agent_host":"agent.local","datadog_agent_port":9125})"), LookupFakeEnv);
  ASSERT_TRUE(configured);
  EXPECT_EQ(configured->statsd_host, "agent.local");
  EXPECT_EQ(configured->statsd_port, 9125);
  EXPECT_FALSE(configured->tracing);

  FakeEnv().clear();
  auto unset = ReadDatadogOptions(
      Config(R"({"datadog_host_env_var":"DD_AGENT_HOST","datadog_agent_host":"fallback"})"),
      LookupFakeEnv);
  ASSERT_TRUE(unset);
  EXPECT_EQ(unset->statsd_host, "fallback");
  auto neither =
      ReadDatadogOptions(Config(R"({"datadog_host_env_var":"DD_AGENT_HOST"})"), LookupFakeEnv);
  ASSERT_TRUE(neither);
  EXPECT_EQ(neither->statsd_host, "localhost");
}

TEST(MonitorDatadogTest, UnixSocketHostAndTraceAgentVariables) {
  FakeEnv() = {{"DD_TRACE_AGENT_URL", "http://127.0.0.1:9999/"}, {"DD_SERVICE", "etl"}};
  auto options = ReadDatadogOptions(
      Config(R"({"datadog_agent_host":"unix:///run/dsd.socket","enable_tracing":true})"),
      LookupFakeEnv);
  ASSERT_TRUE(options);
  EXPECT_EQ(options->socket_path, "/run/dsd.socket");
  EXPECT_EQ(options->Target(), "unix:///run/dsd.socket");
  EXPECT_TRUE(options->tracing);
  EXPECT_EQ(options->trace_url, "http://127.0.0.1:9999");
  EXPECT_EQ(options->service, "etl");
  auto bad_port = ReadDatadogOptions(Config(R"({"datadog_agent_host":"h","datadog_agent_port":0})"),
                                     LookupFakeEnv);
  EXPECT_FALSE(bad_port);
}

TEST(MonitorDatadogTest, DataStreamsOnlyWhenTheVariableIsExactlyTrue) {
  for (auto [value, expected] :
       {std::pair<const char*, bool>{"true", true}, {"True", false}, {"1", false}, {"", false}}) {
    FakeEnv() = {{"DD_DATA_STREAMS_ENABLED", value}};
    auto options = ReadDatadogOptions(Config(R"({"datadog_agent_host":"h"})"), LookupFakeEnv);
    ASSERT_TRUE(options);
    EXPECT_EQ(options->data_streams, expected) << value;
  }
  FakeEnv().clear();
  auto unset = ReadDatadogOptions(Config(R"({"datadog_agent_host":"h"})"), LookupFakeEnv);
  ASSERT_TRUE(unset);
  EXPECT_FALSE(unset->data_streams);
}

TEST(MonitorDatadogTest, StatsdLinesCarryTheOriginalNamesAndTags) {
  MetricTags base = Identity().BaseTags();
  MonitorEvent count{.kind = MonitorEvent::Kind::kCount,
                     .name = metric::kRecordsSynced,
                     .value = 1500,
                     .tags = {{"destination_id", "a|b,c#d"}}};
  EXPECT_EQ(StatsdLine(count, base),
            "bizon_pipeline.records_synced:1500|c|#pipeline_name:orders,pipeline_stream:creatures,"
            "pipeline_source:dummy,pipeline_destination:logger,team:data,destination_id:a_b_c_d");
  MonitorEvent gauge{
      .kind = MonitorEvent::Kind::kGauge, .name = metric::kCompletion, .value = 12.5};
  EXPECT_TRUE(StatsdLine(gauge, {}) == "bizon_pipeline.completion_percent:12.5|g");
  MonitorEvent latency{.kind = MonitorEvent::Kind::kLatency, .name = metric::kLatency};
  latency.latency.samples = {1.5, 20};
  latency.latency.sample_rate = 0.25;
  EXPECT_EQ(StatsdLine(latency, {{"k:ey", "v:alue"}}),
            "bizon_pipeline.source_latency_ms:1.5:20|d|@0.25|#k_ey:v:alue");
}

TEST(MonitorDatadogTest, DatagramsStayWithinTheLimit) {
  std::vector<std::string> lines(10, std::string(100, 'x'));
  auto datagrams = PackDatagrams(lines, 250);
  ASSERT_EQ(datagrams.size(), 5u);
  for (const std::string& datagram : datagrams) {
    EXPECT_LE(datagram.size(), 250u);
    EXPECT_EQ(datagram, std::string(100, 'x') + "\n" + std::string(100, 'x'));
  }
  EXPECT_EQ(PackDatagrams({std::string(300, 'y')}, 250).size(), 1u);
}

TEST(MonitorTraceContextTest, ParsesW3cTraceparent) {
  auto context = ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(context);
  EXPECT_EQ(context->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(context->parent_id, "00f067aa0ba902b7");
  EXPECT_EQ(context->flags, 1);
  for (std::string_view bad : {
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",    // Zero trace id.
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",    // Zero parent id.
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",    // Upper case.
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // Forbidden version.
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  // Version 00 + more.
           "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",     // Short.
       }) {
    EXPECT_FALSE(ParseTraceparent(bad)) << bad;
  }
  EXPECT_TRUE(ParseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x"));
}

TEST(MonitorTraceContextTest, FindsTheHeaderInKafkaShapedRecords) {
  RecordBatch records;
  records.Add("a", R"({"topic":"t","value":{"traceparent":"not a header"}})", 1);
  records.Add("b",
              R"({"topic":"t","headers":{"x":"}\"","other":null},"value":{"traceparent":)"
              R"("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})",
              1);
  EXPECT_FALSE(FindTraceContext(records));
  records.Add("c",
              R"({"topic":"t","headers":{"x":"1","traceparent":)"
              R"("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},"value":{}})",
              1);
  auto context = FindTraceContext(records);
  ASSERT_TRUE(context);
  EXPECT_EQ(context->parent_id, "00f067aa0ba902b7");
}

TEST(MonitorLatencyTest, CountsEveryRecordAndSamplesAFew) {
  std::vector<int64_t> timestamps;
  int64_t now = 10'000'000'000;
  for (int i = 0; i < 1000; ++i) timestamps.push_back(now - (i < 500 ? 3'000 : 200'000));
  timestamps.push_back(0);            // Unknown: left out.
  timestamps.push_back(now + 5'000);  // In the future: 0 ms.
  LatencySummary summary = LatencySummary::Of(timestamps, now);
  EXPECT_EQ(summary.count, 1001);
  EXPECT_EQ(summary.min_ms, 0);
  EXPECT_EQ(summary.max_ms, 200);
  EXPECT_DOUBLE_EQ(summary.sum_ms, 500 * 3.0 + 500 * 200.0);
  ASSERT_EQ(summary.bucket_counts.size(), LatencySummary::Bounds().size() + 1);
  EXPECT_EQ(summary.bucket_counts[0], 1);    // <= 1 ms.
  EXPECT_EQ(summary.bucket_counts[1], 500);  // <= 5 ms.
  EXPECT_EQ(summary.bucket_counts[6], 500);  // <= 250 ms.
  EXPECT_LE(summary.samples.size(), LatencySummary::kMaxSamples);
  EXPECT_GE(summary.samples.size(), LatencySummary::kMaxSamples / 2);
  EXPECT_DOUBLE_EQ(summary.sample_rate, static_cast<double>(summary.samples.size()) / 1001);
}

/// Records what it is given; blocks in Export() while `hold` is set.
class RecordingExporter final : public Exporter {
 public:
  explicit RecordingExporter(std::atomic<bool>* hold = nullptr) : hold_(hold) {}
  int64_t Export(std::vector<MonitorEvent>& events) override {
    exporting = true;
    while (hold_ != nullptr && hold_->load()) usleep(1000);
    for (const MonitorEvent& event : events) seen.push_back(event);
    return 0;
  }
  int64_t Tick(int64_t, bool final) override {
    finals += final ? 1 : 0;
    return 0;
  }
  static inline std::vector<MonitorEvent> seen;
  static inline int finals = 0;
  static inline std::atomic<bool> exporting{false};

 private:
  std::atomic<bool>* hold_;
};

TEST(MonitorQueueTest, DeliversEventsAndFlushesOnce) {
  RecordingExporter::seen.clear();
  RecordingExporter::finals = 0;
  QueuedMonitor monitor(Identity(), std::make_unique<RecordingExporter>(), /*tracing=*/true);
  ASSERT_TRUE(monitor.enabled());
  monitor.PipelineStatus("running");
  monitor.RecordsSynced("", 7);
  monitor.RecordsSynced("other", 3);
  monitor.Progress(50, 200, 10);
  monitor.Progress(50, std::nullopt, 10);  // No total: no completion, no ETA.
  monitor.Iteration({.iteration = 4, .start_us = 1, .end_us = 2, .records = 7});
  monitor.Flush(std::chrono::milliseconds(100));
  monitor.Flush(std::chrono::milliseconds(100));
  const auto& seen = RecordingExporter::seen;
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen[0].name, metric::kStatus);
  EXPECT_EQ(seen[0].tags, (MetricTags{{"pipeline_status", "running"}}));
  EXPECT_EQ(seen[1].tags, (MetricTags{{"destination_id", "out"}}));
  EXPECT_EQ(seen[1].value, 7);
  EXPECT_EQ(seen[2].tags, (MetricTags{{"destination_id", "other"}}));
  EXPECT_EQ(seen[3].name, metric::kCompletion);
  EXPECT_EQ(seen[3].value, 25);
  EXPECT_EQ(seen[4].name, metric::kEta);
  EXPECT_EQ(seen[4].value, 15);
  EXPECT_EQ(seen[5].kind, MonitorEvent::Kind::kSpan);
  EXPECT_EQ(RecordingExporter::finals, 1);
  EXPECT_EQ(monitor.dropped(), 0);
}

TEST(MonitorQueueTest, AStuckSinkDropsAndCountsInsteadOfBlocking) {
  RecordingExporter::seen.clear();
  RecordingExporter::exporting = false;
  std::atomic<bool> hold{true};
  QueuedMonitor monitor(Identity(), std::make_unique<RecordingExporter>(&hold), false,
                        /*capacity=*/10);
  monitor.RecordsProcessed(1);
  // The sender takes the first event and gets stuck in Export().
  while (!RecordingExporter::exporting) usleep(1000);
  for (int i = 0; i < 100; ++i) monitor.RecordsProcessed(1);
  EXPECT_EQ(monitor.dropped(), 90);
  hold = false;
  monitor.Flush(std::chrono::milliseconds(100));
  EXPECT_EQ(RecordingExporter::seen.size(), 11u);
  EXPECT_EQ(monitor.dropped(), 90);
  monitor.RecordsProcessed(1);  // After the flush: dropped, never queued.
  EXPECT_EQ(monitor.dropped(), 91);
}

TEST(MonitorQueueTest, TallyReportsPerDestinationOnlyWhenEnabled) {
  RecordingExporter::seen.clear();
  RecordBatch records;
  records.Add("1", "{}", 1'000, "a");
  records.Add("2", "{}", 1'000, "");
  records.Add("3", "{}", 1'000, "a");
  DurableTally idle;
  idle.Add(records);  // No monitor installed: nothing collected.
  {
    ScopedMonitor scoped(
        std::make_unique<QueuedMonitor>(Identity(), std::make_unique<RecordingExporter>(), false));
    idle.Report(2'000);
    DurableTally tally;
    tally.Add(records);
    tally.Report(3'000);
    tally.Report(4'000);  // Nothing left.
  }
  const auto& seen = RecordingExporter::seen;
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].tags, (MetricTags{{"destination_id", "a"}}));
  EXPECT_EQ(seen[0].value, 2);
  EXPECT_EQ(seen[1].tags, (MetricTags{{"destination_id", "out"}}));
  EXPECT_EQ(seen[1].value, 1);
  EXPECT_EQ(seen[2].kind, MonitorEvent::Kind::kLatency);
  EXPECT_EQ(seen[2].latency.count, 3);
  EXPECT_EQ(seen[2].latency.max_ms, 2);
  EXPECT_FALSE(CurrentMonitor().enabled());
}

TEST(MonitorDatadogTest, SendsDatagramsOverUdpAndUnixSockets) {
  int udp = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(udp, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  ::getsockname(udp, reinterpret_cast<sockaddr*>(&address), &length);
  std::string socket_path =
      (std::filesystem::temp_directory_path() / ("bizon-dsd-" + std::to_string(getpid()))).string();
  ::unlink(socket_path.c_str());
  int unix_socket = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un unix_address{};
  unix_address.sun_family = AF_UNIX;
  std::snprintf(unix_address.sun_path, sizeof(unix_address.sun_path), "%s", socket_path.c_str());
  ASSERT_EQ(::bind(unix_socket, reinterpret_cast<sockaddr*>(&unix_address), sizeof(unix_address)),
            0);

  for (bool over_unix : {false, true}) {
    DatadogOptions options;
    options.statsd_host = "127.0.0.1";
    options.statsd_port = ntohs(address.sin_port);
    if (over_unix) options.socket_path = socket_path;
    auto exporter = MakeDatadogExporter(options, Identity());
    ASSERT_TRUE(exporter) << exporter.error().message();
    QueuedMonitor monitor(Identity(), std::move(*exporter), false);
    monitor.PipelineStatus("success");
    monitor.Flush(std::chrono::milliseconds(100));
    char buffer[9000];
    ssize_t got = ::recv(over_unix ? unix_socket : udp, buffer, sizeof(buffer), MSG_DONTWAIT);
    ASSERT_GT(got, 0);
    EXPECT_EQ(
        std::string(buffer, static_cast<size_t>(got)),
        "bizon_pipeline.status:1|c|#pipeline_name:orders,pipeline_stream:creatures,"
        "pipeline_source:dummy,pipeline_destination:logger,team:data,pipeline_status:success");
    EXPECT_EQ(monitor.dropped(), 0);
  }
  ::close(udp);
  ::close(unix_socket);
  ::unlink(socket_path.c_str());

  // Nobody listening on the socket: every event is dropped and counted.
  DatadogOptions gone;
  gone.socket_path = socket_path;
  QueuedMonitor monitor(Identity(), *MakeDatadogExporter(gone, Identity()), false);
  monitor.PipelineStatus("running");
  monitor.RecordsProcessed(3);
  monitor.Flush(std::chrono::milliseconds(100));
  EXPECT_EQ(monitor.dropped(), 2);
}

TEST(MonitorDatadogTest, TracePayloadIsOneSpanPerTraceWithTheBaseTags) {
  DatadogOptions options;
  options.env = "prod";
  std::vector<IterationSpan> spans = {
      {.iteration = 0, .start_us = 1'000, .end_us = 3'500, .records = 10},
      {.iteration = 1,
       .start_us = 4'000,
       .end_us = 4'000,
       .records = 0,
       .error = true,
       .parent = ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")}};
  std::string json = DatadogTracesJson(spans, Identity(), options);
  // The lower 64 bits of the incoming trace id (above int64, so looked for in the text).
  EXPECT_NE(json.find(R"("trace_id":11803532876627986230,)"), std::string::npos) << json;
  auto traces = Value::FromJson(json);
  ASSERT_TRUE(traces);
  ASSERT_EQ(traces->AsList().size(), 2u);
  const Value& first = traces->AsList()[0].AsList()[0];
  EXPECT_EQ(first.GetString("name"), "bizon.stream.iteration");
  EXPECT_EQ(first.GetString("resource"), "dummy.creatures");
  EXPECT_EQ(first.GetString("service"), "bizon");
  EXPECT_EQ(first.GetInteger("start"), 1'000'000);
  EXPECT_EQ(first.GetInteger("duration"), 2'500'000);
  EXPECT_EQ(first.GetInteger("parent_id"), 0);
  EXPECT_EQ(first.GetInteger("error"), 0);
  EXPECT_EQ(first.Find("meta")->GetString("pipeline_name"), "orders");
  EXPECT_EQ(first.Find("meta")->GetString("team"), "data");
  EXPECT_EQ(first.Find("meta")->GetString("env"), "prod");
  EXPECT_EQ(first.Find("metrics")->GetInteger("_sampling_priority_v1"), 1);
  EXPECT_EQ(first.Find("metrics")->GetInteger("records"), 10);
  const Value& second = traces->AsList()[1].AsList()[0];
  EXPECT_EQ(second.GetInteger("parent_id"), 0x00f067aa0ba902b7);
  EXPECT_EQ(second.Find("meta")->GetString("_dd.p.tid"), "4bf92f3577b34da6");
  EXPECT_EQ(second.GetInteger("error"), 1);
}

TEST(MonitorOtelTest, ReadsTheStandardVariables) {
  FakeEnv().clear();
  EXPECT_FALSE(OtelSelectedByEnvironment(LookupFakeEnv));
  FakeEnv() = {{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"},
               {"OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod, team=a%2Cb,broken"},
               {"OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s%3Dcret"},
               {"OTEL_METRIC_EXPORT_INTERVAL", "500"}};
  EXPECT_TRUE(OtelSelectedByEnvironment(LookupFakeEnv));
  auto options = ReadOtelOptions(LookupFakeEnv, std::nullopt);
  ASSERT_TRUE(options);
  EXPECT_EQ(options->metrics_url, "http://collector:4318/v1/metrics");
  EXPECT_EQ(options->traces_url, "http://collector:4318/v1/traces");
  EXPECT_EQ(
      options->resource,
      (MetricTags{{"service.name", "bizon"}, {"deployment.environment", "prod"}, {"team", "a,b"}}));
  EXPECT_EQ(options->headers, (TelemetryHeaders{{"x-api-key", "s=cret"}}));
  EXPECT_EQ(options->export_interval_ms, 500);
  EXPECT_TRUE(options->traces);

  FakeEnv() = {{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/traces"},
               {"OTEL_SERVICE_NAME", "etl"},
               {"OTEL_RESOURCE_ATTRIBUTES", "service.name=ignored,x=1"},
               {"OTEL_METRICS_EXPORTER", "none"}};
  options = ReadOtelOptions(LookupFakeEnv, false);
  ASSERT_TRUE(options);
  EXPECT_EQ(options->traces_url, "http://t:1/traces");
  EXPECT_EQ(options->metrics_url, "http://localhost:4318/v1/metrics");
  EXPECT_EQ(options->resource, (MetricTags{{"service.name", "etl"}, {"x", "1"}}));
  EXPECT_FALSE(options->metrics);
  EXPECT_FALSE(options->traces);  // enable_tracing: false.

  FakeEnv()["OTEL_SDK_DISABLED"] = "TRUE";
  EXPECT_FALSE(OtelSelectedByEnvironment(LookupFakeEnv));
}

TEST(MonitorOtelTest, MakeMonitorPicksTheSink) {
  FakeEnv().clear();
  auto none = MakeMonitor(nullptr, Identity(), LookupFakeEnv);
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, nullptr);
  FakeEnv() = {{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"}};
  auto from_env = MakeMonitor(nullptr, Identity(), LookupFakeEnv);
  ASSERT_TRUE(from_env && *from_env);
  EXPECT_TRUE((*from_env)->tracing());
  Value datadog = Config(R"({"type":"datadog","config":{"datadog_agent_host":"127.0.0.1"}})");
  auto dd = MakeMonitor(&datadog, Identity(), LookupFakeEnv);
  ASSERT_TRUE(dd && *dd);
  EXPECT_FALSE((*dd)->tracing());
  FakeEnv().clear();
}

TEST(MonitorOtelTest, MetricsAndTracesFollowTheOtlpJsonMapping) {
  OtelOptions options;
  options.resource = {{"service.name", "bizon"}};
  OtlpMetrics metrics(Identity(), 1'000);
  metrics.Add({.kind = MonitorEvent::Kind::kCount,
               .name = metric::kRecordsSynced,
               .value = 5,
               .tags = {{"destination_id", "out"}}});
  metrics.Add({.kind = MonitorEvent::Kind::kCount,
               .name = metric::kRecordsSynced,
               .value = 7,
               .tags = {{"destination_id", "out"}}});
  metrics.Add({.kind = MonitorEvent::Kind::kGauge,
               .name = metric::kCompletion,
               .value = 40,
               .time_us = 1'500});
  MonitorEvent latency{.kind = MonitorEvent::Kind::kLatency, .name = metric::kLatency};
  latency.latency = LatencySummary::Of({1'000, 1'000}, 4'000);
  metrics.Add(latency);
  auto request = Value::FromJson(metrics.Json(options, 2'000));
  ASSERT_TRUE(request);
  const Value& scope_metrics =
      request->Find("resourceMetrics")->AsList()[0].Find("scopeMetrics")->AsList()[0];
  const Value::List& list = scope_metrics.Find("metrics")->AsList();
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].GetString("name"), "bizon_pipeline.records_synced");
  const Value* sum = list[0].Find("sum");
  EXPECT_EQ(sum->GetInteger("aggregationTemporality"), 2);
  EXPECT_TRUE(sum->GetBool("isMonotonic"));
  const Value& point = sum->Find("dataPoints")->AsList()[0];
  EXPECT_EQ(point.GetString("asInt"), "12");
  EXPECT_EQ(point.GetString("startTimeUnixNano"), "1000000");
  EXPECT_EQ(point.GetString("timeUnixNano"), "2000000");
  EXPECT_EQ(point.Find("attributes")->AsList()[0].GetString("key"), "pipeline_name");
  EXPECT_EQ(list[1].Find("gauge")->Find("dataPoints")->AsList()[0].GetDouble("asDouble"), 40);
  const Value& histogram = list[2].Find("histogram")->Find("dataPoints")->AsList()[0];
  EXPECT_EQ(histogram.GetString("count"), "2");
  EXPECT_EQ(histogram.Find("bucketCounts")->AsList().size(),
            histogram.Find("explicitBounds")->AsList().size() + 1);

  std::vector<IterationSpan> spans = {
      {.iteration = 3,
       .start_us = 10,
       .end_us = 20,
       .records = 2,
       .parent = ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")}};
  auto traces = Value::FromJson(OtlpTracesJson(spans, Identity(), options));
  ASSERT_TRUE(traces);
  const Value& span = traces->Find("resourceSpans")
                          ->AsList()[0]
                          .Find("scopeSpans")
                          ->AsList()[0]
                          .Find("spans")
                          ->AsList()[0];
  EXPECT_EQ(span.GetString("traceId"), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(span.GetString("parentSpanId"), "00f067aa0ba902b7");
  EXPECT_EQ(span.GetString("spanId").size(), 16u);
  EXPECT_EQ(span.GetString("name"), "bizon.stream.iteration");
  EXPECT_EQ(span.GetString("startTimeUnixNano"), "10000");
  EXPECT_EQ(span.GetString("endTimeUnixNano"), "20000");
}

}  // namespace
}  // namespace bizon
