"""The kafka source through `bizon run`, against the real test broker and the fake schema registry.

Stream runs are continuous: each test starts one, waits until the output file holds what it
expects, then stops it with SIGTERM, which the stream runner honours after the batch in hand (exit
0, job left running). Every test uses topics and a consumer group of its own.
"""

from __future__ import annotations

import json
import uuid
from decimal import Decimal

import pytest

from conftest_kafka import (  # noqa: F401  (fixtures)
    apicurio_avro,
    confluent_avro,
    debezium_envelope_schema,
    debezium_record,
    kafka,
    schema_registry,
)
from support.exactly_once import assert_messages_exactly_once
from support.kafka import (
    PLAINTEXT,
    config_text,
    data_of,
    group,
    kafka_source,
    positions,
    rows,
    stream_until,
)
from support.pipelines import debezium_transform
from support.processes import spawn, wait_for, wait_for_run
from support.results import State, line_count, read_result


def test_json_topic_streams_to_a_file_and_commits_its_offsets(bizon, kafka):
    topic = kafka.create_topic(partitions=2)
    values = [{"id": i, "name": f"user-{i}", "nested": {"tags": ["a", i]}} for i in range(40)]
    keys = [{"id": i} for i in range(40)]
    kafka.produce(topic, values, keys=keys, headers=[("trace", "abc"), ("origin", b"\xff")])
    source = kafka_source(kafka, {topic: "events"}, group_id=(consumer_group := group()))
    config = bizon.write("p.yml", config_text(source))
    stderr = stream_until(bizon, config, {"events": 40})
    assert "stopping on signal 15" in stderr

    written = rows(bizon, "events")
    data = [json.loads(row["source_data"]) for row in written]
    assert sorted(positions(data)) == sorted(
        (m["partition"], m["offset"]) for m in kafka.consume_all(topic)
    )
    assert len(set(positions(data))) == 40
    for row, record in zip(written, data):
        assert row["source_record_id"] == f"partition_{record['partition']}_offset_{record['offset']}"
        assert list(record) == ["topic", "offset", "partition", "timestamp", "keys", "headers",
                                "value", "schema"]
        assert record["topic"] == topic
        assert record["value"] == values[record["keys"]["id"]]
        assert record["headers"] == {"trace": "abc", "origin": "\ufffd"}
        assert record["schema"] == {}
        assert isinstance(record["timestamp"], int)
    # Offsets reached the group once the cursor was stored; the job stays open.
    assert kafka.committed_offsets(consumer_group, topic) == kafka.end_offsets(topic)
    [job] = State(bizon.cwd).jobs()
    assert job["status"] == "running"


@pytest.mark.parametrize("runner", ["thread", "process"])
def test_stream_under_a_queue_runner_commits_what_its_cursors_recorded(bizon, kafka, runner):
    """The producer (a thread, or a forked process told through a socket) fetches ahead of its
    consumer; the group's offsets follow the consumer's recorded cursors (the producer commits
    them before its next fetch), and end at the topic's end once everything is written."""
    topic = kafka.create_topic(partitions=2)
    # Half in each partition: left to the partitioner, unkeyed messages may all land in one,
    # and an empty partition has no offset to commit.
    kafka.produce(topic, [{"id": i} for i in range(30)], partition=0)
    kafka.produce(topic, [{"id": i} for i in range(30, 60)], partition=1)
    source = kafka_source(kafka, {topic: "events"}, group_id=(consumer_group := group()),
                          batch_size=7)
    config = bizon.write("p.yml", config_text(source, stream_runner=False,
                                              engine={"runner": {"type": runner}},
                                              destination={"name": "file", "config": {
                                                  "destination_id": "unused", "buffer_size": 0}}))
    log = bizon.cwd / "run.log"
    process = spawn(bizon, "run", config, log=log)
    try:
        wait_for_run(process, log, lambda: process.poll() is not None
                     or kafka.committed_offsets(consumer_group, topic) == kafka.end_offsets(topic),
                     timeout=90, what="the group's offsets at the topic's end")
        assert process.poll() is None, f"the stream run ended by itself\n{log.read_text()}"
    finally:
        process.kill()
        process.communicate(timeout=30)
    assert sorted(record["value"]["id"] for record in data_of(bizon, "events")) == list(range(60))
    [job] = State(bizon.cwd).jobs()
    assert job["status"] == "running"
    # A restart resumes from the backend's cursor: nothing again, nothing missing.
    kafka.produce(topic, [{"id": i} for i in range(60, 65)])
    process = spawn(bizon, "run", config)
    try:
        wait_for(lambda: process.poll() is not None
                 or line_count(bizon.cwd / "events.json") >= 65, timeout=90, what="65 lines")
    finally:
        process.kill()
        process.communicate(timeout=30)
    assert sorted(record["value"]["id"] for record in data_of(bizon, "events")) == list(range(65))


