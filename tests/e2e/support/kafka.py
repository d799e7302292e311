"""Kafka source pipelines on the test broker (the `kafka` fixture of conftest_kafka.py) and what
they wrote.

Stream runs are continuous: `stream_until` starts one, waits until the output files hold what the
test expects, then stops it with SIGTERM, which the stream runner honours after the batch in hand
(exit 0, job left running). Every test uses topics and a consumer group of its own.
"""

from __future__ import annotations

import uuid

import pytest

from support.pipelines import file_destination, pipeline
from support.processes import spawn, stop, wait_for
from support.results import line_count, source_data

PLAINTEXT = {
    "auto.offset.reset": "earliest",
    "enable.auto.commit": False,
    "security.protocol": "PLAINTEXT",
}


def group() -> str:
    return f"bizon-e2e-{uuid.uuid4().hex[:10]}"


def kafka_source(kafka, topics, sync_mode="stream", **options) -> dict:
    """A kafka source block; `topics` maps topic name -> destination id."""
    source = {
        "name": "kafka",
        "stream": "topic",
        "sync_mode": sync_mode,
        "bootstrap_servers": kafka.bootstrap,
        "group_id": options.pop("group_id", None) or group(),
        "message_encoding": "utf-8",
        "consumer_timeout": 2,
        "batch_size": 500,
        "consumer_config": dict(PLAINTEXT),
    }
    if topics is not None:
        source["topics"] = [{"name": name, "destination_id": dest} for name, dest in topics.items()]
    source.update(options)
    return source


def config_text(source: dict, stream_runner: bool = True, **root) -> str:
    """A pipeline of a kafka source into the file destination unless `root` names another (each
    topic's records land in <destination_id>.json), under the stream runner unless told
    otherwise."""
    destination = root.pop("destination", None) or file_destination("unused")
    if stream_runner:
        root = {"engine": {"runner": {"type": "stream"}}, **root}
    return pipeline(f"kafka-{uuid.uuid4().hex[:6]}", source, destination, **root)


def rows(bizon, name: str) -> list[dict]:
    return bizon.read_ndjson(f"{name}.json")


def data_of(bizon, name: str) -> list[dict]:
    return source_data(rows(bizon, name))


def positions(data: list[dict]) -> list[tuple[int, int]]:
    """The (partition, offset) of each record the kafka source delivered."""
    return [(record["partition"], record["offset"]) for record in data]


def expected_positions(kafka, topic) -> set[tuple[int, int]]:
    """Every (partition, offset) the topic holds."""
    return {(p, o) for p, end in kafka.end_offsets(topic).items() for o in range(end)}


def stream_until(bizon, config, files: dict[str, int], env=None, timeout: float = 120) -> str:
    """Runs the stream until every file holds its number of lines, then stops it."""
    process = spawn(bizon, "run", config, env=env)
    try:
        wait_for(
            lambda: process.poll() is not None
            or all(line_count(bizon.cwd / f"{name}.json") >= n for name, n in files.items()),
            timeout=timeout,
            what=f"lines in {files}",
        )
    except AssertionError:
        process.kill()
        _, stderr = process.communicate(timeout=30)
        raise AssertionError(f"stream did not deliver {files}\n{stderr[-4000:]}") from None
    assert process.poll() is None, f"the stream run ended by itself\n{process.communicate()[1]}"
    return stop(process)


def slow_first_batch(bizon, kafka, static: bool):
    """A topic of 30 messages and a pipeline whose first batch takes 9 s, longer than its
    max.poll.interval.ms (6 s); `static` keeps static membership on, else an empty
    group.instance.id turns it off. Returns the topic, the consumer group and the config."""
    # Imported here: support.python probes the binary when first imported.
    from support.python import missing_capability

    if missing_capability("transforms") is not None:
        pytest.skip(str(missing_capability("transforms")))
    topic = kafka.create_topic()
    kafka.produce(topic, [{"n": i} for i in range(30)])
    source = kafka_source(kafka, {topic: "events"}, batch_size=10, consumer_timeout=1,
                          group_id=(consumer_group := group()))
    source["consumer_config"].update({"session.timeout.ms": 6000, "max.poll.interval.ms": 6000})
    if not static:
        source["consumer_config"]["group.instance.id"] = ""
    slow = [{"label": "slow", "python": "import time\nif data['offset'] == 0:\n    time.sleep(9)\n"}]
    return topic, consumer_group, bizon.write("p.yml", config_text(source, transforms=slow))
