"""The bigquery_streaming_v2 destination against the BigQuery emulator (REST and the Storage
Write API): `bizon run` appends protobuf rows to a staging table and publishes it by SQL. Raw
full refresh (twice: the second replaces), unnest incremental (typed columns, appended), the
default-stream option, and a stream killed and resumed: every record exactly once through the
PENDING write streams named in the destination cursor and committed once it is recorded.

Under CI=true a missing emulator fails these tests (conftest_google's fixture)."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import time
import uuid

import pytest

from conftest_google import bigquery_emulator  # noqa: F401 (fixture)
from support.exactly_once import assert_ids_exactly_once
from support.pipelines import dummy, generator, pipeline, runner
from support.processes import run_until_complete

SEED = int(os.environ.get("BIZON_KILL_SEED", "20261203"))
RAW = ["_source_record_id", "_source_timestamp", "_source_data", "_bizon_extracted_at",
       "_bizon_loaded_at", "_bizon_id"]


def destination(emulator, dataset: str, **config) -> dict:
    return {"name": "bigquery_streaming_v2", "config": {
        "project_id": emulator.project, "dataset_id": dataset, **config}}


@pytest.fixture
def dataset(bigquery_emulator) -> str:
    name = f"bq_v2_{uuid.uuid4().hex[:10]}"
    bigquery_emulator.create_dataset(name)
    return name


def rows(emulator, dataset: str, table: str, order: str) -> list[dict]:
    return emulator.query(f"SELECT * FROM `{emulator.project}.{dataset}.{table}` ORDER BY {order}")


def table_names(emulator, dataset: str) -> list[str]:
    """The dataset's tables but the registry of write streams (_bizon_write_streams)."""
    answer = emulator.bq("GET", f"datasets/{dataset}/tables")
    return sorted(table["tableReference"]["tableId"] for table in answer.get("tables", [])
                  if table["tableReference"]["tableId"] != "_bizon_write_streams")


def cursor_states(bizon) -> list[dict]:
    """The destination states the engine recorded with its cursors, oldest first."""
    with sqlite3.connect(bizon.cwd / "bizon.sqlite3") as db:
        found = db.execute("SELECT destination_state FROM destination_cursors "
                           "WHERE success = 1 ORDER BY created_at").fetchall()
    return [json.loads(state) for (state,) in found if state]


def test_raw_full_refresh_publishes_and_a_second_run_replaces(bizon, bigquery_emulator, dataset):
    emulator = bigquery_emulator
    config = bizon.write("p.yml", pipeline("v2-fr", dummy(), destination(emulator, dataset)))
    started_us = int(time.time() * 1e6)
    bizon.run("run", config, check=0)
    found = rows(emulator, dataset, "_bizon_dummy_creatures", "_source_record_id")
    assert sorted(json.loads(row["_source_data"])["name"] for row in found) == [
        "bizon", "croco", "froggy", "poulpo", "turtle"]
    for row in found:
        assert list(row) == RAW
        assert int(row["_bizon_loaded_at"]) >= started_us - 5_000_000
        assert len(row["_bizon_id"]) == 32
    assert table_names(emulator, dataset) == ["_bizon_dummy_creatures"]  # Staging dropped.
    # The cursor carries the write's PENDING stream, committed once the cursor was recorded.
    [table] = cursor_states(bizon)[-1]["tables"]
    staging = f"projects/{emulator.project}/datasets/{dataset}/tables/_bizon_dummy_creatures_temp"
    [stream] = table["uncommitted"]
    assert stream.startswith(f"{staging}/streams/")

    first_ids = {row["_bizon_id"] for row in found}
    bizon.run("run", config, check=0)
    again = rows(emulator, dataset, "_bizon_dummy_creatures", "_source_record_id")
    assert len(again) == 5  # Replaced, not appended.
    assert not first_ids & {row["_bizon_id"] for row in again}