def test_stream_resumes_from_the_backend_cursor_not_from_the_group(bizon, kafka):
    topic = kafka.create_topic(partitions=1)
    kafka.produce(topic, [{"n": i} for i in range(10)])
    source = kafka_source(kafka, {topic: "events"})
    config = bizon.write("p.yml", config_text(source))
    stream_until(bizon, config, {"events": 10})
    kafka.produce(topic, [{"n": i} for i in range(10, 25)])
    stream_until(bizon, config, {"events": 25})
    data = data_of(bizon, "events")
    assert [record["value"]["n"] for record in data] == list(range(25))
    [job] = State(bizon.cwd).jobs()  # The same stream job, continued.
    assert job["status"] == "running"


@pytest.mark.parametrize("registry_type", ["confluent", "apicurio"])
def test_avro_values_are_decoded_with_the_registry_schema(bizon, kafka, schema_registry,
                                                          registry_type):
    schema_v1 = {
        "type": "record", "name": "User", "namespace": "shop",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "email", "type": ["null", "string"], "default": None},
            {"name": "role", "type": {"type": "enum", "name": "Role", "symbols": ["ADMIN", "USER"]}},
            {"name": "created_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "birthday", "type": {"type": "int", "logicalType": "date"}},
            {"name": "balance", "type": {"type": "bytes", "logicalType": "decimal",
                                         "precision": 10, "scale": 2}},
            {"name": "tags", "type": {"type": "array", "items": "string"}},
            {"name": "attributes", "type": {"type": "map", "values": "long"}},
        ],
    }
    schema_v2 = {"type": "record", "name": "User", "namespace": "shop",
                 "fields": [{"name": "id", "type": "long"}, {"name": "plan", "type": "string"}]}
    id_v1 = schema_registry.register(f"{registry_type}-value", schema_v1)
    id_v2 = schema_registry.register(f"{registry_type}-value", schema_v2)
    encode = confluent_avro if registry_type == "confluent" else apicurio_avro
    import datetime as dt

    values = []
    for i in range(6):
        values.append(encode(id_v1, schema_v1, {
            "id": i, "email": None if i % 2 else f"u{i}@x.io", "role": "USER",
            "created_at": dt.datetime(2024, 1, 31, 12, 0, 0, 123000, tzinfo=dt.timezone.utc),
            "birthday": dt.date(1990, 5, 17), "balance": Decimal("-12.30"),
            "tags": ["a", "b"], "attributes": {"k": i},
        }))
    for i in range(6, 10):
        values.append(encode(id_v2, schema_v2, {"id": i, "plan": "pro"}))
    topic = kafka.create_topic(partitions=1)
    kafka.produce(topic, values, keys=[{"id": i} for i in range(10)])

    source = kafka_source(kafka, {topic: "users"}, sync_mode="full_refresh",
                          message_encoding="avro", batch_size=3)
    source["authentication"] = {
        "type": "basic",
        "params": {"username": "", "password": ""},
        "schema_registry_type": registry_type,
        "schema_registry_url": schema_registry.url,
    }
    # No SASL on the test broker: the consumer_config names PLAINTEXT, and empty credentials are
    # still set (as the original does) but unused by a plaintext connection.
    config = bizon.write("p.yml", config_text(source, stream_runner=False))
    result = bizon.run("run", config)
    assert result.returncode == 0, result.stderr

    data = data_of(bizon, "users")
    assert [record["value"]["id"] for record in data] == list(range(10))
    first = data[0]["value"]
    assert first == {
        "id": 0, "email": "u0@x.io", "role": "USER", "created_at": "2024-01-31T12:00:00.123000Z",
        "birthday": "1990-05-17", "balance": "-12.30", "tags": ["a", "b"], "attributes": {"k": 0},
    }
    assert data[1]["value"]["email"] is None
    assert data[6]["value"] == {"id": 6, "plan": "pro"}
    assert data[0]["schema"]["name"] == "Envelope"
    assert [f["name"] for f in data[0]["schema"]["fields"]][:2] == ["id", "email"]
    assert data[6]["schema"]["fields"][1]["name"] == "plan"
    # One registry request per schema id, on the registry type's own endpoint.
    assert schema_registry.hits(id_v1) == 1
    assert schema_registry.hits(id_v2) == 1
    paths = sorted(request.path for request in schema_registry.requests)
    if registry_type == "confluent":
        assert paths == [f"/schemas/ids/{id_v1}", f"/schemas/ids/{id_v2}"]
    else:
        assert paths == [f"/apis/registry/v2/ids/globalIds/{id_v1}",
                         f"/apis/registry/v2/ids/globalIds/{id_v2}"]


