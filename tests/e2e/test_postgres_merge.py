"""write_disposition: merge and schema contracts into the real PostgreSQL, through the CLI.

The merge tests use the generator's `key_count` (record i carries id i % key_count, so records past
the first key_count update earlier keys) and `delete_every` (a boolean `deleted`, true for the
updates whose index is a multiple of it). `model()` computes, in the test, which record each key
must hold at the end (the last one received, unless it deletes the key), and every table is
compared with it row by row: no key missing, none extra, no duplicate, no stale version.

The kill tests SIGKILL `bizon run` at random points (seeded: BIZON_KILL_SEED) and restart it until
it completes, as test_kill_resume.py does for the file destination.
"""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from datetime import timedelta

import pytest

from conftest_postgres import pg, postgres, postgres_pipeline  # noqa: F401 (fixtures)
from support.paths import PYTHON_DATA
from support.pipelines import generator, runner
from support.processes import run_until_complete
from support.python import needs_custom_source
from support.results import read_result
from test_postgres_sync_modes import parse_backend_time

SEED = int(os.environ.get("BIZON_KILL_SEED", "20261207"))
KEYS = 10_000
DELETE_EVERY = 7
INTERVAL_MS = 0.01
GENERATOR_COLUMNS = [
    {"name": "id", "type": "integer"},
    {"name": "name", "type": "string"},
    {"name": "updated_at", "type": "timestamp"},
    {"name": "value", "type": "integer"},
    {"name": "deleted", "type": "boolean"},
]


@pytest.fixture
def rng():
    return random.Random(SEED)


def model(count: int, key_count: int = KEYS, delete_every: int = DELETE_EVERY) -> dict[int, int]:
    """key -> the index of the record the key holds after the generator's first `count` records:
    the last one received, unless that one deletes it."""
    latest = {}
    for i in range(count):
        latest[i % key_count] = i
    deleted = lambda i: delete_every and i >= key_count and i % delete_every == 0  # noqa: E731
    return {key: i for key, i in latest.items() if not deleted(i)}


def merge_destination(pg, table: str = "out", hard_delete: str | None = "deleted",
                      **options) -> dict:
    """The generator's records unnested into `table`, merged by id, `deleted` deleting."""
    settings = {"unnest": True, "write_disposition": "merge", "primary_key": ["id"],
                "record_schemas": [{"destination_id": table, "record_schema": GENERATOR_COLUMNS}]}
    if hard_delete:
        settings["hard_delete"] = hard_delete
    return pg.destination(table, **{**settings, **options})


def table_rows(pg, table: str = "out") -> list[dict]:
    return pg.query(f'SELECT * FROM "{pg.destination_schema}"."{table}"')


def assert_table_matches(pg, expected: dict[int, int], table: str = "out") -> None:
    """The table holds each key of `expected` once, with the record the model names."""
    rows = table_rows(pg, table)
    ids = [row["id"] for row in rows]
    found = {row["id"]: int(row["name"].removeprefix("record-")) for row in rows}
    duplicates = len(ids) - len(set(ids))
    stale = sorted(key for key, index in found.items() if key in expected and expected[key] != index)
    missing = sorted(set(expected) - set(found))
    extra = sorted(set(found) - set(expected))
    assert (duplicates, len(stale), len(missing), len(extra)) == (0, 0, 0, 0), (
        f"{duplicates} duplicate keys, stale {stale[:10]}, missing {missing[:10]}, "
        f"extra {extra[:10]} ({len(rows)} rows, {len(expected)} expected)")


def report(capsys, scenario: str, kills: int, checked: int, started: float) -> None:
    with capsys.disabled():
        print(f"\nmerge kill-resume {scenario}: {kills} kills, {checked} keys checked, "
              f"{time.monotonic() - started:.1f} s (seed {SEED})")


# ---------------------------------------------------------------------------------------------
# Merge under kills: incremental (merged at the end of each run) and stream (after each cursor).