def test_unnest_incremental_writes_typed_columns_partitioned_on_one(
        bizon, bigquery_emulator, dataset):
    emulator = bigquery_emulator
    table = f"{emulator.project}.{dataset}.events"
    dest = destination(emulator, dataset, destination_id=table, unnest=True, buffer_size=0,
                       time_partitioning={"type": "DAY", "field": "updated_at"}, record_schemas=[{
                           "destination_id": table,
                           "record_schema": [
                               {"name": "id", "type": "INTEGER", "mode": "REQUIRED"},
                               {"name": "name", "type": "STRING", "mode": "NULLABLE"},
                               {"name": "updated_at", "type": "TIMESTAMP", "mode": "NULLABLE"},
                               {"name": "value", "type": "INTEGER", "mode": "NULLABLE"}],
                           "clustering_keys": ["name"]}])
    source = generator("incremental", count=120, page_size=25)
    config = bizon.write("p.yml", pipeline("v2-inc", source, dest))
    bizon.run("run", config, check=0)
    found = rows(emulator, dataset, "events", "id")
    assert [int(row["id"]) for row in found] == list(range(120))
    assert found[7]["name"] == "record-7" and found[7]["value"] == str(7 * 7919 % 1000)
    assert int(found[1]["updated_at"]) > int(found[0]["updated_at"])  # int64 microseconds.
    created = emulator.bq("GET", f"datasets/{dataset}/tables/events")
    assert created["timePartitioning"] == {"type": "DAY", "field": "updated_at"}
    assert created["clustering"] == {"fields": ["name"]}
    assert table_names(emulator, dataset) == ["events"]  # events_incremental was dropped.


def test_default_stream_option_writes_without_a_stream_in_the_cursor(
        bizon, bigquery_emulator, dataset):
    emulator = bigquery_emulator
    dest = destination(emulator, dataset, destination_id="live", write_mode="default_stream",
                       buffer_size=0)
    source = generator("stream", count=90, page_size=30)
    config = bizon.write("p.yml", pipeline("v2-default", source, dest, engine=runner("stream")))
    bizon.run("run", config, check=0)
    assert len(rows(emulator, dataset, "live", "_source_record_id")) == 90
    assert all("uncommitted" not in table for state in cursor_states(bizon)
               for table in state["tables"])


def test_stream_killed_and_resumed_writes_every_record_once(bizon, bigquery_emulator, dataset,
                                                            capsys):
    emulator = bigquery_emulator
    started = time.monotonic()
    count = 900
    source = generator("stream", count=count, page_size=30, sleep=0.1)
    dest = destination(emulator, dataset, destination_id="live", buffer_size=0)
    config = bizon.write("p.yml", pipeline("v2-kill", source, dest, engine=runner("stream")))
    kills = run_until_complete(bizon, config, random.Random(SEED), kills=8, delays=(0.2, 1.2))
    found = emulator.query(f"SELECT _source_record_id FROM `{emulator.project}.{dataset}.live`")
    assert_ids_exactly_once([int(row["_source_record_id"]) for row in found], count)
    with capsys.disabled():
        print(f"\nbigquery_streaming_v2 kill-resume stream: {kills} kills, {count} records "
              f"checked, {time.monotonic() - started:.1f} s (seed {SEED})")
    assert kills >= 4


def test_incremental_killed_and_resumed_publishes_every_record_once(
        bizon, bigquery_emulator, dataset, capsys):
    emulator = bigquery_emulator
    started = time.monotonic()
    count = 900
    source = generator("incremental", count=count, page_size=30, sleep=0.1, interval_ms=0.01)
    # About three pages per flush: size-based cuts, the same after a resume.
    dest = destination(emulator, dataset, destination_id="events", buffer_size=0.008)
    config = bizon.write("p.yml", pipeline("v2-kill-inc", source, dest))

    def table_ids() -> list[int] | None:
        if "events" not in table_names(emulator, dataset):
            return None
        found = emulator.query(
            f"SELECT _source_record_id FROM `{emulator.project}.{dataset}.events`")
        return [int(row["_source_record_id"]) for row in found]

    def never_published_early():
        ids = table_ids()
        assert ids is None or sorted(ids) == list(range(count))

    kills = run_until_complete(bizon, config, random.Random(SEED), kills=8, delays=(0.2, 1.5),
                               after_kill=never_published_early)
    assert_ids_exactly_once(table_ids(), count)
    with capsys.disabled():
        print(f"\nbigquery_streaming_v2 kill-resume incremental: {kills} kills, {count} records "
              f"checked, {time.monotonic() - started:.1f} s (seed {SEED})")
    assert kills >= 4