def test_a_schema_missing_from_the_registry_is_a_clear_error(bizon, kafka, schema_registry):
    schema = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]}
    topic = kafka.create_topic()
    kafka.produce(topic, [confluent_avro(4242, schema, {"id": 1})])
    source = kafka_source(kafka, {topic: "out"}, sync_mode="full_refresh", message_encoding="avro")
    source["authentication"] = {"type": "basic", "params": {"username": "u", "password": "s3cr3t-pw"},
                                "schema_registry_type": "confluent",
                                "schema_registry_url": schema_registry.url}
    source["consumer_config"] = dict(PLAINTEXT)
    config = bizon.write("p.yml", config_text(source, stream_runner=False))
    result = bizon.run("run", config)
    assert result.returncode != 0
    assert f"schema 4242 not found in registry {schema_registry.url}" in result.stderr
    assert f"topic {topic} partition 0 offset 0" in result.stderr
    assert "s3cr3t-pw" not in result.stderr


def test_debezium_changes_become_rows_through_the_original_transform(bizon, kafka, schema_registry):
    from support.python import missing_capability

    if missing_capability("transforms") is not None:
        pytest.skip(str(missing_capability("transforms")))
    envelope = debezium_envelope_schema([("id", "long"), ("email", ["null", "string"])],
                                        server="db_main")
    schema_id = schema_registry.register("dbz-value", envelope)
    changes = [
        debezium_record("c", None, {"id": 1, "email": "a@x.io"}, ts_ms=1706702400000,
                        server="db_main"),
        debezium_record("u", {"id": 1, "email": "a@x.io"}, {"id": 1, "email": "b@x.io"},
                        ts_ms=1706702401500, server="db_main"),
        debezium_record("d", {"id": 1, "email": "b@x.io"}, None, ts_ms=1706702402250,
                        server="db_main"),
    ]
    topic = kafka.create_topic()
    kafka.produce(topic, [confluent_avro(schema_id, envelope, change) for change in changes],
                  keys=[{"id": 1}] * 3)
    source = kafka_source(kafka, {topic: "users"}, message_encoding="avro")
    source["authentication"] = {"type": "basic", "params": {"username": "", "password": ""},
                                "schema_registry_type": "confluent",
                                "schema_registry_url": schema_registry.url}
    config = bizon.write("p.yml", config_text(source, transforms=[debezium_transform()]))
    stream_until(bizon, config, {"users": 3})
    data = data_of(bizon, "users")
    assert data == [
        {"id": 1, "email": "a@x.io", "__deleted": False, "__cluster": "db-main",
         "__kafka_partition": 0, "__kafka_offset": 0,
         "__event_timestamp": "2024-01-31 12:00:00.000000"},
        {"id": 1, "email": "b@x.io", "__deleted": False, "__cluster": "db-main",
         "__kafka_partition": 0, "__kafka_offset": 1,
         "__event_timestamp": "2024-01-31 12:00:01.500000"},
        {"id": 1, "email": "b@x.io", "__deleted": True, "__cluster": "db-main",
         "__kafka_partition": 0, "__kafka_offset": 2,
         "__event_timestamp": "2024-01-31 12:00:02.250000"},
    ]
    assert schema_registry.hits(schema_id) == 1


