"""Datadog Data Streams Monitoring end to end: a Kafka source pipeline run by `bizon run` with
`monitoring.type: datadog` and DD_DATA_STREAMS_ENABLED=true, against the real Kafka broker and
tests/fakes/fake_data_streams_agent.py, which decodes every POST /v0.1/pipeline_stats (gzip,
MessagePack, DDSketch protobufs) and refuses anything off its schema.

What the original sets through ddtrace's data-streams API is checked point by point: a consume
checkpoint per record (type:kafka, topic:<topic>, direction:in), continuing the pathway a
producer upstream put in the record's `dd-pathway-ctx-base64` header; a produce checkpoint per
record at each durable point (type:<destination alias>, topic:<destination id>, direction:out),
chained to a consumed record's hash. Hashes are recomputed here with the tracers' algorithm.
Without the variable nothing is posted; an agent that fails or is absent never fails the run.
"""

from __future__ import annotations

import base64
import gzip
import socket
import struct
import time
import urllib.error
import urllib.request

import pytest
import yaml

from conftest_kafka import kafka  # noqa: F401 (fixtures)
from fake_data_streams_agent import FakeDataStreamsAgent, pathway_hash
from fake_server import Fault
from support.kafka import config_text, kafka_source, rows, stream_until
from support.results import read_result
from support.servers import import_or_skip

PATHWAY_HEADER = "dd-pathway-ctx-base64"
NO_OTEL = {name: "" for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                                 "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")}
UPSTREAM_HASH = 0x0123456789ABCDEF


@pytest.fixture
def agent():
    import_or_skip("google.protobuf")
    server = FakeDataStreamsAgent().start()
    yield server
    server.stop()
    assert server.violations == []


def zigzag_varint(value: int) -> bytes:
    bits = (value << 1) ^ (value >> 63)
    out = b""
    while bits >= 0x80:
        out += bytes([(bits & 0x7F) | 0x80])
        bits >>= 7
    return out + bytes([bits])


def upstream_header(pathway_start_s: float, edge_start_s: float) -> str:
    """The header a producer's tracer sets: its hash and the pathway's and edge's start (ms)."""
    encoded = (struct.pack("<Q", UPSTREAM_HASH) + zigzag_varint(int(pathway_start_s * 1000))
               + zigzag_varint(int(edge_start_s * 1000)))
    return base64.b64encode(encoded).decode()


def monitored(source: dict, alias: str | None = None, stream_runner: bool = True) -> str:
    config = yaml.safe_load(config_text(source, stream_runner=stream_runner))
    if alias is not None:
        config["destination"]["alias"] = alias
    # DogStatsD datagrams go to the discard port: this file is about the trace agent.
    config["monitoring"] = {"type": "datadog", "config": {
        "datadog_host_env_var": "DD_AGENT_HOST", "datadog_agent_port": 9}}
    return yaml.safe_dump(config, sort_keys=False)


def tags(direction: str, kind: str, topic: str) -> list[str]:
    return sorted([f"type:{kind}", f"topic:{topic}", f"direction:{direction}",
                   "manual_checkpoint:true"])


def total(points: list[dict]) -> float:
    return sum(point["PathwayLatency"].count for point in points)