@pytest.mark.long
def test_incremental_merge_killed_and_resumed_ends_with_the_model(bizon, pg, rng, capsys):
    started = time.monotonic()
    first_count, total = 20_000, 30_000
    options = dict(page_size=50, sleep=0.008, interval_ms=INTERVAL_MS, key_count=KEYS,
                   delete_every=DELETE_EVERY)
    destination = merge_destination(pg, buffer_size=0.02)  # About four pages per load.
    config = bizon.write("p.yml", postgres_pipeline(
        pg, "merge-inc", generator("incremental", count=first_count, **options), destination))
    kills = run_until_complete(bizon, config, rng, kills=12)
    [first] = pg.jobs()  # Every restart resumed the one job.
    assert first["status"] == "succeeded"
    assert_table_matches(pg, model(first_count))

    # Records past first_count were all updated after the first run started: the next window.
    last_run = parse_backend_time(first["created_at"])
    start = last_run - timedelta(milliseconds=INTERVAL_MS * (first_count - 0.5))
    source = generator("incremental", count=total, start=start.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                       **options)
    bizon.write("p.yml", postgres_pipeline(pg, "merge-inc", source, destination))
    time.sleep(max(0.0, (total - first_count) * INTERVAL_MS / 1000 + 0.05))
    kills += run_until_complete(bizon, config, rng, kills=12)

    assert [job["status"] for job in pg.jobs()] == ["succeeded", "succeeded"]
    assert_table_matches(pg, model(total))
    assert not pg.table_exists("out_incremental")
    report(capsys, "incremental delete-insert", kills, len(model(total)), started)
    assert kills >= 20


@pytest.mark.long
def test_stream_upsert_killed_twenty_times_ends_with_the_model(bizon, pg, rng, capsys):
    started = time.monotonic()
    count = 30_000
    source = generator("stream", count=count, page_size=50, sleep=0.006, key_count=KEYS,
                       delete_every=DELETE_EVERY)
    destination = merge_destination(pg, merge_strategy="upsert")
    config = bizon.write("p.yml", postgres_pipeline(pg, "merge-stream", source, destination,
                                                     engine=runner("stream")))
    kills = run_until_complete(bizon, config, rng, kills=22)

    [job] = pg.jobs()  # One persistent job, resumed by every restart.
    assert job["status"] == "running"
    assert_table_matches(pg, model(count))
    # Every load the last cursor covers was applied, and left staging.
    assert pg.scalar(f'SELECT count(*) AS n FROM "{pg.destination_schema}".out_merge') == 0
    report(capsys, "stream upsert", kills, len(model(count)), started)
    assert kills >= 20


# ---------------------------------------------------------------------------------------------
# Merge semantics, one run each.


def test_the_last_record_of_a_key_in_one_load_wins(bizon, pg):
    source = generator("incremental", count=23, page_size=100, key_count=5, delete_every=4)
    config = bizon.write("p.yml", postgres_pipeline(pg, "merge", source, merge_destination(pg)))
    bizon.run("run", config, "--result-json", "r.json", check=0)

    assert read_result(bizon.cwd / "r.json")["records_written"] == 23
    assert_table_matches(pg, model(23, key_count=5, delete_every=4))
    # Record 20 (key 0) deleted its key; records 21 and 22 hold keys 1 and 2.
    assert sorted(row["id"] for row in table_rows(pg)) == [1, 2, 3, 4]


def test_dedup_sort_chooses_the_winner_of_a_key(bizon, pg):
    count, keys = 40, 4
    source = generator("incremental", count=count, page_size=100, key_count=keys)
    destination = merge_destination(pg, hard_delete=None,
                                    dedup_sort={"column": "value", "order": "asc"})
    destination["config"]["record_schemas"][0]["record_schema"] = GENERATOR_COLUMNS[:4]
    config = bizon.write("p.yml", postgres_pipeline(pg, "merge", source, destination))
    bizon.run("run", config, check=0)

    value = lambda i: (i * 7919) % 1000  # noqa: E731 (the generator's `value`)
    expected = {key: min((i for i in range(count) if i % keys == key), key=value)
                for key in range(keys)}
    assert {row["id"]: row["name"] for row in table_rows(pg)} == {
        key: f"record-{i}" for key, i in expected.items()}


def test_merge_across_runs_updates_and_deletes_in_place(bizon, pg):
    destination = merge_destination(pg)
    source = generator("incremental", count=30, page_size=10, key_count=30, delete_every=3)
    config = bizon.write("p.yml", postgres_pipeline(pg, "merge-a", source, destination))
    bizon.run("run", config, check=0)
    assert_table_matches(pg, model(30, key_count=30, delete_every=3))

    # Another pipeline into the same table reads twice as many records: updates of every key
    # (a third of them deletes) merged into the rows the first left.
    source["count"] = 60
    bizon.write("p.yml", postgres_pipeline(pg, "merge-b", source, destination))
    bizon.run("run", config, check=0)
    assert_table_matches(pg, model(60, key_count=30, delete_every=3))
    assert len(table_rows(pg)) == 20