def test_streams_block_routes_each_topic_to_its_own_file(bizon, kafka):
    users = kafka.create_topic(partitions=2)
    orders = kafka.create_topic(partitions=1)
    kafka.produce(users, [{"user": i} for i in range(12)])
    kafka.produce(orders, [{"order": i} for i in range(7)])
    source = kafka_source(kafka, None)
    streams = [
        {"name": "users", "source": {"topic": users},
         "destination": {"table_id": "proj.ds.users"}},
        {"name": "orders", "source": {"topic": orders},
         "destination": {"table_id": "proj.ds.orders"}},
    ]
    config = bizon.write("p.yml", config_text(source, streams=streams))
    stream_until(bizon, config, {"proj.ds.users": 12, "proj.ds.orders": 7})
    user_rows = data_of(bizon, "proj.ds.users")
    order_rows = data_of(bizon, "proj.ds.orders")
    assert sorted(r["value"]["user"] for r in user_rows) == list(range(12))
    assert sorted(r["value"]["order"] for r in order_rows) == list(range(7))
    assert {r["topic"] for r in user_rows} == {users}
    assert {r["topic"] for r in order_rows} == {orders}
    assert not (bizon.cwd / "unused.json").exists()


def test_streams_block_needs_stream_mode(bizon, kafka):
    source = kafka_source(kafka, None, sync_mode="full_refresh")
    streams = [{"name": "u", "source": {"topic": "t"}, "destination": {"table_id": "p.d.u"}}]
    config = bizon.write("p.yml", config_text(source, stream_runner=False, streams=streams))
    result = bizon.run("config", "validate", config)
    assert result.returncode == 1
    assert "requires source.sync_mode: stream" in result.stderr


def test_full_refresh_reads_every_partition_once_up_to_the_start_watermarks(bizon, kafka):
    topic = kafka.create_topic(partitions=3)
    for partition, count in ((0, 40), (1, 25), (2, 33)):
        kafka.produce(topic, [{"p": partition, "i": i} for i in range(count)], partition=partition)
    # A small batch: many iterations, each touching several partitions.
    source = kafka_source(kafka, {topic: "snapshot"}, sync_mode="full_refresh", batch_size=7)
    config = bizon.write("p.yml", config_text(source, stream_runner=False))
    result = bizon.run("run", config)
    assert result.returncode == 0, result.stderr
    data = data_of(bizon, "snapshot")
    expected = {(p, o) for p, count in ((0, 40), (1, 25), (2, 33)) for o in range(count)}
    assert_messages_exactly_once(data, expected)
    [job] = State(bizon.cwd).jobs()
    assert job["status"] == "succeeded"
    # No group offsets in this mode.
    assert kafka.committed_offsets(source["group_id"], topic) == {}

    # A second full refresh reads the whole topic again, including what arrived since.
    kafka.produce(topic, [{"p": 1, "i": 25}], partition=1)
    result = bizon.run("run", config)
    assert result.returncode == 0, result.stderr
    assert len(data_of(bizon, "snapshot")) == 99