def test_consume_and_produce_checkpoints_reach_the_agent_with_the_tracers_hashes(
        bizon, kafka, agent):
    topic = kafka.create_topic(partitions=1)
    now = time.time()
    # Four messages continue a pathway started a minute ago, whose last edge began 5 s ago
    # (with the sampling header the original strips); six start one.
    carried = [("x-datadog-sampling-priority", "1"),
               (PATHWAY_HEADER, upstream_header(now - 60, now - 5))]
    kafka.produce(topic, [{"n": i} for i in range(10)],
                  headers=[carried if i % 3 == 0 else [("other", "x")] for i in range(10)])
    source = kafka_source(kafka, {topic: "events"})
    config = bizon.write("p.yml", monitored(source, alias="lake"))
    # The trace agent's host from DD_AGENT_HOST (the host variable of the monitoring block) and
    # its port from DD_TRACE_AGENT_PORT, as ddtrace finds its agent.
    stderr = stream_until(bizon, config, {"events": 10}, env={
        "DD_DATA_STREAMS_ENABLED": "true", "DD_AGENT_HOST": "127.0.0.1",
        "DD_TRACE_AGENT_PORT": str(agent.port), "DD_TRACE_AGENT_URL": "",
        "DD_SERVICE": "ingest", "DD_ENV": "test", **NO_OTEL})
    assert len(rows(bizon, "events")) == 10
    assert "data streams to http://127.0.0.1:" in stderr
    assert agent.payloads, "nothing reached /v0.1/pipeline_stats"
    for payload in agent.payloads:
        assert (payload["Service"], payload["Env"], payload["Lang"]) == ("ingest", "test", "cpp")
    request = agent.requests_to("/v0.1/pipeline_stats")[0]
    assert request.headers["content-encoding"] == "gzip"
    assert request.headers["datadog-meta-lang"] == "cpp"
    assert gzip.decompress(request.body)  # A gzip member, as every tracer sends.

    consumed = agent.points("in")
    consume_tags = tags("in", "kafka", topic)
    assert {tuple(point["edge_tags"]) for point in consumed} == {tuple(consume_tags)}
    started = pathway_hash("ingest", "test", consume_tags, 0)
    continued = pathway_hash("ingest", "test", consume_tags, UPSTREAM_HASH)
    by_parent = {}
    for point in consumed:
        assert point["hash"] == {0: started, UPSTREAM_HASH: continued}[point["parent_hash"]]
        by_parent.setdefault(point["parent_hash"], []).append(point)
    assert total(by_parent[0]) == 6 and total(by_parent[UPSTREAM_HASH]) == 4
    for point in by_parent[UPSTREAM_HASH]:
        # Edge latency: since the upstream edge began (5 s ago); pathway latency: since it began.
        assert point["EdgeLatency"].min >= 4.9 and point["PathwayLatency"].min >= 59
    for point in by_parent[0]:
        assert point["EdgeLatency"].max == 0 and point["PathwayLatency"].max == 0

    produced = agent.points("out")
    produce_tags = tags("out", "lake", "events")
    assert {tuple(point["edge_tags"]) for point in produced} == {tuple(produce_tags)}
    assert total(produced) == 10  # One per record, as the original's per-record loop.
    for point in produced:
        assert point["parent_hash"] in (started, continued)
        assert point["hash"] == pathway_hash("ingest", "test", produce_tags, point["parent_hash"])
        # The size of the pathway header the context would travel in: 28 + 21 bytes.
        assert 45 <= point["PayloadSize"].min <= point["PayloadSize"].max <= 50


def test_the_destination_name_is_the_type_without_an_alias_and_the_thread_runner_reports_too(
        bizon, kafka, agent):
    topic = kafka.create_topic(partitions=1)
    kafka.produce(topic, [{"n": i} for i in range(12)])
    source = kafka_source(kafka, {topic: "events"}, sync_mode="full_refresh", batch_size=5)
    config = bizon.write("p.yml", monitored(source, stream_runner=False))
    result = bizon.run("run", config, "--result-json", "result.json", check=0, env={
        "DD_DATA_STREAMS_ENABLED": "true", "DD_AGENT_HOST": "127.0.0.1",
        "DD_TRACE_AGENT_URL": agent.url, "DD_SERVICE": "", "DD_ENV": "", **NO_OTEL})
    assert read_result(bizon.cwd / "result.json")["records_written"] == 12, result.stderr
    consume_tags = tags("in", "kafka", topic)
    assert total(agent.points("in")) == 12
    # Without DD_SERVICE and DD_ENV: service bizon, env "none" in the hash, no Env sent.
    assert {point["hash"] for point in agent.points("in")} == {
        pathway_hash("bizon", "none", consume_tags, 0)}
    assert all("Env" not in payload for payload in agent.payloads)
    produced = agent.points("out")
    assert {tuple(point["edge_tags"]) for point in produced} == {
        tuple(tags("out", "file", "events"))}  # The file destination's own alias.
    assert total(produced) == 12


