"""Fixtures and helpers for the Kafka end-to-end tests: a real broker and a fake schema registry.

The broker is the one `scripts/test-servers.sh start kafka` runs on loopback (Apache Kafka, one
KRaft node; see the script). Its address comes from BIZON_KAFKA_BOOTSTRAP; when that is not set,
the `kafka` fixture starts the broker itself with the same script, so `pytest tests/e2e` works on
its own. The tests talk to it with confluent-kafka (librdkafka underneath, like bizon itself).

    def test_x(bizon, kafka, schema_registry):
        topic = kafka.create_topic(partitions=2)
        schema_id = schema_registry.register(f"{topic}-value", SCHEMA)
        kafka.produce(topic, [confluent_avro(schema_id, SCHEMA, {"id": 1})], keys=[{"id": 1}])
        ... run bizon ...
        assert kafka.committed_offsets("bizon", topic) == {0: 1}
        assert schema_registry.hits(schema_id) == 1

Test modules import what they use (`from conftest_kafka import kafka, schema_registry`), as with
conftest_postgres.

Message values, keys and headers: bytes are sent as they are, str as UTF-8, dict/list as JSON.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import time
import uuid
from pathlib import Path

import pytest

from schema_registry import FakeSchemaRegistry
from support.servers import import_or_skip, run_servers, skip_or_fail

confluent_kafka = import_or_skip("confluent_kafka")
fastavro = import_or_skip("fastavro")
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def encode(value) -> bytes | None:
    """bytes as they are, str as UTF-8, anything else (dict, list, number) as JSON."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return json.dumps(value, separators=(",", ":")).encode()