def test_full_refresh_of_an_empty_topic_succeeds_without_rows(bizon, kafka):
    topic = kafka.create_topic(partitions=2)
    source = kafka_source(kafka, {topic: "empty"}, sync_mode="full_refresh")
    config = bizon.write("p.yml", config_text(source, stream_runner=False))
    result = bizon.run("run", config)
    assert result.returncode == 0, result.stderr
    [job] = State(bizon.cwd).jobs()
    assert job["status"] == "succeeded"
    # Without records the file destination never hears of the topic's destination id: it
    # publishes its configured one, empty.
    assert not (bizon.cwd / "empty.json").exists()
    assert data_of(bizon, "unused") == []


def test_skip_flags_and_decode_errors(bizon, kafka):
    topic = kafka.create_topic()
    kafka.produce(topic, [{"ok": 1}, b"not json", b"", {"ok": 2}, "{\"s\": \"a\\ud800b\"}"],
                  keys=[{"k": 1}, {"k": 2}, {"k": 3}, b"plain-key", None])
    # Defaults: the invalid key and the bad value fail the run, naming the message.
    source = kafka_source(kafka, {topic: "out"}, sync_mode="full_refresh")
    config = bizon.write("p.yml", config_text(source, stream_runner=False))
    result = bizon.run("run", config, "--result-json", "r.json")
    assert result.returncode != 0
    assert f"cannot decode the value of topic {topic} partition 0 offset 1" in result.stderr
    assert "invalid JSON at byte 0" in result.stderr
    outcome = read_result(bizon.cwd / "r.json")
    assert outcome["failure_class"] == "source"
    assert outcome["error"].startswith("SourceError: ")

    source.update(skip_message_on_decode_error=True, skip_message_invalid_keys=True)
    config = bizon.write("p.yml", config_text(source, stream_runner=False))
    result = bizon.run("run", config)
    assert result.returncode == 0, result.stderr
    data = data_of(bizon, "out")
    # Offset 1: bad value, 2: tombstone (skip_message_empty_value), 3: key not JSON.
    assert [record["offset"] for record in data] == [0, 4]
    assert data[1]["value"] == {"s": "a\ufffdb"}  # The lone surrogate, repaired.
    assert data[1]["keys"] == {}

    source.update(skip_message_invalid_keys=False)
    config = bizon.write("p.yml", config_text(source, stream_runner=False))
    result = bizon.run("run", config)
    assert result.returncode != 0
    assert "Error while parsing message key" in result.stderr
    assert "plain-key" in result.stderr


def test_check_connection_errors(bizon, kafka):
    topic = kafka.create_topic()
    missing = kafka_source(kafka, {"no-such-topic-" + uuid.uuid4().hex[:6]: "x"})
    result = bizon.run("run", bizon.write("p.yml", config_text(missing)), timeout=60)
    assert result.returncode != 0
    assert "Topic no-such-topic-" in result.stderr and "not found" in result.stderr

    unreachable = kafka_source(kafka, {topic: "x"}, bootstrap_servers="127.0.0.1:1")
    result = bizon.run("run", bizon.write("p.yml", config_text(unreachable)), timeout=60)
    assert result.returncode != 0
    assert "Kafka connection failed" in result.stderr
    assert "127.0.0.1:1" in result.stderr

    no_topics = kafka_source(kafka, None)
    result = bizon.run("run", bizon.write("p.yml", config_text(no_topics)), timeout=60)
    assert result.returncode != 0
    assert "No topics configured" in result.stderr


