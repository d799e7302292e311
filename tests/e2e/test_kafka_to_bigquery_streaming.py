"""kafka (the test broker) -> bigquery_streaming and -> bigquery_streaming_v2 (the emulator) in
stream mode, from the original's example config kafka_to_bigquery_streaming.yml with what makes
it invalid taken out (`topic`, `table_id`) and its servers pointed at the test ones: JSON and
Avro topics, raw and unnest modes. Every message lands once in the table, and the run stays up
until it is stopped.

Under CI=true a missing broker or emulator fails these tests (their fixtures)."""

from __future__ import annotations

import json
import os
import random
import time
import uuid

import pytest
import yaml

from conftest_google import bigquery_emulator  # noqa: F401 (fixture)
from conftest_kafka import confluent_avro, kafka, schema_registry  # noqa: F401 (fixtures)
from support.exactly_once import assert_exactly_once
from support.kafka import PLAINTEXT, expected_positions, group, kafka_source
from support.paths import SHAPES
from support.pipelines import pipeline, runner
from support.processes import kill, killed_after, spawn, stop, wait_for_run

SHAPE = SHAPES / "kafka_to_bigquery_streaming.yml"
COUNT = 40
SEED = int(os.environ.get("BIZON_KILL_SEED", "20261205"))
KILLS = 20
ORDER = {"type": "record", "name": "Order", "namespace": "shop",
         "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}


@pytest.fixture
def dataset(bigquery_emulator) -> str:
    name = f"bq_kafka_{uuid.uuid4().hex[:10]}"
    bigquery_emulator.create_dataset(name)
    return name


def example(kafka, emulator, dataset: str, destination: str, topic: str, table: str,
            registry=None, unnest: bool = False) -> dict:
    """The original's example, edited as little as the test servers need."""
    config = yaml.safe_load(SHAPE.read_text())
    source = config["source"]
    del source["topic"]  # Not a kafka option: the topics come from `topics`.
    source.update(sync_mode="stream", bootstrap_servers=kafka.bootstrap, group_id=group(),
                  consumer_timeout=2, consumer_config=dict(PLAINTEXT),
                  topics=[{"name": topic, "destination_id": table}])
    auth = source["authentication"]
    auth["params"] = {"username": "", "password": ""}  # A plaintext broker: unused.
    del auth["schema_registry_username"], auth["schema_registry_password"]
    if registry is None:
        source["message_encoding"] = "utf-8"
        del auth["schema_registry_url"]
    else:
        source["message_encoding"] = "avro"
        auth.update(schema_registry_type="confluent", schema_registry_url=registry.url)
    settings = config["destination"]["config"]
    config["destination"]["name"] = destination
    del settings["table_id"]  # Rejected: the table is the topic's destination_id.
    settings.update(project_id=emulator.project, dataset_id=dataset, buffer_size=0)
    if unnest:
        settings.update(unnest=True, record_schemas=[{
            "destination_id": table,
            "record_schema": [{"name": "id", "type": "INTEGER", "mode": "REQUIRED"},
                              {"name": "name", "type": "STRING", "mode": "NULLABLE"}]}])
        config["transforms"] = [{"label": "value", "python": "data = data['value']\n"}]
    config["engine"] = runner("stream")
    return config


@pytest.mark.parametrize("destination", ["bigquery_streaming", "bigquery_streaming_v2"])
@pytest.mark.parametrize("encoding", ["json", "avro"])
@pytest.mark.parametrize("mode", ["raw", "unnest"])
def test_a_topic_streams_into_the_table_once(bizon, kafka, schema_registry, bigquery_emulator,
                                              dataset, destination, encoding, mode):
    emulator = bigquery_emulator
    topic = kafka.create_topic(partitions=2)
    orders = [{"id": i, "name": f"order-{i}"} for i in range(COUNT)]
    registry = schema_registry if encoding == "avro" else None
    if registry is None:
        values = orders
    else:
        schema_id = registry.register(f"{topic}-value", ORDER)
        values = [confluent_avro(schema_id, ORDER, order) for order in orders]
    kafka.produce(topic, values, keys=[{"id": order["id"]} for order in orders])
    table = f"{emulator.project}.{dataset}.orders"
    config = bizon.write("p.yml", yaml.safe_dump(example(
        kafka, emulator, dataset, destination, topic, table, registry, unnest=mode == "unnest")))

    def landed() -> int:
        tables = emulator.bq("GET", f"datasets/{dataset}/tables").get("tables", [])
        if "orders" not in {t["tableReference"]["tableId"] for t in tables}:
            return 0
        return int(emulator.query(f"SELECT COUNT(*) AS n FROM `{table}`")[0]["n"])

    log = bizon.cwd / "run.log"
    process = spawn(bizon, "run", config, log=log)
    try:
        wait_for_run(process, log, lambda: process.poll() is not None or landed() >= COUNT,
                     timeout=120, interval=0.5, what=f"{COUNT} rows in {table}")
        assert process.poll() is None, f"the stream run ended by itself\n{log.read_text()}"
    except BaseException:
        process.kill()
        process.communicate(timeout=30)
        raise
    stop(process)
    assert "stopping on signal 15" in log.read_text()
    if mode == "raw":
        found = emulator.query(f"SELECT _source_record_id, _source_data FROM `{table}`")
        values = [json.loads(row["_source_data"])["value"] for row in found]
        assert all(row["_source_record_id"].startswith("partition_") for row in found)
    else:
        values = [{"id": int(row["id"]), "name": row["name"]}
                  for row in emulator.query(f"SELECT id, name FROM `{table}`")]
    assert sorted(values, key=lambda value: value["id"]) == orders


def kafka_v2_pipeline(kafka, emulator, dataset: str, topic: str, table: str) -> str:
    source = kafka_source(kafka, {topic: table}, batch_size=40, consumer_timeout=1)
    destination = {"name": "bigquery_streaming_v2", "config": {
        "project_id": emulator.project, "dataset_id": dataset, "buffer_size": 0}}
    return pipeline(f"kafka-v2-{uuid.uuid4().hex[:6]}", source, destination,
                    engine=runner("stream"))


def record_positions(emulator, table: str) -> list[tuple[int, int]] | None:
    """(partition, offset) of every row of `table`, from _source_record_id."""
    try:
        found = emulator.query(f"SELECT _source_record_id FROM `{table}`")
    except Exception:  # noqa: BLE001 (not created yet: nothing landed)
        return None
    out = []
    for row in found:
        _, partition, _, offset = row["_source_record_id"].split("_")
        out.append((int(partition), int(offset)))
    return out


def stream_to_the_end(bizon, config, emulator, table: str, expected: set) -> None:
    """A last run, until the table holds every message, then 2 s more (a late duplicate would
    show), stopped with SIGTERM."""
    log = bizon.cwd / "last.log"
    process = spawn(bizon, "run", config, log=log)
    try:
        wait_for_run(process, log, lambda: process.poll() is not None
                     or len(record_positions(emulator, table) or []) >= len(expected),
                     timeout=180, interval=0.5, what=f"{len(expected)} rows in {table}")
        assert process.poll() is None, f"the stream run ended by itself\n{log.read_text()}"
        time.sleep(2)
    except BaseException:
        kill(process)
        raise
    stop(process)


@pytest.mark.long
def test_kafka_stream_killed_twenty_times_lands_every_message_once(
        bizon, kafka, bigquery_emulator, dataset, capsys):
    """SIGKILL at random moments, 20 times or more, with new messages before each restart: the
    committed write stream's offsets in the destination cursor, and the row-at-a-time probe of a
    resumed stream, leave every message in the table once."""
    emulator = bigquery_emulator
    rng = random.Random(SEED)
    started = time.monotonic()
    topic = kafka.create_topic(partitions=3)
    table = f"{emulator.project}.{dataset}.events"
    config = bizon.write("p.yml", kafka_v2_pipeline(kafka, emulator, dataset, topic, table))
    produced = 0
    landed = 0
    while landed < KILLS:
        produced += kafka.produce_many(topic, 120, lambda i, base=produced: {"n": base + i})
        process = spawn(bizon, "run", config)
        if killed_after(process, rng, (0.4, 2.0)):
            landed += 1
            continue
        _, stderr = process.communicate()
        raise AssertionError(f"the stream run ended by itself (exit {process.returncode})\n"
                             f"{stderr[-4000:]}")
    expected = expected_positions(kafka, topic)
    assert len(expected) == produced
    stream_to_the_end(bizon, config, emulator, table, expected)
    assert_exactly_once(record_positions(emulator, table), expected, what="messages")
    with capsys.disabled():
        print(f"\nkafka -> bigquery_streaming_v2 kill-resume: {landed} kills, {produced} "
              f"messages checked, {time.monotonic() - started:.1f} s (seed {SEED})")


@pytest.mark.serial  # restarts the emulator
def test_an_emulator_restart_mid_stream_loses_no_row(bizon, kafka, bigquery_emulator, dataset):
    """The BigQuery emulator restarts (connections dropped) while a stream writes into it: the
    run recovers, or fails with an error naming BigQuery and is started again; either way every
    message is in the table once."""
    emulator = bigquery_emulator
    topic = kafka.create_topic(partitions=2)
    table = f"{emulator.project}.{dataset}.events"
    config = bizon.write("p.yml", kafka_v2_pipeline(kafka, emulator, dataset, topic, table))
    kafka.produce_many(topic, 200, lambda i: {"n": i})
    log = bizon.cwd / "run.log"
    process = spawn(bizon, "run", config, log=log)
    try:
        wait_for_run(process, log, lambda: process.poll() is not None
                     or len(record_positions(emulator, table) or []) >= 200,
                     timeout=120, interval=0.5, what="200 rows before the restart")
        assert process.poll() is None, f"the stream run ended by itself\n{log.read_text()}"
        for batch in range(5):
            kafka.produce_many(topic, 100, lambda i, base=200 + batch * 100: {"n": base + i})
            if batch == 1:
                emulator.restart("bigquery")
            time.sleep(0.3)
        deadline = time.monotonic() + 60
        while process.poll() is None and time.monotonic() < deadline:
            if len(record_positions(emulator, table) or []) >= 700:
                break
            time.sleep(0.5)
    except BaseException:
        kill(process)
        raise
    if process.poll() is None:
        stop(process)  # Recovered: it wrote on after the restart.
    else:
        text = log.read_text()
        assert process.returncode != 0, text
        assert "BigQuery" in text, text[-4000:]
    stream_to_the_end(bizon, config, emulator, table, expected_positions(kafka, topic))
    assert_exactly_once(record_positions(emulator, table), expected_positions(kafka, topic),
                        what="messages")