def test_full_refresh_merge_publishes_one_row_per_key(bizon, pg):
    source = generator(count=500, page_size=50, key_count=120, delete_every=5)
    config = bizon.write("p.yml", postgres_pipeline(pg, "merge-fr", source, merge_destination(pg)))
    bizon.run("run", config, check=0)
    bizon.run("run", config, check=0)

    assert_table_matches(pg, model(500, key_count=120, delete_every=5))
    columns = [row["column_name"] for row in pg.query(
        "SELECT column_name FROM information_schema.columns WHERE table_schema ="
        f" '{pg.destination_schema}' AND table_name = 'out' ORDER BY ordinal_position")]
    assert columns == [column["name"] for column in GENERATOR_COLUMNS]


def test_merge_of_raw_records_keys_on_a_field_of_the_payload(bizon, pg):
    destination = pg.destination(write_disposition="merge", primary_key=["id"],
                                 hard_delete="$.deleted", merge_strategy="upsert")
    source = generator("incremental", count=90, page_size=20, key_count=40, delete_every=6)
    config = bizon.write("p.yml", postgres_pipeline(pg, "merge-raw", source, destination))
    bizon.run("run", config, check=0)

    rows = pg.query(f'SELECT _source_data FROM "{pg.destination_schema}".out')
    found = {row["_source_data"]["id"]: row["_source_data"]["name"] for row in rows}
    assert len(rows) == len(found)
    assert found == {key: f"record-{i}" for key, i in model(90, 40, 6).items()}


def test_replace_disposition_swaps_the_table_on_every_run(bizon, pg):
    source = generator("incremental", count=40, page_size=10)
    destination = pg.destination(write_disposition="replace")
    for name in ("replace-a", "replace-b"):  # Two pipelines: each first run reads all 40.
        config = bizon.write("p.yml", postgres_pipeline(pg, name, source, destination))
        bizon.run("run", config, check=0)

    assert pg.ids() == list(range(40))  # Appended twice, it would hold 80.
    assert not pg.table_exists("out_temp")


def test_merge_without_a_primary_key_is_a_config_error_with_its_line(bizon, pg):
    destination = pg.destination(write_disposition="merge")
    config = bizon.write("p.yml", postgres_pipeline(pg, "merge", generator(), destination))
    result = bizon.run("config", "validate", config, check=1)

    assert "destination.config.write_disposition" in result.stderr
    assert "needs a primary_key" in result.stderr
    assert "p.yml:" in result.stderr


def test_a_primary_key_that_is_not_a_column_is_refused(bizon, pg):
    destination = merge_destination(pg, primary_key=["identifier"])
    config = bizon.write("p.yml", postgres_pipeline(pg, "merge", generator(), destination))
    result = bizon.run("run", config, check=1)
    assert "primary_key: 'identifier' is not a column" in result.stderr
    assert not pg.table_exists("out")


# ---------------------------------------------------------------------------------------------
# Schema contracts (unnest), with records whose shape changes mid-stream.

RECORDS = [
    {"id": 1, "amount": 5, "label": "a"},
    {"id": 2, "amount": 7, "label": "b"},
    {"id": 3, "amount": 8, "label": "c", "note": "a new field"},  # A key the schema lacks.
    {"id": 4, "amount": 2.5, "label": "d"},  # A fraction in an integer column.
    {"id": 5, "amount": 9},  # A missing key.
    {"id": 6, "amount": 1, "label": "f"},
]
DECLARED = [{"name": "id", "type": "integer"}, {"name": "amount", "type": "integer"},
            {"name": "label", "type": "string"}]


def contract_pipeline(bizon, pg, contract: str, records=RECORDS, sync_mode="incremental"):
    path = bizon.cwd / "records.json"
    path.write_text(json.dumps(records))
    source = {"name": "listed", "stream": "records", "sync_mode": sync_mode,
              "records_file": str(path), "page_size": 2,
              "source_file_path": str(PYTHON_DATA / "listed_records_source.py")}
    destination = pg.destination(unnest=True, schema_contract=contract, record_schemas=[
        {"destination_id": "out", "record_schema": DECLARED}])
    engine = runner("stream") if sync_mode == "stream" else None
    return bizon.write("p.yml", postgres_pipeline(pg, f"contract-{uuid.uuid4().hex[:6]}", source,
                                                  destination, engine=engine))


