"""The duckdb destination through `bizon run`: each sync mode into a DuckDB file, read back with the
duckdb package and compared with the source's records; SIGKILLs at random points ending with every
record exactly once; a second process on the same file; config errors with their line.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from datetime import timedelta

import duckdb
import pytest

from support.exactly_once import assert_ids_exactly_once
from support.pipelines import (CREATURES, dummy, file_destination, generator, iso, pipeline,
                               runner)
from support.paths import EXAMPLES
from support.processes import run_until_complete, spawn, wait_for
from support.results import State, ids_in, parse_sql_time, source_data

SEED = int(os.environ.get("BIZON_KILL_SEED", "20261207"))


def duckdb_destination(database="warehouse.duckdb", **options) -> dict:
    return {"name": "duckdb", "config": {"database": database, **options}}


def rows(bizon, sql: str, database="warehouse.duckdb") -> list[tuple]:
    """Reads the file bizon left (no run holds it open)."""
    connection = duckdb.connect(str(bizon.cwd / database), read_only=True)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


def loaded(bizon, table: str, database="warehouse.duckdb") -> list[tuple[int, dict]]:
    """(source record id, payload) of each row of `table`, in id order."""
    found = rows(bizon, f'SELECT _source_record_id, _source_data FROM "{table}"', database)
    return sorted((int(record_id), json.loads(data)) for record_id, data in found)


def reference(bizon, source: dict) -> list[tuple[int, dict]]:
    """What the same source writes into the file destination: the records to expect."""
    config = bizon.write("reference.yml", pipeline("reference", source, file_destination("ref")))
    bizon.run("run", config, check=0)
    written = bizon.read_ndjson("ref.json")
    return sorted(zip(ids_in(written), source_data(written)))


def test_full_refresh_loads_the_records_and_replaces_them_on_the_next_run(bizon):
    config = bizon.write("p.yml", pipeline("duck-fr", dummy(), duckdb_destination(table="creatures")))
    bizon.run("run", config, check=0)
    found = rows(bizon, "SELECT _source_data FROM creatures")
    assert sorted(json.loads(data)["id"] for (data,) in found) == sorted(c["id"] for c in CREATURES)
    assert sorted((json.loads(data) for (data,) in found), key=lambda c: c["id"]) == sorted(
        CREATURES, key=lambda c: c["id"])

    bizon.run("run", config, check=0)  # A second full refresh replaces, never appends.
    assert rows(bizon, "SELECT count(*) FROM creatures") == [(5,)]
    tables = {name for (name,) in rows(bizon, "SELECT table_name FROM duckdb_tables()")}
    assert "creatures_temp" not in tables
    types = dict(rows(bizon, "SELECT column_name, data_type FROM duckdb_columns()"
                             " WHERE table_name = 'creatures'"))
    assert types == {"_bizon_id": "VARCHAR", "_bizon_extracted_at": "TIMESTAMP WITH TIME ZONE",
                     "_bizon_loaded_at": "TIMESTAMP WITH TIME ZONE", "_source_record_id": "VARCHAR",
                     "_source_timestamp": "TIMESTAMP WITH TIME ZONE", "_source_data": "JSON"}


def test_full_refresh_of_many_pages_equals_the_source(bizon):
    source = generator(count=5000, page_size=300)
    expected = reference(bizon, source)
    config = bizon.write("p.yml", pipeline("duck-gen", source, duckdb_destination(buffer_size=0.05)))
    bizon.run("run", config, check=0)
    assert loaded(bizon, "generator_records") == expected


def test_incremental_appends_each_runs_window(bizon):
    first_count, total, interval_ms = 1000, 1500, 0.01
    options = dict(page_size=100, interval_ms=interval_ms)
    expected_first = reference(bizon, generator(count=first_count, **options))
    config = bizon.write("p.yml", pipeline("duck-inc", generator("incremental", count=first_count,
                                                                 **options),
                                           duckdb_destination(table="events")))
    bizon.run("run", config, check=0)
    assert loaded(bizon, "events") == expected_first

    # New records, all updated after the first run started: exactly the next run's window.
    [job] = [job for job in State(bizon.cwd).jobs() if job["name"] == "duck-inc"]
    last_run = parse_sql_time(job["created_at"])
    start = iso(last_run - timedelta(milliseconds=interval_ms * (first_count - 0.5)))
    second = dict(count=total, start=start, **options)
    expected_second = reference(bizon, generator(**second))[first_count:]
    bizon.write("p.yml", pipeline("duck-inc", generator("incremental", **second),
                                  duckdb_destination(table="events")))
    time.sleep((total - first_count) * interval_ms / 1000 + 0.05)
    bizon.run("run", config, check=0)
    assert loaded(bizon, "events") == expected_first + expected_second
    tables = {name for (name,) in rows(bizon, "SELECT table_name FROM duckdb_tables()")}
    assert tables == {"events", "_bizon_loads"}  # The staging table went with the publish.


def test_stream_writes_in_place(bizon):
    source = generator("stream", count=3000, page_size=250)
    expected = reference(bizon, generator(count=3000, page_size=250))
    config = bizon.write("p.yml", pipeline("duck-stream", source, duckdb_destination(),
                                           engine=runner("stream")))
    bizon.run("run", config, check=0)
    assert loaded(bizon, "generator_records") == expected
    # A stream table keeps the load column: it is what a resume rolls back by.
    assert rows(bizon, "SELECT count(DISTINCT _bizon_load_id) > 1 FROM generator_records") == [(True,)]


def test_unnest_writes_typed_columns(bizon):
    schema = [{"name": "id", "type": "INTEGER"}, {"name": "name", "type": "STRING"},
              {"name": "age", "type": "INTEGER"}]
    destination = duckdb_destination(unnest=True, record_schemas=[
        {"destination_id": "creatures", "record_schema": schema}])
    config = bizon.write("p.yml", pipeline("duck-unnest", dummy(), destination))
    bizon.run("run", config, check=0)
    assert rows(bizon, "SELECT id, name, age FROM creatures ORDER BY id") == sorted(
        (c["id"], c["name"], c["age"]) for c in CREATURES)
    types = rows(bizon, "SELECT data_type FROM duckdb_columns() WHERE table_name = 'creatures'"
                        " ORDER BY column_index")
    assert types == [("BIGINT",), ("VARCHAR",), ("BIGINT",)]


@pytest.mark.serial  # Bounds its time: the kill delays.
def test_stream_killed_at_random_loses_and_duplicates_nothing(bizon, capsys):
    rng = random.Random(SEED)
    started = time.monotonic()
    count = 30_000
    source = generator("stream", count=count, page_size=50, sleep=0.006)
    config = bizon.write("p.yml", pipeline("duck-kill", source, duckdb_destination(),
                                           engine=runner("stream")))
    kills = run_until_complete(bizon, config, rng, kills=22)
    assert_ids_exactly_once([i for i, _ in loaded(bizon, "generator_records")], count)
    with capsys.disabled():
        print(f"\nduckdb kill-resume stream: {kills} kills, {count} records checked, "
              f"{time.monotonic() - started:.1f} s (seed {SEED})")
    assert kills >= 20


@pytest.mark.serial  # Bounds its time: the kill delays.
def test_incremental_killed_at_random_publishes_every_record_once(bizon, capsys):
    rng = random.Random(SEED + 1)
    count = 20_000
    source = generator("incremental", count=count, page_size=50, sleep=0.006)
    config = bizon.write("p.yml", pipeline("duck-kill-inc", source,
                                           duckdb_destination(buffer_size=0.02)))
    kills = run_until_complete(bizon, config, rng, kills=20)
    [job] = State(bizon.cwd).jobs()  # Every restart resumed the one job.
    assert job["status"] == "succeeded"
    assert_ids_exactly_once([i for i, _ in loaded(bizon, "generator_records")], count)
    with capsys.disabled():
        print(f"\nduckdb kill-resume incremental: {kills} kills, {count} records checked")
    assert kills >= 20


def test_a_second_process_on_the_file_fails_naming_it(bizon):
    source = generator("stream", count=100_000, page_size=50, sleep=0.01)
    config = bizon.write("p.yml", pipeline("duck-busy", source, duckdb_destination(),
                                           engine=runner("stream")))
    first = spawn(bizon, "run", config)
    try:
        wait_for(lambda: (bizon.cwd / "warehouse.duckdb").exists(), what="the database file")
        other = bizon.write("q.yml", pipeline("duck-other", generator(count=10),
                                              duckdb_destination()))
        result = bizon.run("run", other, "--result-json", "r.json", check=1)
        assert "warehouse.duckdb" in result.stderr
        assert json.loads((bizon.cwd / "r.json").read_text())["failure_class"] == "destination"
    finally:
        first.kill()
        first.communicate(timeout=30)


def test_config_errors_name_the_line(bizon):
    config = bizon.write("p.yml", pipeline("duck-bad", dummy(), {"name": "duckdb", "config": {}}))
    result = bizon.run("config", "validate", config, check=1)
    assert "destination.config.database" in result.stderr + result.stdout

    contract = duckdb_destination(unnest=True, record_schemas=[
        {"destination_id": "creatures", "schema_contract": "evolve",
         "record_schema": [{"name": "id", "type": "integer"}]}])
    config = bizon.write("p.yml", pipeline("duck-bad", dummy(), contract))
    result = bizon.run("config", "validate", config)
    assert result.returncode != 0
    output = result.stderr + result.stdout
    assert "p.yml:" in output and "record_schemas[0].schema_contract" in output
    assert "no schema contracts" in output

    keyless = duckdb_destination(write_disposition="merge")
    config = bizon.write("p.yml", pipeline("duck-bad", dummy(), keyless))
    result = bizon.run("config", "validate", config)
    assert result.returncode != 0 and "primary_key" in result.stderr + result.stdout


def state_in(database: str, runner_type: str | None = None) -> dict:
    """An engine block keeping the state in the duckdb file `database`."""
    engine = {"backend": {"type": "duckdb", "config": {"database": database}}}
    if runner_type:
        engine["runner"] = {"type": runner_type}
    return engine


@pytest.mark.parametrize("runner_type", ["thread", "process", "stream"])
def test_state_and_rows_share_one_file(bizon, runner_type):
    sync_mode = "stream" if runner_type == "stream" else "incremental"
    source = generator(sync_mode, count=2000, page_size=200)
    expected = reference(bizon, generator(count=2000, page_size=200))
    config = bizon.write("p.yml", pipeline("duck-one-file", source, duckdb_destination(),
                                           engine=state_in("warehouse.duckdb", runner_type)))
    bizon.run("run", config, check=0)
    assert loaded(bizon, "generator_records") == expected
    jobs = rows(bizon, "SELECT sync_mode, status FROM stream_jobs WHERE name = 'duck-one-file'")
    assert jobs == [(sync_mode, "running" if sync_mode == "stream" else "succeeded")]
    cursors = rows(bizon, "SELECT sum(rows_written), count(*) FROM destination_cursors")
    assert cursors[0][0] == 2000 and cursors[0][1] >= 1

    # The next incremental run reads the window after the first job: nothing new here.
    if sync_mode == "incremental":
        bizon.run("run", config, check=0)
        assert len(loaded(bizon, "generator_records")) == 2000


@pytest.mark.serial  # Bounds its time: the kill delays.
def test_state_in_the_same_file_killed_at_random_loses_and_duplicates_nothing(bizon, capsys):
    rng = random.Random(SEED + 2)
    count = 20_000
    source = generator("stream", count=count, page_size=50, sleep=0.006)
    config = bizon.write("p.yml", pipeline("duck-kill-one-file", source, duckdb_destination(),
                                           engine=state_in("warehouse.duckdb", "stream")))
    kills = run_until_complete(bizon, config, rng, kills=20)
    assert_ids_exactly_once([i for i, _ in loaded(bizon, "generator_records")], count)
    [(status,)] = rows(bizon, "SELECT status FROM stream_jobs")  # One job, resumed every time.
    assert status == "running"
    with capsys.disabled():
        print(f"\nduckdb kill-resume, state in the same file: {kills} kills, {count} records")
    assert kills >= 20


def test_the_rest_to_duckdb_quickstart_prints_the_loaded_books(bizon):
    """README's second quickstart: examples/rest_to_duckdb.sh serves the bundled JSON, runs the
    example pipeline and prints the table (the script's fixed port is used by no other test)."""
    done = subprocess.run([str(EXAMPLES / "rest_to_duckdb.sh")], cwd=bizon.cwd, capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "BIZON_BIN": str(bizon.binary), "PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr
    books = json.loads((EXAMPLES / "data" / "books.json").read_text())["items"]
    for book in books:
        assert book["title"] in done.stdout
    assert rows(bizon, "SELECT id, title, year, price, in_stock, published::VARCHAR FROM books"
                       " ORDER BY id", "quickstart.duckdb") == [
        (b["id"], b["title"], b["year"], b["price"], b["in_stock"], b["published"]) for b in books]
    # The pipeline's state is in the same file.
    assert rows(bizon, "SELECT status FROM stream_jobs", "quickstart.duckdb") == [("succeeded",)]


MERGE_KEYS, DELETE_EVERY = 2000, 7
MERGE_COLUMNS = [{"name": "id", "type": "integer"}, {"name": "name", "type": "string"},
                 {"name": "updated_at", "type": "timestamp"}, {"name": "value", "type": "integer"},
                 {"name": "deleted", "type": "boolean"}]


def merge_model(count: int) -> dict[int, str]:
    """key -> the name of the record it holds after the generator's first `count` records (with
    key_count and delete_every): the last one received, unless that one deletes it."""
    latest = {}
    for i in range(count):
        latest[i % MERGE_KEYS] = i
    return {key: f"record-{i}" for key, i in latest.items()
            if not (i >= MERGE_KEYS and i % DELETE_EVERY == 0)}


def merge_destination(**options) -> dict:
    return duckdb_destination(unnest=True, destination_id="merged", write_disposition="merge",
                              primary_key=["id"], hard_delete="deleted", record_schemas=[
                                  {"destination_id": "merged", "record_schema": MERGE_COLUMNS}],
                              **options)


@pytest.mark.parametrize("sync_mode", ["incremental", "full_refresh"])
def test_merge_keeps_the_last_version_of_each_key(bizon, sync_mode):
    count = 9000
    source = generator(sync_mode, count=count, page_size=500, key_count=MERGE_KEYS,
                       delete_every=DELETE_EVERY)
    config = bizon.write("p.yml", pipeline("duck-merge", source, merge_destination()))
    bizon.run("run", config, check=0)
    assert dict(rows(bizon, "SELECT id, name FROM merged")) == merge_model(count)
    assert rows(bizon, "SELECT count(*) - count(DISTINCT id) FROM merged") == [(0,)]


@pytest.mark.serial  # Bounds its time: the kill delays.
def test_stream_merge_killed_at_random_ends_with_the_last_version_of_each_key(bizon, capsys):
    rng = random.Random(SEED + 3)
    count = 16_000
    source = generator("stream", count=count, page_size=50, sleep=0.006, key_count=MERGE_KEYS,
                       delete_every=DELETE_EVERY)
    config = bizon.write("p.yml", pipeline("duck-merge-kill", source, merge_destination(),
                                           engine=runner("stream")))
    kills = run_until_complete(bizon, config, rng, kills=20)
    assert dict(rows(bizon, "SELECT id, name FROM merged")) == merge_model(count)
    assert rows(bizon, "SELECT count(*) FROM merged_merge") == [(0,)]  # Every load applied.
    with capsys.disabled():
        print(f"\nduckdb kill-resume stream merge: {kills} kills, {count} records")
    assert kills >= 20


@pytest.mark.serial  # Bounds its time: the kill delays.
def test_killed_full_refresh_never_leaves_a_partial_published_table(bizon, capsys):
    rng = random.Random(SEED + 4)
    count = 20_000
    source = generator(count=count, page_size=100, sleep=0.004)
    config = bizon.write("p.yml", pipeline("duck-kill-fr", source,
                                           duckdb_destination(buffer_size=0.05)))
    checks = 0

    def published_is_absent_or_complete():
        nonlocal checks
        if not (bizon.cwd / "warehouse.duckdb").exists():  # Killed before the file was made.
            return
        tables = {name for (name,) in rows(bizon, "SELECT table_name FROM duckdb_tables()")}
        if "generator_records" in tables:
            assert_ids_exactly_once([i for i, _ in loaded(bizon, "generator_records")], count)
        checks += 1

    kills = 0
    for _ in range(3):  # Killed before the first publish, then around later ones.
        kills += run_until_complete(bizon, config, rng, kills=4, delays=(0.1, 2.0),
                                    after_kill=published_is_absent_or_complete)
        published_is_absent_or_complete()
    assert_ids_exactly_once([i for i, _ in loaded(bizon, "generator_records")], count)
    with capsys.disabled():
        print(f"\nduckdb kill full refresh: {kills} kills, table checked {checks} times")
    assert kills >= 6