def test_a_partition_field_that_cannot_work_warns_and_only_fails_a_table_it_would_create(
        bizon, bigquery_emulator, dataset):
    """As the original: a time_partitioning.field the record schema cannot partition on is a
    warning, since it matters only when a table is created (BigQuery keeps an existing table's
    layout); a run that would create a table with it fails, naming the field and its line."""
    emulator = bigquery_emulator
    schema = [{"destination_id": "live", "record_schema": [
        {"name": "id", "type": "INTEGER", "mode": "REQUIRED"},
        {"name": "name", "type": "STRING", "mode": "NULLABLE"},
        {"name": "updated_at", "type": "TIMESTAMP", "mode": "NULLABLE"},
        {"name": "value", "type": "INTEGER", "mode": "NULLABLE"}]}]

    def config(partitioning, name="v2-partition"):
        dest = destination(emulator, dataset, destination_id="live", unnest=True, buffer_size=0,
                           time_partitioning=partitioning, record_schemas=schema)
        return bizon.write("p.yml", pipeline(name, generator("stream", count=30, page_size=10),
                                             dest, engine=runner("stream")))

    bad = {"type": "DAY", "field": "name"}
    validated = bizon.run("config", "validate", config(bad), check=0)
    assert "'name' is not a TIMESTAMP, DATE or DATETIME column" in validated.stderr
    assert "only applied when a table is created" in validated.stderr

    refused = bizon.run("run", config(bad), check=None)
    assert refused.returncode != 0
    assert "table" in refused.stderr and "cannot be created partitioned on it" in refused.stderr
    assert "time_partitioning.field" in refused.stderr and "(line " in refused.stderr
    assert table_names(emulator, dataset) == []

    bizon.run("run", config(None), check=0)  # Creates `live`, unpartitioned.
    # The table exists: the field changes nothing, and a pipeline of its own appends to it.
    bizon.run("run", config(bad, name="v2-partition-again"), check=0)
    assert len(rows(emulator, dataset, "live", "id")) == 60
    assert "timePartitioning" not in emulator.bq("GET", f"datasets/{dataset}/tables/live")


def test_a_record_schema_column_the_table_lacks_is_added_to_it(bizon, bigquery_emulator,
                                                                 dataset):
    """As the original: a stream into an existing table whose record schema gained a column adds
    the column (NULLABLE, since BigQuery adds no REQUIRED column to a table with rows) before
    writing. bqemulator 1.4 applies such a schema change (tables.patch) to the table's metadata
    only, not to the DuckDB table behind it, so the widened run's rows cannot be read back here:
    the test checks the table's schema, the warning, and that nothing else changed."""
    emulator = bigquery_emulator
    columns = [{"name": "id", "type": "INTEGER", "mode": "REQUIRED"},
               {"name": "name", "type": "STRING", "mode": "NULLABLE"},
               {"name": "updated_at", "type": "TIMESTAMP", "mode": "NULLABLE"}]

    def run(name, schema, **root):
        dest = destination(emulator, dataset, destination_id="live", unnest=True, buffer_size=0,
                           record_schemas=[{"destination_id": "live", "record_schema": schema}])
        config = bizon.write("p.yml", pipeline(name, generator("stream", count=20, page_size=10),
                                               dest, engine=runner("stream"), **root))
        return bizon.run("run", config, check=0)

    first = run("v2-columns", columns,
                transforms=[{"label": "drop_value", "python": "data.pop('value')\n"}])
    assert "adding columns" not in first.stderr
    assert len(rows(emulator, dataset, "live", "id")) == 20
    widened = run("v2-columns-again",
                  [*columns, {"name": "value", "type": "INTEGER", "mode": "REQUIRED"}])
    assert "adding columns value to table" in widened.stderr
    table = emulator.bq("GET", f"datasets/{dataset}/tables/live")
    assert [(f["name"], f["type"], f.get("mode", "NULLABLE"))
            for f in table["schema"]["fields"]] == [
        ("id", "INTEGER", "REQUIRED"), ("name", "STRING", "NULLABLE"),
        ("updated_at", "TIMESTAMP", "NULLABLE"), ("value", "INTEGER", "NULLABLE")]
    again = run("v2-columns-third",
                [*columns, {"name": "value", "type": "INTEGER", "mode": "REQUIRED"}])
    assert "adding columns" not in again.stderr  # Nothing left to add.
