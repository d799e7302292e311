"""write_disposition: merge into bigquery_streaming_v2, through BigQuery's change data capture: a
Debezium topic on the test broker (two partitions, keyed by id: creates, updates, deletes and
their tombstones, as Debezium writes them) read by the kafka source, run after run, SIGKILLed
once in the middle, ends as a table equal to the source table it describes.

Which server does what: tables.insert goes to the BigQuery emulator, which accepts the table's
tableConstraints and maxStaleness; the Storage Write API is the fake
(tests/fakes/fake_bigquery_write_main.cc), because the emulator has no CDC (it drops the
pseudo-columns and appends). The fake applies each change by primary key and
_CHANGE_SEQUENCE_NUMBER as BigQuery documents it, and refuses CDC off the default stream, on a
table without a key, or with malformed pseudo-columns."""

from __future__ import annotations

import json
import random
import subprocess
import uuid

import pytest

from conftest_google import google_emulators  # noqa: F401 (fixture)
from conftest_kafka import kafka  # noqa: F401 (fixture)
from support.kafka import config_text, kafka_source
from support.paths import bizon_binary
from support.processes import kill, spawn, stop, wait_for

KEYS = 200
EVENTS = 2_000


class WriteFake:
    """The Storage Write fake as a child process, driven one command a line."""

    def __init__(self):
        binary = bizon_binary().parent / "fake_bigquery_write_server"
        if not binary.exists():
            pytest.fail(f"{binary} is missing: build the dev preset (scripts/build.sh dev)")
        self.process = subprocess.Popen([str(binary)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        self.endpoint = self.process.stdout.readline().strip()

    def ask(self, command: str) -> str:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


@pytest.fixture
def write_fake():
    fake = WriteFake()
    yield fake
    assert json.loads(fake.ask("violations")) == []
    fake.close()


@pytest.fixture
def dataset(google_emulators) -> str:
    name = f"bq_cdc_{uuid.uuid4().hex[:10]}"
    google_emulators.create_dataset(name)
    return name


def debezium_topic(seed: int) -> tuple[dict[int, list], dict[int, dict]]:
    """Per partition, (key, value) messages as Debezium writes a table's changes (a delete's
    tombstone after it); and the table they leave."""
    rng = random.Random(seed)
    table: dict[int, dict] = {}
    partitions: dict[int, list] = {0: [], 1: []}
    for event in range(EVENTS):
        key = rng.randrange(KEYS)
        before = table.get(key)
        op = "c" if before is None else ("d" if rng.random() < 0.25 else "u")
        after = None if op == "d" else {"id": key, "name": f"user-{key}",
                                         "email": f"u{key}.{event}@example.com"}
        value = {"before": before, "after": after, "op": op,
                 "source": {"name": "prod", "ts_ms": 1_700_000_000_000 + event}}
        partitions[key % 2].append(({"id": key}, value))
        if op == "d":
            partitions[key % 2].append(({"id": key}, None))
            del table[key]
        else:
            table[key] = after
    return partitions, table


def test_debezium_topic_merges_through_cdc_into_the_source_table(
        bizon, kafka, google_emulators, dataset, write_fake):
    topic = kafka.create_topic(partitions=2)
    partitions, expected = debezium_topic(seed=20261207)
    for partition, messages in partitions.items():
        kafka.produce(topic, [value for _, value in messages],
                      keys=[key for key, _ in messages], partition=partition)
    table = f"projects/{google_emulators.project}/datasets/{dataset}/tables/users"
    assert write_fake.ask(f"key {table} id") == "ok"
    schema = [{"name": "id", "type": "INTEGER", "mode": "REQUIRED"},
              {"name": "name", "type": "STRING", "mode": "NULLABLE"},
              {"name": "email", "type": "STRING", "mode": "NULLABLE"}]
    destination = {"name": "bigquery_streaming_v2", "config": {
        "project_id": google_emulators.project, "dataset_id": dataset, "unnest": True,
        "time_partitioning": None, "buffer_size": 0,
        "record_schemas": [{"destination_id": "users", "record_schema": schema}],
        "write_disposition": "merge", "primary_key": ["id"], "change_format": "debezium"}}
    source = kafka_source(kafka, {topic: "users"}, batch_size=150)
    config = bizon.write("p.yml", config_text(source, destination=destination))
    env = {"BIGQUERY_STORAGE_EMULATOR_HOST": write_fake.endpoint}

    def changes() -> int:
        return int(write_fake.ask("changes"))

    def rows() -> dict[int, dict]:
        found = json.loads(write_fake.ask(f"rows {table}"))
        return {int(row["id"]): {"id": int(row["id"]), "name": row.get("name"),
                                 "email": row.get("email")} for row in found}

    # Killed once half of the changes are in: the resumed run reads the partitions again from
    # the recorded offsets, and writes some changes a second time.
    first = spawn(bizon, "run", config, env=env)
    wait_for(lambda: changes() >= EVENTS // 2, timeout=120, what="half of the changes")
    kill(first)
    second = spawn(bizon, "run", config, env=env)
    wait_for(lambda: rows() == expected, timeout=120, what="the source table")
    stop(second)
    assert rows() == expected
    # Tombstones are no changes; the fake received every change at least once.
    assert changes() >= EVENTS
    made = google_emulators.bq("GET", f"datasets/{dataset}/tables/users")
    assert [field["name"] for field in made["schema"]["fields"]] == ["id", "name", "email"]
