"""Monitoring end to end: Datadog (DogStatsD, the agent's trace intake) and OpenTelemetry
(OTLP/HTTP), through `bizon run` against the real PostgreSQL server and Kafka broker.

The receivers (tests/fakes/fake_dogstatsd.py, fake_datadog_agent.py, fake_otlp.py) run on
loopback inside the test process; each parses what it receives exactly and records a violation
for anything its protocol does not allow, and every test ends with none. Each run checks names,
tags and values: records synced equals the records the destination holds, one span per
iteration, completion at 100 %, a latency distribution per written batch. With the receivers
stopped, a run completes with the same result (the speed comparison is bench/, not here).
"""

from __future__ import annotations

import os
import socket
import uuid

import pytest
import yaml

from conftest_kafka import kafka  # noqa: F401 (fixtures)
from conftest_postgres import pg, postgres, postgres_pipeline  # noqa: F401 (fixtures)
from fake_datadog_agent import FakeDatadogAgent
from fake_dogstatsd import FakeDogStatsD
from support.kafka import config_text, kafka_source, rows, stream_until
from support.pipelines import generator
from support.results import read_result
from support.servers import import_or_skip

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
BASE_TAG_NAMES = ("pipeline_name", "pipeline_stream", "pipeline_source", "pipeline_destination")
NO_OTEL = {name: "" for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                                 "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")}


@pytest.fixture
def statsd(tmp_path):
    server = FakeDogStatsD(unix_path=str(tmp_path / "dsd.socket")).start()
    yield server
    server.stop()
    assert server.violations == []


@pytest.fixture
def trace_agent():
    server = FakeDatadogAgent().start()
    yield server
    server.stop()
    assert server.violations == []


@pytest.fixture
def otlp():
    import_or_skip("opentelemetry.proto")
    from fake_otlp import FakeOtlpReceiver

    server = FakeOtlpReceiver().start()
    yield server
    server.stop()
    assert server.violations == []


