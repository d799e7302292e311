"""The file destination's `format: parquet`: a directory of Parquet parts per table, read back with
pyarrow and compared with what the same source writes as NDJSON; each sync mode, unnest, the codec,
config errors, and SIGKILLs at random points ending with every record exactly once.

The kill scenarios are seeded (BIZON_KILL_SEED) and print their figures even without -s.
"""

from __future__ import annotations

import os
import random
import time
from datetime import timedelta

import pytest

from support.exactly_once import assert_ids_exactly_once
from support.parquet import RECORD_SCHEMA, codecs_of, read_table_dir, records, schema_of
from support.pipelines import file_destination, generator, pipeline, runner
from support.processes import run_until_complete
from support.results import State, parse_sql_time

SEED = int(os.environ.get("BIZON_KILL_SEED", "20261207"))
INTERVAL_MS = 0.01


def parquet(destination_id="out", **options) -> dict:
    return file_destination(destination_id, format="parquet", **options)


def ids(rows: list[dict]) -> list[int]:
    return [int(row["source_record_id"]) for row in rows]


def leftovers(cwd) -> list[str]:
    """What a finished job must not leave beside its table: staging, manifests, scratch files."""
    return sorted(path.name for path in cwd.iterdir()
                  if ".bizon-" in path.name or path.name.endswith(".tmp"))


def test_full_refresh_writes_the_ndjson_records_as_parquet_and_replaces_the_table(bizon):
    source = generator(count=2_000, page_size=100)
    bizon.run("run", bizon.write("json.yml", pipeline("pq-json", source)), check=0)
    expected = records(bizon.read_ndjson("out.json"))
    config = bizon.write("p.yml", pipeline("pq-fr", source, parquet("table", buffer_size=0.05)))
    bizon.run("run", config, check=0)

    table = bizon.cwd / "table"
    parts = sorted(table.glob("*.parquet"))
    assert len(parts) > 1, "a part per durable point"
    assert schema_of(parts[0]) == RECORD_SCHEMA
    assert codecs_of(parts[0]) == {"ZSTD"}
    rows = read_table_dir(table)
    assert records(rows) == expected
    assert all(len(row["bizon_id"]) == 32 for row in rows)
    assert sorted(os.listdir(table)) == [part.name for part in parts]
    assert leftovers(bizon.cwd) == []

    # A second full refresh replaces the table: only its own parts remain.
    bizon.write("p.yml", pipeline("pq-fr", generator(count=300), parquet("table")))
    bizon.run("run", config, check=0)
    assert_ids_exactly_once(ids(read_table_dir(table)), 300)
    assert not any(part.exists() for part in parts)
    assert leftovers(bizon.cwd) == []


def test_an_empty_full_refresh_publishes_an_empty_table(bizon):
    config = bizon.write("p.yml", pipeline("pq-empty", generator(count=10), parquet()))
    bizon.run("run", config, check=0)
    bizon.write("p.yml", pipeline("pq-empty", generator(count=0), parquet()))
    bizon.run("run", config, check=0)
    assert (bizon.cwd / "out").is_dir()
    assert read_table_dir(bizon.cwd / "out") == []


def test_incremental_appends_each_window_once(bizon):
    options = dict(page_size=100, interval_ms=1)
    config = bizon.write("p.yml", pipeline("pq-inc", generator("incremental", count=1_000, **options),
                                           parquet(buffer_size=0.02)))
    bizon.run("run", config, check=0)
    assert_ids_exactly_once(ids(read_table_dir(bizon.cwd / "out")), 1_000)
    [first] = State(bizon.cwd).jobs()

    start = parse_sql_time(first["created_at"]) - timedelta(milliseconds=1 * (1_000 - 0.5))
    source = generator("incremental", count=1_500, start=start.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                       **options)
    bizon.write("p.yml", pipeline("pq-inc", source, parquet(buffer_size=0.02)))
    time.sleep(0.6)  # Every new record precedes the second job's start, the window's end.
    bizon.run("run", config, check=0)
    assert_ids_exactly_once(ids(read_table_dir(bizon.cwd / "out")), 1_500)
    assert leftovers(bizon.cwd) == []


def test_stream_publishes_every_part_once(bizon):
    source = generator("stream", count=1_000, page_size=100)
    config = bizon.write("p.yml", pipeline("pq-stream", source, parquet(buffer_size=0),
                                           engine=runner("stream")))
    bizon.run("run", config, check=0)
    table = bizon.cwd / "out"
    assert len(list(table.glob("*.parquet"))) == 10  # A part per page (buffer_size 0).
    assert_ids_exactly_once(ids(read_table_dir(table)), 1_000)
    assert list((bizon.cwd / "out.bizon-staging").iterdir()) == []


def test_the_process_runner_writes_every_record_once(bizon):
    # The producer is a forked process; the destination's DuckDB lives in the consumer only.
    config = bizon.write("p.yml", pipeline("pq-process", generator(count=5_000, page_size=250),
                                           parquet(buffer_size=0.2), engine=runner("process")))
    bizon.run("run", config, check=0)
    assert_ids_exactly_once(ids(read_table_dir(bizon.cwd / "out")), 5_000)
    assert leftovers(bizon.cwd) == []