def column_types(pg, table: str = "out") -> dict[str, str]:
    return {row["column_name"]: row["data_type"] for row in pg.query(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema ="
        f" '{pg.destination_schema}' AND table_name = '{table}'")}


def by_id(rows: list[dict]) -> dict:
    return {row["id"]: row for row in rows}


@needs_custom_source
@pytest.mark.parametrize("sync_mode", ["incremental", "stream"])
def test_evolve_adds_a_column_and_widens_an_integer_to_numeric(bizon, pg, sync_mode):
    config = contract_pipeline(bizon, pg, "evolve", sync_mode=sync_mode)
    bizon.run("run", config, check=0)

    assert column_types(pg) == {"id": "bigint", "amount": "numeric", "label": "text",
                                "note": "text", **({"_bizon_load_id": "bigint"}
                                                   if sync_mode == "stream" else {})}
    rows = by_id(table_rows(pg))
    assert sorted(rows) == [1, 2, 3, 4, 5, 6]
    assert [rows[i]["note"] for i in (1, 2, 3, 4)] == [None, None, "a new field", None]
    assert float(rows[4]["amount"]) == 2.5 and rows[1]["amount"] == 5  # Not a string.
    assert rows[5]["label"] is None
    # The evolved columns are recorded with the destination cursor, in the backend.
    states = [json.loads(row["destination_state"]) for row in pg.query(
        f'SELECT destination_state FROM "{pg.backend_schema}".destination_cursors')
        if row["destination_state"]]
    recorded = [[column["name"] for column in state.get("columns", {}).get("out", [])]
                for state in states]
    assert ["id", "amount", "label", "note"] in recorded


@needs_custom_source
def test_evolved_columns_reach_a_table_an_earlier_run_created(bizon, pg):
    config = contract_pipeline(bizon, pg, "evolve", records=RECORDS[:2])
    bizon.run("run", config, check=0)
    assert "note" not in column_types(pg)

    config = contract_pipeline(bizon, pg, "evolve", records=RECORDS[2:4])
    bizon.run("run", config, check=0)
    assert column_types(pg) == {"id": "bigint", "amount": "numeric", "label": "text",
                                "note": "text"}
    assert sorted(by_id(table_rows(pg))) == [1, 2, 3, 4]


@needs_custom_source
def test_freeze_refuses_the_record_naming_column_and_record(bizon, pg):
    config = contract_pipeline(bizon, pg, "freeze")
    result = bizon.run("run", config, "--result-json", "r.json", check=1)

    assert "record 2 (row 0 of its batch)" in result.stderr
    assert "key 'note' is not a column" in result.stderr
    assert read_result(bizon.cwd / "r.json")["status"] == "failure"
    assert not pg.table_exists("out")  # The incremental run published nothing.


@needs_custom_source
def test_discard_row_sets_exactly_the_refused_records_aside(bizon, pg):
    config = contract_pipeline(bizon, pg, "discard_row")
    bizon.run("run", config, check=0)

    assert sorted(by_id(table_rows(pg))) == [1, 2, 5, 6]
    assert column_types(pg) == {"id": "bigint", "amount": "bigint", "label": "text"}
    rejected = sorted(table_rows(pg, "out__rejected"), key=lambda row: row["_source_record_id"])
    assert [(row["_source_record_id"], row["record"]) for row in rejected] == [
        ("2", RECORDS[2]), ("3", RECORDS[3])]
    assert "key 'note' is not a column" in rejected[0]["reason"]
    assert "column 'amount' is bigint" in rejected[1]["reason"]


@needs_custom_source
def test_discard_value_keeps_the_row_without_the_value(bizon, pg):
    config = contract_pipeline(bizon, pg, "discard_value")
    bizon.run("run", config, check=0)

    rows = by_id(table_rows(pg))
    assert sorted(rows) == [1, 2, 3, 4, 5, 6]
    assert rows[4]["amount"] is None and rows[4]["label"] == "d"
    assert "note" not in column_types(pg)
    rejected = table_rows(pg, "out__rejected")
    assert sorted(row["_source_record_id"] for row in rejected) == ["2", "3"]