class Kafka:
    """The test broker: create topics, produce, read back, inspect offsets, restart."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self._admin = AdminClient({"bootstrap.servers": bootstrap})
        self._producer: Producer | None = None

    # -- topics ------------------------------------------------------------------------------

    def partitions(self, topic: str, timeout: float = 10) -> list[int]:
        """The partition ids of `topic` (empty when it does not exist). Lists every topic rather
        than asking for this one, which could create it on a broker that auto-creates."""
        metadata = self._admin.list_topics(timeout=timeout)
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            return []
        return sorted(found.partitions)

    def create_topic(self, name: str | None = None, partitions: int = 1) -> str:
        """Creates a topic (a unique name when none is given) and waits until every partition
        has a leader."""
        name = name or f"bizon-test-{uuid.uuid4().hex[:12]}"
        futures = self._admin.create_topics([NewTopic(name, num_partitions=partitions,
                                                      replication_factor=1)],
                                            operation_timeout=30)
        futures[name].result(timeout=60)
        deadline = time.monotonic() + 30
        while True:
            metadata = self._admin.list_topics(timeout=10).topics.get(name)
            if (metadata is not None and metadata.error is None
                    and len(metadata.partitions) == partitions
                    and all(p.leader >= 0 for p in metadata.partitions.values())):
                return name
            if time.monotonic() > deadline:
                raise AssertionError(f"topic {name} has no leader for every partition after 30 s")
            time.sleep(0.1)

    def delete_topic(self, name: str) -> None:
        """Deletes a topic and its data (for tests that leave big topics behind)."""
        self._admin.delete_topics([name], operation_timeout=30)[name].result(timeout=60)

    # -- producing ---------------------------------------------------------------------------

    def _shared_producer(self) -> Producer:
        if self._producer is None:
            self._producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5,
                                       "acks": "all", "enable.idempotence": True})
        return self._producer

    def produce(self, topic: str, values, keys=None, headers=None, partition=None) -> None:
        """Produces one message per value and returns once the broker has acknowledged all.

        `keys`: None or one key per value. `headers`: None, one list of (name, value) pairs for
        every message, or a list with one such list (or None) per message. `partition`: None
        (the partitioner picks, by key) or a partition id for all."""
        values = list(values)
        if keys is not None and len(keys) != len(values):
            raise ValueError(f"{len(keys)} keys for {len(values)} values")
        per_message = headers is not None and len(headers) > 0 and (
            headers[0] is None or isinstance(headers[0], list))
        if per_message and len(headers) != len(values):
            raise ValueError(f"{len(headers)} header lists for {len(values)} values")
        errors = []

        def delivered(error, _message):
            if error is not None:
                errors.append(error)

        producer = self._shared_producer()
        for index, value in enumerate(values):
            these = headers[index] if per_message else headers
            options = {"value": encode(value), "on_delivery": delivered}
            if keys is not None:
                options["key"] = encode(keys[index])
            if these:
                options["headers"] = [(name, encode(data)) for name, data in these]
            if partition is not None:
                options["partition"] = partition
            self._produce_one(producer, topic, options)
        self._flush(producer, errors, len(values))

    def produce_many(self, topic: str, n: int, make_value, make_key=None) -> int:
        """Produces n messages, value make_value(i) (and key make_key(i)), as fast as one Python
        thread can (about 1M small messages a minute here); returns n once all are acknowledged."""
        errors = []

        def delivered(error, _message):
            if error is not None:
                errors.append(error)

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 50,
                             "batch.size": 1_000_000, "queue.buffering.max.messages": 500_000,
                             "queue.buffering.max.kbytes": 512 * 1024, "acks": "all",
                             "compression.type": "none", "on_delivery": delivered})
        for index in range(n):
            value = encode(make_value(index))
            key = encode(make_key(index)) if make_key is not None else None
            while True:
                try:
                    producer.produce(topic, value, key)
                    break
                except BufferError:
                    producer.poll(0.05)  # The local queue is full: let deliveries drain it.
            if index % 10_000 == 0:
                producer.poll(0)
        self._flush(producer, errors, n)
        return n

    @staticmethod
    def _produce_one(producer: Producer, topic: str, options: dict) -> None:
        while True:
            try:
                producer.produce(topic, **options)
                return
            except BufferError:
                producer.poll(0.05)

    @staticmethod
    def _flush(producer: Producer, errors: list, count: int) -> None:
        left = producer.flush(60)
        if left:
            raise AssertionError(f"{left} of {count} messages still unacknowledged after 60 s")
        if errors:
            raise AssertionError(f"{len(errors)} of {count} messages failed: {errors[0]}")

    # -- reading -----------------------------------------------------------------------------

    def _consumer(self, group: str | None = None, eof: bool = False,
                  isolation: str = "read_committed") -> Consumer:
        return Consumer({"bootstrap.servers": self.bootstrap,
                         "group.id": group or f"bizon-test-reader-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "enable.partition.eof": eof, "isolation.level": isolation})

    def end_offsets(self, topic: str) -> dict[int, int]:
        """{partition: high watermark} (the offset the next message will get; transaction
        markers count, and so do messages of open transactions)."""
        consumer = self._consumer(isolation="read_uncommitted")
        try:
            return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                    for p in self.partitions(topic)}
        finally:
            consumer.close()

    def consume_all(self, topic: str, timeout: float = 10) -> list[dict]:
        """Every message of `topic` up to the current end of each partition, in partition then
        offset order, as {key, value, partition, offset, headers} (key/value bytes or None,
        headers a list of (name, bytes)). Reads without a consumer group's offsets, committed
        transactions only: the end of a partition is its last stable offset, and a partition is
        done at its end-of-partition event, so transaction markers do not keep it waiting."""
        consumer = self._consumer(eof=True)
        try:
            ends, starts = {}, {}
            for p in self.partitions(topic):
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                if high > low:
                    ends[p], starts[p] = high, low
            if not ends:
                return []
            consumer.assign([TopicPartition(topic, p, starts[p]) for p in ends])
            reached = {p: starts[p] for p in ends}  # The next offset to read, as far as we know.
            messages = []
            deadline = time.monotonic() + timeout
            while any(reached[p] < ends[p] for p in ends):
                if time.monotonic() > deadline:
                    raise AssertionError(f"read {len(messages)} messages of {topic} in {timeout} s;"
                                         f" reached {reached}, ends {ends}")
                for message in consumer.consume(num_messages=10_000, timeout=0.5):
                    error = message.error()
                    p, offset = message.partition(), message.offset()
                    if error is not None:
                        if error.code() != KafkaError._PARTITION_EOF:
                            raise KafkaException(error)
                        reached[p] = max(reached[p], offset)  # EOF carries the end offset.
                        continue
                    reached[p] = max(reached[p], offset + 1)
                    if offset < ends[p]:
                        messages.append({"key": message.key(), "value": message.value(),
                                         "partition": p, "offset": offset,
                                         "headers": list(message.headers() or [])})
            messages.sort(key=lambda m: (m["partition"], m["offset"]))
            return messages
        finally:
            consumer.close()

    def committed_offsets(self, group: str, topic: str) -> dict[int, int]:
        """{partition: committed offset} of consumer group `group` (partitions without a
        committed offset are left out)."""
        consumer = self._consumer(group)
        try:
            wanted = [TopicPartition(topic, p) for p in self.partitions(topic)]
            if not wanted:
                return {}
            return {tp.partition: tp.offset for tp in consumer.committed(wanted, timeout=10)
                    if tp.offset >= 0}
        finally:
            consumer.close()

    # -- faults ------------------------------------------------------------------------------

    def restart(self) -> None:
        """Stops the broker's JVM and starts it again on the same port with the same data: every
        client loses its connections, then reconnects."""
        run_servers("restart", "kafka")


@pytest.fixture(scope="session")
def kafka() -> Kafka:
    """The test broker, started here when BIZON_KAFKA_BOOTSTRAP is not set."""
    bootstrap = os.environ.get("BIZON_KAFKA_BOOTSTRAP")
    if not bootstrap:
        if shutil.which("java") is None and not Path("/usr/lib/jvm").exists():
            skip_or_fail("Java is not installed; scripts/install-deps.sh --with-test-servers "
                        "installs it")
        env = run_servers("start", "kafka")
        bootstrap = env.get("BIZON_KAFKA_BOOTSTRAP")
        if not bootstrap:
            pytest.fail("scripts/test-servers.sh start kafka printed no BIZON_KAFKA_BOOTSTRAP")
        os.environ.update(env)  # For the bizon processes the tests start.
    return Kafka(bootstrap)


# -- schema registry -------------------------------------------------------------------------


class SchemaRegistry:
    """A fake registry for one test: Confluent API v1 and Apicurio API v2 over one id space."""

    def __init__(self, fake: FakeSchemaRegistry):
        self.fake = fake

    @property
    def url(self) -> str:
        return self.fake.url

    def register(self, subject: str, schema, schema_type: str = "AVRO",
                 schema_id: int | None = None) -> int:
        return self.fake.register(subject, schema, schema_type, schema_id)

    def require_auth(self, username: str, password: str) -> None:
        self.fake.require_auth(username, password)

    @property
    def requests(self):
        """Every request answered so far: `.method .path .query .user .status`."""
        return list(self.fake.calls)

    def hits(self, schema_id: int) -> int:
        return self.fake.hits(schema_id)

    @property
    def violations(self) -> list[str]:
        return self.fake.violations


@pytest.fixture
def schema_registry():
    """A fresh fake registry (no auth; `require_auth(user, password)` turns it on). The test
    fails at teardown if the client sent anything off-contract."""
    fake = FakeSchemaRegistry().start()
    try:
        yield SchemaRegistry(fake)
        assert fake.violations == [], f"off-contract schema registry requests: {fake.violations}"
    finally:
        fake.stop()


# -- Avro wire formats -----------------------------------------------------------------------


def avro_binary(schema_dict, record) -> bytes:
    """`record` in Avro binary (no header, no container), as fastavro's schemaless writer."""
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema_dict), record)
    return buffer.getvalue()