@pytest.mark.parametrize("value", [None, "1", "True"])
def test_without_the_variable_set_to_true_nothing_is_posted(bizon, kafka, agent, value):
    topic = kafka.create_topic(partitions=1)
    kafka.produce(topic, [{"n": i} for i in range(5)])
    source = kafka_source(kafka, {topic: "events"}, sync_mode="full_refresh")
    config = bizon.write("p.yml", monitored(source, stream_runner=False))
    env = {"DD_AGENT_HOST": "127.0.0.1", "DD_TRACE_AGENT_URL": agent.url, **NO_OTEL,
           "DD_DATA_STREAMS_ENABLED": value or ""}
    result = bizon.run("run", config, "--result-json", "result.json", check=0, env=env)
    assert read_result(bizon.cwd / "result.json")["records_written"] == 5, result.stderr
    assert agent.requests_to("/v0.1/pipeline_stats") == []
    assert "data streams" not in result.stderr


@pytest.mark.parametrize("failure", ["absent", "error", "hangs"])
def test_a_failing_or_absent_agent_never_fails_the_run(bizon, kafka, agent, failure):
    topic = kafka.create_topic(partitions=1)
    kafka.produce(topic, [{"n": i} for i in range(20)])
    source = kafka_source(kafka, {topic: "events"}, sync_mode="full_refresh", batch_size=5)
    config = bizon.write("p.yml", monitored(source, stream_runner=False))
    if failure == "error":
        agent.inject("/v0.1/pipeline_stats", Fault(status=500, body="agent error"), times=None)
    elif failure == "hangs":  # Past the exporter's 2 s bound on a request.
        agent.inject("/v0.1/pipeline_stats", Fault(delay=4), times=None)
    # For "absent", a port bound for the run but never listening: connections are refused.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as reserved:
        reserved.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{reserved.getsockname()[1]}" if failure == "absent" else agent.url
        result = bizon.run("run", config, "--result-json", "result.json", check=0, env={
            "DD_DATA_STREAMS_ENABLED": "true", "DD_AGENT_HOST": "127.0.0.1",
            "DD_TRACE_AGENT_URL": url, **NO_OTEL})
    outcome = read_result(bizon.cwd / "result.json")
    assert result.returncode == 0 and outcome["status"] == "success", result.stderr
    assert outcome["records_written"] == 20 == len(rows(bizon, "events"))
    assert "cannot send data-streams stats to the Datadog agent, they are dropped" in result.stderr
    assert agent.payloads == []


def test_the_agent_refuses_what_the_intake_does_not_accept(agent):
    def post(body: bytes, content_type="application/msgpack", encoding=None) -> int:
        request = urllib.request.Request(f"{agent.url}/v0.1/pipeline_stats", data=body,
                                         method="POST", headers={"Content-Type": content_type})
        if encoding:
            request.add_header("Content-Encoding", encoding)
        try:
            with urllib.request.urlopen(request) as answer:
                return answer.status
        except urllib.error.HTTPError as error:
            return error.code

    def pack_map(entries: dict) -> bytes:  # fixmap of fixstr keys and fixstr/fixarray values
        out = bytes([0x80 | len(entries)])
        for key, value in entries.items():
            out += bytes([0xA0 | len(key)]) + key.encode()
            if isinstance(value, list):
                out += bytes([0x90 | len(value)]) + b"".join(value)
            else:
                out += bytes([0xA0 | len(value)]) + value.encode()
        return out

    good_header = {"Service": "s", "TracerVersion": "1", "Lang": "cpp"}
    assert post(pack_map(good_header | {"Stats": []}), content_type="application/json") == 400
    assert post(b"\x81", encoding="gzip") == 400  # Not gzip.
    assert post(b"\xc1") == 400  # A type byte msgpack never uses.
    assert post(pack_map({"Service": "s"})) == 400  # Required keys missing.
    assert post(pack_map(good_header | {"Stats": []})) == 400  # No bucket.
    assert post(pack_map(good_header | {"Stats": [pack_map({"Start": "x"})]})) == 400
    assert post(pack_map(good_header | {"Stats": [], "Extra": "x"})) == 400
    assert len(agent.violations) == 7 and agent.payloads == []
    agent.violations.clear()
