"""Kafka for the kafka, members and bigquery-streaming cases: the topic of the bench's records
(kafka_setup), our kafka source's YAML reading it, and why those cases cannot run (pending)."""

from __future__ import annotations

import json
import os
import time
from typing import Optional

from harness.core import Harness
from harness.records import PAGE_SIZE, PAYLOAD_BYTES, generator_payload


def pending(h: Harness) -> Optional[str]:
    """Why the cases reading kafka cannot run (our source, the broker, the producer's library),
    or None."""
    reasons = [why] if (why := h.probe_source_built("kafka")) else []
    if not os.environ.get("BIZON_BENCH_KAFKA"):
        reasons.append("needs a broker: set BIZON_BENCH_KAFKA=host:port (bench/run.sh then "
                       "installs bizon[kafka] and loads the topic)")
    if reasons:
        return "; ".join(reasons)
    try:
        import confluent_kafka  # noqa: F401  (installed by bizon[kafka])
    except ImportError:
        return ("confluent-kafka is missing from bench/.venv: re-run bench/run.sh with "
                "BIZON_BENCH_KAFKA set so it installs bizon[kafka]")
    return None


def kafka_source_yaml(broker: str, topic: str, group: str, sync_mode: str = "full_refresh",
                      destination_id: str = "out", extra: str = "",
                      consumer_config: str = "") -> str:
    """The `source:` block of our kafka source reading `topic` (the bench's records, plaintext);
    `extra` adds settings to it, `consumer_config` to its consumer_config (lines indented as they
    go)."""
    return f"""\
source:
  name: kafka
  stream: topic
  sync_mode: {sync_mode}
  topics:
    - name: {topic}
      destination_id: {destination_id}
  bootstrap_servers: {broker}
  group_id: {group}
  batch_size: {PAGE_SIZE}
  consumer_timeout: 2
  message_encoding: utf-8
{extra}  authentication:
    type: basic
    params:
      username: unused
      password: unused
  consumer_config:
    auto.offset.reset: earliest
    enable.auto.commit: false
    security.protocol: PLAINTEXT
{consumer_config}"""


def kafka_setup(broker: str, n: int, partitions: int = 1) -> str:
    """Creates (once) a topic of `partitions` partitions holding n JSON records of ~300 B and
    returns its name.

    Record i is the generator record i (the same payload as every other case), key {"id": i},
    in partition i % partitions. An existing topic of that name with exactly n messages from
    offset 0 is reused as is.
    """
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"bizon-bench-{n}-{PAYLOAD_BYTES}" + (f"-{partitions}p" if partitions > 1 else "")
    admin = AdminClient({"bootstrap.servers": broker})
    metadata = admin.list_topics(timeout=10)
    if topic in metadata.topics:
        consumer = Consumer({"bootstrap.servers": broker, "group.id": "bizon-bench-setup"})
        marks = [consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
                 for partition in metadata.topics[topic].partitions]
        consumer.close()
        if (len(marks) == partitions and all(low == 0 for low, _ in marks)
                and sum(high for _, high in marks) == n):
            return topic
        for future in admin.delete_topics([topic]).values():
            future.result()
        time.sleep(2)
    for future in admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                                replication_factor=1)]).values():
        future.result()
    print(f"  kafka: loading {n:,} records into {topic} on {broker}", flush=True)
    producer = Producer({"bootstrap.servers": broker, "linger.ms": 50, "batch.size": 1 << 20,
                         "compression.type": "lz4", "enable.idempotence": True})
    for i in range(n):
        value = generator_payload(i)
        while True:
            try:
                producer.produce(topic, value=value.encode(), key=json.dumps({"id": i}).encode(),
                                 partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.1)
        if i % 10000 == 0:
            producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError(f"kafka: {topic}: some records were not delivered")
    return topic