def confluent_avro(schema_id: int, schema_dict, record) -> bytes:
    """Confluent's wire format: magic byte 0, the schema id as 4 bytes big-endian, Avro."""
    return b"\x00" + struct.pack(">I", schema_id) + avro_binary(schema_dict, record)


def apicurio_avro(global_id: int, schema_dict, record) -> bytes:
    """Apicurio's (8-byte id) wire format: magic byte 0, the global id as 8 bytes big-endian,
    Avro."""
    return b"\x00" + struct.pack(">q", global_id) + avro_binary(schema_dict, record)


# -- Debezium ---------------------------------------------------------------------------------


def _avro_field(field) -> dict:
    if isinstance(field, dict):
        return field
    name, avro_type = field
    return {"name": name, "type": avro_type}


def debezium_envelope_schema(table_fields, server: str = "dbserver1", schema: str = "public",
                             table: str = "users") -> dict:
    """The Avro value schema of Debezium's PostgreSQL connector for one table, as its Avro
    converter registers it: Envelope {before, after: Value|null, source, op, ts_ms, transaction}.
    `table_fields` are Avro fields (dicts) or (name, type) pairs for the row's columns."""
    namespace = f"{server}.{schema}.{table}"
    value = {"type": "record", "name": "Value", "namespace": namespace,
             "fields": [_avro_field(field) for field in table_fields],
             "connect.name": f"{namespace}.Value"}
    optional_long = ["null", "long"]
    source = {
        "type": "record", "name": "Source", "namespace": "io.debezium.connector.postgresql",
        "fields": [
            {"name": "version", "type": "string"},
            {"name": "connector", "type": "string"},
            {"name": "name", "type": "string"},
            {"name": "ts_ms", "type": "long"},
            {"name": "snapshot", "default": "false",
             "type": [{"type": "string", "connect.version": 1,
                       "connect.parameters": {"allowed": "true,last,false,incremental"},
                       "connect.default": "false", "connect.name": "io.debezium.data.Enum"},
                      "null"]},
            {"name": "db", "type": "string"},
            {"name": "sequence", "type": ["null", "string"], "default": None},
            {"name": "schema", "type": "string"},
            {"name": "table", "type": "string"},
            {"name": "txId", "type": optional_long, "default": None},
            {"name": "lsn", "type": optional_long, "default": None},
            {"name": "xmin", "type": optional_long, "default": None},
        ],
        "connect.name": "io.debezium.connector.postgresql.Source",
    }
    transaction = {
        "type": "record", "name": "block", "namespace": "event",
        "fields": [{"name": "id", "type": "string"}, {"name": "total_order", "type": "long"},
                   {"name": "data_collection_order", "type": "long"}],
        "connect.version": 1, "connect.name": "event.block",
    }
    return {
        "type": "record", "name": "Envelope", "namespace": namespace,
        "fields": [
            {"name": "before", "type": ["null", value], "default": None},
            {"name": "after", "type": ["null", f"{namespace}.Value"], "default": None},
            {"name": "source", "type": source},
            {"name": "op", "type": "string"},
            {"name": "ts_ms", "type": optional_long, "default": None},
            {"name": "transaction", "type": ["null", transaction], "default": None},
        ],
        "connect.version": 1, "connect.name": f"{namespace}.Envelope",
    }


def debezium_record(op: str, before, after, ts_ms: int, db: str = "bizon",
                    table: str = "users", schema: str = "public",
                    server: str = "dbserver1", lsn: int | None = None) -> dict:
    """One change event for debezium_envelope_schema: op is "c" (insert), "u", "d" or "r"
    (snapshot read); before/after are the row dicts or None."""
    if op not in ("c", "u", "d", "r", "t"):
        raise ValueError(f"unknown Debezium op {op!r}")
    return {
        "before": before,
        "after": after,
        "source": {"version": "2.7.3.Final", "connector": "postgresql", "name": server,
                   "ts_ms": ts_ms, "snapshot": "true" if op == "r" else "false", "db": db,
                   "sequence": None, "schema": schema, "table": table, "txId": None,
                   "lsn": lsn, "xmin": None},
        "op": op,
        "ts_ms": ts_ms,
        "transaction": None,
    }