def test_a_setting_librdkafka_refuses_is_a_config_error_naming_it(bizon, kafka):
    """Every consumer_config entry is checked as it is handed to librdkafka: a misspelt property
    or a refused value fails the run before anything is read, naming the property and where it
    was written, and never the credentials."""
    topic = kafka.create_topic()
    kafka.produce(topic, [{"id": 1}])
    source = kafka_source(kafka, {topic: "out"}, sync_mode="full_refresh")
    source["consumer_config"]["fetch.min.byte"] = 1
    source["authentication"] = {"type": "basic",
                                "params": {"username": "alice", "password": "kafka-pw-31337"}}
    config = bizon.write("p.yml", config_text(source, stream_runner=False))
    result = bizon.run("run", config, timeout=60)
    assert result.returncode != 0
    assert ("source.consumer_config.fetch.min.byte: librdkafka rejects fetch.min.byte"
            in result.stderr), result.stderr
    assert "kafka-pw-31337" not in result.stderr
    assert not (bizon.cwd / "out.json").exists()

    # A refused value: librdkafka quotes it, unless it is a secret.
    del source["consumer_config"]["fetch.min.byte"]
    source["consumer_config"]["auto.offset.reset"] = "kafka-pw-31337"
    config = bizon.write("p.yml", config_text(source, stream_runner=False))
    result = bizon.run("run", config, timeout=60)
    assert result.returncode != 0
    assert ("source.consumer_config.auto.offset.reset: librdkafka rejects auto.offset.reset"
            in result.stderr), result.stderr
    assert "kafka-pw-31337" not in result.stderr


def test_registry_basic_auth_is_sent_and_kept_out_of_logs(bizon, kafka, schema_registry):
    schema = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]}
    schema_id = schema_registry.register("auth-value", schema)
    schema_registry.require_auth("reader", "registry-pw-9876")
    topic = kafka.create_topic()
    kafka.produce(topic, [apicurio_avro(schema_id, schema, {"id": i}) for i in range(3)])
    source = kafka_source(kafka, {topic: "out"}, sync_mode="full_refresh", message_encoding="avro")
    source["authentication"] = {"type": "basic", "params": {"username": "", "password": ""},
                                "schema_registry_url": schema_registry.url,
                                "schema_registry_username": "reader",
                                "schema_registry_password": "wrong-pw-5555"}
    config = bizon.write("p.yml", config_text(source, stream_runner=False))
    refused = bizon.run("run", config)
    assert refused.returncode != 0
    assert "401" in refused.stderr
    assert "wrong-pw-5555" not in refused.stderr

    source["authentication"]["schema_registry_password"] = "registry-pw-9876"
    config = bizon.write("p.yml", config_text(source, stream_runner=False))
    result = bizon.run("run", config)
    assert result.returncode == 0, result.stderr
    assert [record["value"] for record in data_of(bizon, "out")] == [{"id": i} for i in range(3)]
    assert "registry-pw-9876" not in result.stderr
    granted = [r for r in schema_registry.requests if r.status == 200]
    assert [(r.method, r.path, r.user) for r in granted] == [
        ("GET", f"/apis/registry/v2/ids/globalIds/{schema_id}", "reader")]


def test_commit_offsets_production_commits_only_under_environment_production(bizon, kafka):
    """The original committed a stream's offsets only with ENVIRONMENT=production; ours always
    does, unless `commit_offsets: production` asks for the original's rule. Progress is kept by
    the backend's cursor either way: the second run resumes after the first one's records."""
    topic = kafka.create_topic(partitions=1)
    kafka.produce(topic, [{"id": i} for i in range(10)])
    source = kafka_source(kafka, {topic: "events"}, group_id=(consumer_group := group()),
                          commit_offsets="production")
    config = bizon.write("p.yml", config_text(source))
    stream_until(bizon, config, {"events": 10}, env={"ENVIRONMENT": "staging"})
    assert kafka.committed_offsets(consumer_group, topic) == {}

    kafka.produce(topic, [{"id": i} for i in range(10, 15)])
    stream_until(bizon, config, {"events": 15}, env={"ENVIRONMENT": "production"})
    assert kafka.committed_offsets(consumer_group, topic) == kafka.end_offsets(topic) == {0: 15}
    assert sorted(record["value"]["id"] for record in data_of(bizon, "events")) == list(range(15))
