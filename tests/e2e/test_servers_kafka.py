"""The Kafka fixture against the real test broker: what the Kafka source and queue tests rely on."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from conftest_kafka import kafka  # noqa: F401 (fixture)
from support.servers import server_pid


def test_produce_then_consume_all_keeps_keys_headers_partitions_and_order(kafka):
    topic = kafka.create_topic(partitions=2)
    assert kafka.partitions(topic) == [0, 1]
    kafka.produce(topic, [{"n": 1}, "two", b"\x00\x01"], keys=[{"id": 1}, "k2", None],
                  headers=[("source", b"test"), ("n", "x")], partition=1)
    kafka.produce(topic, ["p0-a", "p0-b"], headers=[[("h", b"1")], None], partition=0)

    messages = kafka.consume_all(topic)

    assert messages == [
        {"key": None, "value": b"p0-a", "partition": 0, "offset": 0, "headers": [("h", b"1")]},
        {"key": None, "value": b"p0-b", "partition": 0, "offset": 1, "headers": []},
        {"key": b'{"id":1}', "value": b'{"n":1}', "partition": 1, "offset": 0,
         "headers": [("source", b"test"), ("n", b"x")]},
        {"key": b"k2", "value": b"two", "partition": 1, "offset": 1,
         "headers": [("source", b"test"), ("n", b"x")]},
        {"key": None, "value": b"\x00\x01", "partition": 1, "offset": 2,
         "headers": [("source", b"test"), ("n", b"x")]},
    ]
    assert kafka.end_offsets(topic) == {0: 2, 1: 3}


def test_create_topic_with_a_name_and_empty_topics(kafka):
    name = f"named-{uuid.uuid4().hex[:8]}"
    assert kafka.create_topic(name) == name
    assert kafka.consume_all(name) == []
    assert kafka.end_offsets(name) == {0: 0}
    assert kafka.partitions(f"missing-{uuid.uuid4().hex[:8]}") == []


def test_committed_offsets_are_those_a_consumer_group_committed(kafka):
    topic = kafka.create_topic(partitions=2)
    kafka.produce(topic, [f"a{i}" for i in range(5)], partition=0)
    kafka.produce(topic, [f"b{i}" for i in range(3)], partition=1)
    group = f"group-{uuid.uuid4().hex[:8]}"
    assert kafka.committed_offsets(group, topic) == {}

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 4), TopicPartition(topic, 1, 3)],
                        asynchronous=False)
    finally:
        consumer.close()

    assert kafka.committed_offsets(group, topic) == {0: 4, 1: 3}


def test_produce_many_writes_n_messages(kafka):
    topic = kafka.create_topic()
    n = 20_000

    assert kafka.produce_many(topic, n, lambda i: {"id": i, "pad": "x" * 200},
                              make_key=lambda i: str(i)) == n

    assert kafka.end_offsets(topic) == {0: n}
    messages = kafka.consume_all(topic, timeout=60)
    assert [json.loads(m["value"])["id"] for m in messages] == list(range(n))
    assert messages[-1]["key"] == str(n - 1).encode()


@pytest.mark.serial  # restarts the broker
def test_restart_is_an_outage_that_keeps_the_port_and_the_data(kafka):
    topic = kafka.create_topic()
    kafka.produce(topic, ["before"])
    group = f"group-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    consumer.close()
    pid = server_pid("kafka")

    kafka.restart()

    assert server_pid("kafka") not in (None, pid)  # A new broker process.
    kafka.produce(topic, ["after"])  # The shared producer reconnects to the same address.
    assert [m["value"] for m in kafka.consume_all(topic, timeout=30)] == [b"before", b"after"]
    assert kafka.committed_offsets(group, topic) == {0: 1}


def test_consume_all_reads_committed_transactions_past_their_control_records(kafka):
    topic = kafka.create_topic()
    producer = Producer({"bootstrap.servers": kafka.bootstrap,
                         "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"committed")
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, b"aborted")
    producer.flush(30)  # Else the abort drops it unsent.
    producer.abort_transaction(30)

    # Offsets: 0 committed, 1 its commit marker, 2 aborted, 3 its abort marker, which the
    # coordinator writes after abort_transaction returns.
    for _ in range(100):
        if kafka.end_offsets(topic) == {0: 4}:
            break
        time.sleep(0.1)
    assert kafka.end_offsets(topic) == {0: 4}
    assert [(m["offset"], m["value"]) for m in kafka.consume_all(topic)] == [(0, b"committed")]