def test_unnest_writes_the_record_schema_as_typed_columns(bizon):
    schema = [{"name": "id", "type": "INTEGER"}, {"name": "name", "type": "STRING"},
              {"name": "updated_at", "type": "TIMESTAMP"}, {"name": "value", "type": "FLOAT64"}]
    destination = parquet(unnest=True, compression="snappy",
                          record_schemas=[{"destination_id": "out", "record_schema": schema}])
    config = bizon.write("p.yml", pipeline("pq-unnest", generator(count=50), destination))
    bizon.run("run", config, check=0)
    [part] = sorted((bizon.cwd / "out").glob("*.parquet"))
    assert schema_of(part) == {"id": "int64", "name": "string",
                               "updated_at": "timestamp[us, tz=UTC]", "value": "double"}
    assert codecs_of(part) == {"SNAPPY"}
    rows = read_table_dir(bizon.cwd / "out")
    assert [row["id"] for row in rows] == list(range(50))
    assert rows[3]["name"] == "record-3"
    assert rows[1]["updated_at"].isoformat() == "2024-01-01T00:00:00.001000+00:00"


def test_a_column_type_parquet_cannot_hold_is_a_config_error_with_its_line(bizon):
    destination = parquet(unnest=True, record_schemas=[
        {"destination_id": "out", "record_schema": [{"name": "g", "type": "GEOGRAPHY"}]}])
    config = bizon.write("p.yml", pipeline("pq-bad", generator(count=1), destination))
    result = bizon.run("config", "validate", config)
    assert result.returncode != 0
    text = result.stdout + result.stderr
    assert "destination.config.record_schemas[0].record_schema[0].type" in text, text
    assert "GEOGRAPHY" in text and "p.yml:" in text, text


def test_a_record_that_does_not_fit_its_column_fails_the_run_and_publishes_nothing(bizon):
    schema = [{"name": "id", "type": "INTEGER"}, {"name": "name", "type": "INTEGER"},
              {"name": "updated_at", "type": "TIMESTAMP"}, {"name": "value", "type": "INTEGER"}]
    destination = parquet(unnest=True,
                          record_schemas=[{"destination_id": "out", "record_schema": schema}])
    config = bizon.write("p.yml", pipeline("pq-misfit", generator(count=5), destination))
    result = bizon.run("run", config)
    assert result.returncode == 1
    assert "record 0: a text value of 'name', 'updated_at' does not fit" in result.stderr, \
        result.stderr
    assert read_table_dir(bizon.cwd / "out") == []


# --- SIGKILL at random points -------------------------------------------------------------------


@pytest.fixture
def rng():
    return random.Random(SEED)


@pytest.fixture
def report(capsys):
    def emit(scenario: str, kills: int, count: int, started: float) -> None:
        with capsys.disabled():
            print(f"\nkill-resume parquet {scenario}: {kills} kills, {count} records checked, "
                  f"{time.monotonic() - started:.1f} s (seed {SEED})")

    return emit


@pytest.mark.long
def test_stream_killed_and_resumed_loses_and_duplicates_nothing(bizon, rng, report):
    started = time.monotonic()
    count = 30_000
    source = generator("stream", count=count, page_size=50, sleep=0.006)
    config = bizon.write("p.yml", pipeline("pq-kill-stream", source, parquet(buffer_size=0.01),
                                           engine=runner("stream")))
    kills = run_until_complete(bizon, config, rng, kills=22)
    [job] = State(bizon.cwd).jobs()
    assert job["status"] == "running"
    assert_ids_exactly_once(ids(read_table_dir(bizon.cwd / "out")), count)
    report("stream", kills, count, started)
    assert kills >= 20


def test_incremental_killed_and_resumed_loses_and_duplicates_nothing(bizon, rng, report):
    started = time.monotonic()
    count = 30_000
    source = generator("incremental", count=count, page_size=50, sleep=0.008,
                       interval_ms=INTERVAL_MS)
    config = bizon.write("p.yml", pipeline("pq-kill-inc", source, parquet(buffer_size=0.02)))
    kills = run_until_complete(bizon, config, rng, kills=20)
    [job] = State(bizon.cwd).jobs()  # Every restart resumed the one job.
    assert job["status"] == "succeeded"
    assert_ids_exactly_once(ids(read_table_dir(bizon.cwd / "out")), count)
    assert leftovers(bizon.cwd) == []
    report("incremental", kills, count, started)
    assert kills >= 20


def test_killed_full_refresh_publishes_all_or_nothing(bizon, rng, report):
    started = time.monotonic()
    count = 20_000
    source = generator(count=count, page_size=100, sleep=0.004)
    config = bizon.write("p.yml", pipeline("pq-kill-fr", source, parquet(buffer_size=0.05)))
    table = bizon.cwd / "out"

    def absent_or_complete():
        if table.exists():
            assert_ids_exactly_once(ids(read_table_dir(table)), count)

    kills = 0
    for _ in range(2):
        kills += run_until_complete(bizon, config, rng, kills=4, delays=(0.1, 2.0),
                                    after_kill=absent_or_complete)
        assert_ids_exactly_once(ids(read_table_dir(table)), count)
    report("full refresh", kills, count, started)