def closed_port() -> int:
    """A loopback port nobody listens on (TCP and UDP)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def datadog_block(port: int, tracing: bool = True, **config) -> dict:
    return {"type": "datadog",
            "config": {"datadog_agent_host": "127.0.0.1", "datadog_agent_port": port,
                       "enable_tracing": tracing, "tags": {"team": "data", "tier": 1}, **config}}


def generator_run(bizon, pg, name: str, monitoring: dict | None, env: dict, count: int = 25):
    config = yaml.safe_load(postgres_pipeline(pg, name, generator(count=count, page_size=10)))
    if monitoring is not None:
        config["monitoring"] = monitoring
    path = bizon.write("p.yml", yaml.safe_dump(config, sort_keys=False))
    result = bizon.run("run", path, "--result-json", "result.json", env=env, check=0)
    return result, read_result(bizon.cwd / "result.json")


def assert_base_tags(metric, name: str, source: str, destination: str, stream: str):
    tags = metric.tag_map
    assert [tag.split(":")[0] for tag in metric.tags[:4]] == list(BASE_TAG_NAMES), metric
    assert tags["pipeline_name"] == name
    assert tags["pipeline_source"] == source
    assert tags["pipeline_stream"] == stream
    assert tags["pipeline_destination"] == destination
    assert tags["team"] == "data" and tags["tier"] == "1"


def test_generator_to_postgres_emits_every_datadog_metric_and_one_span_per_iteration(
        bizon, pg, statsd, trace_agent):
    # Only datadog_agent_host, no datadog_host_env_var: the host the original ignored is used.
    result, outcome = generator_run(bizon, pg, "gen-dd", datadog_block(statsd.port),
                                    {"DD_TRACE_AGENT_URL": trace_agent.url, **NO_OTEL})
    written = pg.scalar(f'SELECT count(*) AS n FROM "{pg.destination_schema}"."out"')
    assert written == outcome["records_written"] == 25
    assert statsd.wait_for(lambda m: m.tag_map.get("pipeline_status") == "success")

    assert [m.tag_map["pipeline_status"] for m in statsd.named("bizon_pipeline.status")] == [
        "running", "success"]
    assert statsd.total("bizon_pipeline.records_synced", destination_id="out") == written
    assert statsd.total("bizon_pipeline.records_synced") == written
    assert statsd.total("bizon_pipeline.records_processed") == 25
    completion = statsd.named("bizon_pipeline.completion_percent")
    assert completion and completion[-1].values == [100.0] and completion[-1].type == "g"
    assert statsd.named("bizon_pipeline.eta_seconds")[-1].values == [0.0]
    latency = statsd.named("bizon_pipeline.source_latency_ms")
    assert latency and all(m.type == "d" and min(m.values) >= 0 for m in latency)
    # Each latency line samples its batch: the sampled values stand for every written record.
    assert round(sum(len(m.values) / m.sample_rate for m in latency)) == written
    for metric in statsd.metrics:
        assert metric.transport == "udp"
        assert_base_tags(metric, "gen-dd", "generator", "postgres", "records")
    assert statsd.named("bizon_pipeline.large_records") == []

    spans = trace_agent.spans()
    # 25 records in pages of 10: iterations 0, 1 and 2, the last one the buffer's cursor names.
    [cursor] = pg.destination_cursors(outcome["job_id"])
    assert sorted(s["metrics"]["iteration"] for s in spans) == [0, 1, 2]
    assert cursor["to_source_iteration"] == 2
    assert sum(s["metrics"]["records"] for s in spans) == written
    for span in spans:
        assert span["name"] == "bizon.stream.iteration"
        assert span["resource"] == "generator.records"
        assert span["service"] == "bizon"
        assert span["parent_id"] == 0 and span["error"] == 0
        assert span["metrics"]["_sampling_priority_v1"] == 1
        assert {k: span["meta"][k] for k in BASE_TAG_NAMES} == {
            "pipeline_name": "gen-dd", "pipeline_stream": "records",
            "pipeline_source": "generator", "pipeline_destination": "postgres"}
        assert span["meta"]["team"] == "data"
    assert len({s["trace_id"] for s in spans}) == len(spans)  # A trace per iteration.
    assert "Monitoring: DogStatsD to 127.0.0.1:" in result.stderr


def test_the_process_runner_reports_from_the_consumer_process(bizon, pg, statsd, trace_agent):
    config = yaml.safe_load(postgres_pipeline(pg, "gen-proc", generator(count=25, page_size=10),
                                              engine={"runner": {"type": "process"}}))
    config["monitoring"] = datadog_block(statsd.port)
    path = bizon.write("p.yml", yaml.safe_dump(config, sort_keys=False))
    bizon.run("run", path, "--result-json", "result.json", check=0,
              env={"DD_TRACE_AGENT_URL": trace_agent.url, **NO_OTEL})
    assert read_result(bizon.cwd / "result.json")["records_written"] == 25
    assert [m.tag_map["pipeline_status"] for m in statsd.named("bizon_pipeline.status")] == [
        "running", "success"]
    assert statsd.total("bizon_pipeline.records_synced", destination_id="out") == 25
    assert sorted(s["metrics"]["iteration"] for s in trace_agent.spans()) == [0, 1, 2]


def test_kafka_to_file_over_the_unix_socket_with_the_host_variable(bizon, kafka, statsd,
                                                                    trace_agent):
    topic = kafka.create_topic(partitions=1)
    kafka.produce(topic, [{"n": i} for i in range(30)], headers=[("traceparent", TRACEPARENT)])
    source = kafka_source(kafka, {topic: "events"}, sync_mode="full_refresh", batch_size=10)
    # The variable wins over datadog_agent_host; its unix:// value selects the socket.
    monitoring = datadog_block(9, datadog_host_env_var="BIZON_TEST_DD_HOST",
                               datadog_agent_host="unused.invalid")
    config = yaml.safe_load(config_text(source, stream_runner=False))
    config["monitoring"] = monitoring
    path = bizon.write("p.yml", yaml.safe_dump(config, sort_keys=False))
    bizon.run("run", path, "--result-json", "result.json", check=0,
              env={"BIZON_TEST_DD_HOST": f"unix://{statsd.unix_path}",
                   "DD_TRACE_AGENT_URL": trace_agent.url, "DD_SERVICE": "ingest", **NO_OTEL})
    written = len(rows(bizon, "events"))
    assert written == read_result(bizon.cwd / "result.json")["records_written"] == 30
    assert statsd.wait_for(lambda m: m.tag_map.get("pipeline_status") == "success")
    assert {m.transport for m in statsd.metrics} == {"unix"}
    assert statsd.total("bizon_pipeline.records_synced", destination_id="events") == 30
    assert statsd.total("bizon_pipeline.records_processed") == 30
    for metric in statsd.metrics:
        assert_base_tags(metric, config["name"], "kafka", "file", "topic")
    # A full refresh knows its total from the topic's offsets.
    assert statsd.named("bizon_pipeline.completion_percent")[-1].values == [100.0]

    spans = trace_agent.spans()
    data_spans = [s for s in spans if s["metrics"]["records"] > 0]
    assert sum(s["metrics"]["records"] for s in data_spans) == 30
    assert len({s["metrics"]["iteration"] for s in spans}) == len(spans)
    for span in data_spans:
        # The record's traceparent is the span's parent: its trace id's low 64 bits, the high
        # ones in _dd.p.tid.
        assert span["trace_id"] == int(TRACEPARENT[19:35], 16)
        assert span["meta"]["_dd.p.tid"] == TRACEPARENT[3:19]
        assert span["parent_id"] == int(TRACEPARENT[36:52], 16)
        assert span["service"] == "ingest"
        assert span["resource"] == "kafka.topic"


def test_generator_to_postgres_over_otlp(bizon, pg, otlp):
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url, "OTEL_SERVICE_NAME": "etl",
           "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test,team=a%2Cb"}
    monitoring = {"type": "otel", "config": {"tags": {"team": "data", "tier": 1}}}
    _, outcome = generator_run(bizon, pg, "gen-otel", monitoring, env)
    written = pg.scalar(f'SELECT count(*) AS n FROM "{pg.destination_schema}"."out"')
    assert written == outcome["records_written"] == 25

    assert otlp.sum("bizon_pipeline.records_synced", destination_id="out") == written
    assert otlp.sum("bizon_pipeline.records_processed") == 25
    assert otlp.sum("bizon_pipeline.status", pipeline_status="running") == 1
    assert otlp.sum("bizon_pipeline.status", pipeline_status="success") == 1
    [(metric, completion)] = otlp.points("bizon_pipeline.completion_percent")
    assert metric.unit == "%" and completion.as_double == 100.0
    [(_, histogram)] = otlp.points("bizon_pipeline.source_latency_ms")
    assert histogram.count == written and histogram.min >= 0
    for _, point in otlp.points("bizon_pipeline.records_synced"):
        attributes = {kv.key: kv.value.string_value for kv in point.attributes}
        assert attributes["pipeline_name"] == "gen-otel"
        assert attributes["pipeline_source"] == "generator"
        assert attributes["pipeline_destination"] == "postgres"
        assert attributes["team"] == "data" and attributes["tier"] == "1"
    for resource in otlp.resources():
        assert resource == {"service.name": "etl", "deployment.environment": "test",
                            "team": "a,b"}

    spans = otlp.spans()
    assert sorted(next(kv.value.int_value for kv in s.attributes if kv.key == "bizon.iteration")
                  for s in spans) == [0, 1, 2]
    assert {s.name for s in spans} == {"bizon.stream.iteration"}
    assert all(not s.parent_span_id and s.status.code == 1 for s in spans)


def test_kafka_stream_over_otlp_selected_by_the_environment_carries_the_trace(bizon, kafka, otlp):
    topic = kafka.create_topic(partitions=1)
    kafka.produce(topic, [{"n": i} for i in range(20)], headers=[("traceparent", TRACEPARENT)])
    source = kafka_source(kafka, {topic: "events"})
    config = bizon.write("p.yml", config_text(source))  # No monitoring block.
    stream_until(bizon, config, {"events": 20}, env={"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url,
                                                     "OTEL_METRIC_EXPORT_INTERVAL": "200"})
    assert otlp.sum("bizon_pipeline.records_synced", destination_id="events") == 20
    spans = otlp.spans()
    iterations = otlp.sum("bizon_pipeline.status", pipeline_status="success")
    assert len(spans) == iterations >= 1  # The stream runner: one of each per iteration.
    carried = [s for s in spans if s.parent_span_id]
    assert carried, "no span took the record's traceparent"
    for span in carried:
        assert span.trace_id.hex() == TRACEPARENT[3:35]
        assert span.parent_span_id.hex() == TRACEPARENT[36:52]


def test_receivers_down_the_run_completes_and_says_what_was_dropped(bizon, pg):
    port = closed_port()
    env = {"DD_TRACE_AGENT_URL": f"http://127.0.0.1:{port}", **NO_OTEL}
    result, outcome = generator_run(bizon, pg, "gen-down", datadog_block(port), env, count=40)
    assert outcome["status"] == "success" and outcome["records_written"] == 40
    assert "cannot send traces to the Datadog agent" in result.stderr
    assert "could not be delivered and were dropped" in result.stderr

    result, outcome = generator_run(bizon, pg, "gen-down-otel", {"type": "otel"},
                                    {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"},
                                    count=40)
    assert outcome["status"] == "success" and outcome["records_written"] == 40
    assert "cannot send to the OTLP endpoint" in result.stderr


def test_an_unresolvable_agent_host_turns_monitoring_off_not_the_run(bizon, pg):
    host = f"no-such-host-{uuid.uuid4().hex[:8]}.invalid"
    result, outcome = generator_run(bizon, pg, "gen-nohost",
                                    datadog_block(8125, datadog_agent_host=host), NO_OTEL)
    assert outcome["status"] == "success" and outcome["records_written"] == 25
    assert f"Monitoring is off for this run: monitoring: cannot resolve the DogStatsD host '{host}'" \
        in result.stderr
    assert os.environ.get("BIZON_TEST_DD_HOST") is None


def test_the_receivers_refuse_what_their_protocols_do_not_allow(statsd, trace_agent, otlp):
    import json
    import urllib.error
    import urllib.request

    for datagram in (b"1bad:1|c", b"x:1:2|c", b"x:1|q", b"x:1|c|@2", b"x:nan|g", b"x:1|c|#,a",
                     b"_e{1,1}:a|b", b"big:1|g|#" + b"a" * 9000):
        statsd.receive(datagram)
    # The oversized datagram's line parses; the agent would have cut it at 8192 bytes.
    assert len(statsd.violations) == 8 and [m.name for m in statsd.metrics] == ["big"]
    statsd.receive(b"x.y:1.5:2|d|@0.5|#a:b,c\nz:3|c\n")
    assert [m.name for m in statsd.metrics] == ["big", "x.y", "z"]
    assert len(statsd.violations) == 8
    statsd.violations.clear()

    def send(url, body, content_type="application/json", method="POST"):
        request = urllib.request.Request(url, data=json.dumps(body).encode(), method=method,
                                         headers={"Content-Type": content_type})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    span = {"trace_id": 1, "span_id": 2, "parent_id": 0, "name": "n", "resource": "r",
            "service": "s", "start": 1_700_000_000_000_000_000, "duration": 5, "error": 0,
            "meta": {}, "metrics": {}}
    traces = f"{trace_agent.url}/v0.3/traces"
    assert send(traces, [[span]], method="PUT") == 200
    for bad in ([[{**span, "extra": 1}]], [[{**span, "span_id": 1}]], [[{**span, "start": 5}]],
                [[span, {**span, "trace_id": 3, "span_id": 4}]], [[]], {"traces": []},
                [[{**span, "meta": {"a": 1}}]]):
        assert send(traces, bad, method="PUT") == 400, bad
    assert send(traces, [[span]], content_type="application/msgpack", method="PUT") == 400
    assert len(trace_agent.violations) == 8
    trace_agent.violations.clear()

    good = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7", "name": "n",
        "kind": 1, "startTimeUnixNano": "1", "endTimeUnixNano": "2"}]}]}]}
    assert send(f"{otlp.url}/v1/traces", good) == 200
    short_id = json.loads(json.dumps(good))
    short_id["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"] = "00f0"
    unknown = json.loads(json.dumps(good))
    unknown["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["colour"] = "red"
    for bad in (short_id, unknown, {"resourceMetrics": 1}):
        assert send(f"{otlp.url}/v1/traces", bad) == 400
    assert send(f"{otlp.url}/v1/metrics", {"resourceMetrics": [{"scopeMetrics": [{"metrics": [
        {"name": "m", "sum": {"dataPoints": [{"asInt": "1", "timeUnixNano": "1"}]}}]}]}]}) == 400
    assert send(f"{otlp.url}/v1/traces", good, content_type="application/x-protobuf") == 400
    assert len(otlp.violations) == 5
    otlp.violations.clear()


def test_config_validate_checks_the_monitoring_block(bizon):
    text = yaml.safe_dump({"name": "v", "source": generator(count=1),
                           "destination": {"name": "logger", "config": {}},
                           "monitoring": {"type": "datadog"}}, sort_keys=False)
    path = bizon.write("p.yml", text)
    line = text.splitlines().index("monitoring:") + 2
    refused = bizon.run("config", "validate", path)
    assert refused.returncode == 1
    assert f"{path}:{line}: monitoring: monitoring.config is required for type datadog" \
        in refused.stderr
    for monitoring in ({"type": "otel"}, {"type": "otel", "config": {"tags": {"a": "b"}}},
                       datadog_block(8125)):
        text = yaml.safe_dump({"name": "v", "source": generator(count=1),
                               "destination": {"name": "logger", "config": {}},
                               "monitoring": monitoring}, sort_keys=False)
        accepted = bizon.run("config", "validate", bizon.write("p.yml", text), "--strict")
        assert accepted.returncode == 0, accepted.stderr
    unknown = bizon.run("config", "validate", bizon.write("p.yml", text.replace(
        "type: datadog", "type: prometheus")))
    assert unknown.returncode == 1 and "monitoring.type" in unknown.stderr
