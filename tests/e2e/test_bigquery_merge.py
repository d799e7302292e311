"""write_disposition: merge into the bigquery destination (load jobs) against the BigQuery and
GCS emulators: a generator emitting inserts, updates and deletes (key_count, delete_every) ends
with exactly the table a model computed here, row by row, with no duplicate key and no stale
version, through runs SIGKILLed at random points in stream and incremental modes (the MERGE of a
load runs once under its deterministic job id, and the cursor is recorded after it); Debezium
change events merged with no transform.

Seeded like test_bigquery_kill_resume.py (BIZON_KILL_SEED); each kill scenario prints its
figures."""

from __future__ import annotations

import os
import random
import time
import uuid
from datetime import timedelta

import pytest

from conftest_google import GoogleApiError, google_emulators  # noqa: F401 (fixture)
from support.paths import PYTHON_DATA
from support.pipelines import generator, pipeline, runner
from support.processes import run_until_complete
from support.python import needs_custom_source, needs_transforms
from support.results import State, parse_sql_time

SEED = int(os.environ.get("BIZON_KILL_SEED", "20261207"))
KEYS = 10_000
DELETE_EVERY = 7

COLUMNS = [("id", "INTEGER", "REQUIRED"), ("name", "STRING", "NULLABLE"),
           ("updated_at", "TIMESTAMP", "NULLABLE"), ("value", "INTEGER", "NULLABLE"),
           ("deleted", "BOOLEAN", "NULLABLE")]


@pytest.fixture
def rng():
    return random.Random(SEED)


@pytest.fixture
def dataset(google_emulators) -> str:
    name = f"bq_merge_{uuid.uuid4().hex[:10]}"
    google_emulators.create_dataset(name)
    return name


def merge_destination(emulators, dataset: str, table: str = "users", **config) -> dict:
    schema = [{"name": name, "type": kind, "mode": mode} for name, kind, mode in COLUMNS]
    return {"name": "bigquery", "config": {
        "project_id": emulators.project, "dataset_id": dataset,
        "gcs_buffer_bucket": emulators.bucket, "destination_id": table, "unnest": True,
        "record_schemas": [{"destination_id": table, "record_schema": schema}],
        "write_disposition": "merge", "primary_key": ["id"], "hard_delete": "deleted",
        "buffer_size": 0, **config}}


def model(count: int, keys: int = KEYS) -> dict[int, tuple[str, int]]:
    """The table the generator's records 0..count-1 make: each key's last record, unless that
    one deletes it (generator_source.cc: id i % key_count, deleted past the first key_count
    when i % delete_every == 0)."""
    rows: dict[int, tuple[str, int]] = {}
    for i in range(count):
        key = i % keys
        if i >= keys and i % DELETE_EVERY == 0:
            rows.pop(key, None)
        else:
            rows[key] = (f"record-{i}", (i * 7919) % 1000)
    return rows


def table_rows(emulators, dataset: str, table: str = "users") -> list[tuple[int, str, int]]:
    found = emulators.query(
        f"SELECT id, name, value FROM `{emulators.project}.{dataset}.{table}` ORDER BY id")
    return [(int(row["id"]), row["name"], int(row["value"])) for row in found]


def assert_table_is(emulators, dataset: str, expected: dict[int, tuple[str, int]]) -> None:
    rows = table_rows(emulators, dataset)
    ids = [row[0] for row in rows]
    duplicates = len(ids) - len(set(ids))
    assert duplicates == 0, f"{duplicates} duplicate keys"
    stale = [row for row in rows if row[0] in expected and expected[row[0]] != row[1:]]
    assert stale == [], f"{len(stale)} stale versions, first {stale[:3]}"
    assert set(ids) == set(expected), (
        f"missing {sorted(set(expected) - set(ids))[:5]}, extra {sorted(set(ids) - set(expected))[:5]}")


def no_duplicate_keys(emulators, dataset: str):
    """After a kill: every MERGE applied whole or not at all, so no key has two rows (the table
    is missing until the first MERGE)."""
    def check():
        try:
            emulators.bq("GET", f"datasets/{dataset}/tables/users")
        except GoogleApiError as error:
            if error.status == 404:
                return
            raise
        found = emulators.query(
            f"SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS keys "
            f"FROM `{emulators.project}.{dataset}.users`")
        assert found[0]["n"] == found[0]["keys"], found
    return check


def merge_tables_left(emulators, dataset: str) -> list[str]:
    answer = emulators.bq("GET", f"datasets/{dataset}/tables")
    return sorted(table["tableReference"]["tableId"] for table in answer.get("tables", [])
                  if "__bizon_merge_" in table["tableReference"]["tableId"])


def emit(capsys, scenario: str, kills: int, rows: int, started: float) -> None:
    with capsys.disabled():
        print(f"\nbigquery merge kill-resume {scenario}: {kills} kills, {rows} rows checked, "
              f"{time.monotonic() - started:.1f} s (seed {SEED})")


@pytest.mark.long
def test_merge_stream_killed_and_resumed_ends_with_the_model_table(
        bizon, google_emulators, dataset, rng, capsys):
    started = time.monotonic()
    count = 3 * KEYS  # Every key inserted, then updated twice; one update in 7 deletes.
    source = generator("stream", count=count, page_size=500, key_count=KEYS,
                       delete_every=DELETE_EVERY, sleep=0.05)
    dest = merge_destination(google_emulators, dataset, merge_strategy="upsert")
    config = bizon.write("p.yml", pipeline("bq-merge-stream", source, dest,
                                           engine=runner("stream")))
    kills = run_until_complete(bizon, config, rng, kills=20, delays=(0.3, 1.5),
                               after_kill=no_duplicate_keys(google_emulators, dataset))
    expected = model(count)
    assert_table_is(google_emulators, dataset, expected)
    assert merge_tables_left(google_emulators, dataset) == []
    emit(capsys, "stream (upsert)", kills, len(expected), started)
    assert kills >= 20


@pytest.mark.long
def test_merge_incremental_runs_killed_and_resumed_end_with_the_model_table(
        bizon, google_emulators, dataset, rng, capsys):
    started = time.monotonic()
    interval_ms = 0.01
    first, total = 2 * KEYS, 3 * KEYS
    options = dict(page_size=500, key_count=KEYS, delete_every=DELETE_EVERY, sleep=0.05,
                   interval_ms=interval_ms)
    dest = merge_destination(google_emulators, dataset, merge_strategy="delete-insert")
    config = bizon.write("p.yml", pipeline(
        "bq-merge-inc", generator("incremental", count=first, **options), dest))
    check = no_duplicate_keys(google_emulators, dataset)
    kills = run_until_complete(bizon, config, rng, kills=10, delays=(0.3, 1.5), after_kill=check)
    assert_table_is(google_emulators, dataset, model(first))

    # The second run's window holds records first..total-1 only: their updated_at follow the
    # first job's start (the generator's `start` moves record first-1 just before it).
    last_run = max(parse_sql_time(job["created_at"]) for job in State(bizon.cwd).jobs())
    start = last_run - timedelta(milliseconds=interval_ms * (first - 0.5))
    source = generator("incremental", count=total,
                       start=start.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), **options)
    bizon.write("p.yml", pipeline("bq-merge-inc", source, dest))
    time.sleep((total - first) * interval_ms / 1000 + 0.2)
    kills += run_until_complete(bizon, config, rng, kills=10, delays=(0.3, 1.5),
                                after_kill=check)
    expected = model(total)
    assert_table_is(google_emulators, dataset, expected)
    assert merge_tables_left(google_emulators, dataset) == []
    emit(capsys, "incremental (delete-insert, 2 runs)", kills, len(expected), started)
    assert kills >= 20


def test_a_full_refresh_merge_publishes_the_merged_run_and_replaces_the_table(
        bizon, google_emulators, dataset):
    keys = KEYS // 10
    options = dict(page_size=500, key_count=keys, delete_every=DELETE_EVERY)
    dest = merge_destination(google_emulators, dataset,
                             dedup_sort={"column": "updated_at", "order": "desc"})
    config = bizon.write("p.yml", pipeline("bq-merge-fr", generator(count=2 * keys, **options),
                                           dest))
    bizon.run("run", config, check=0)
    assert_table_is(google_emulators, dataset, model(2 * keys, keys))
    # A second full refresh of fewer records replaces the table: keys it does not hold are gone.
    bizon.write("p.yml", pipeline("bq-merge-fr", generator(count=keys // 2, **options), dest))
    bizon.run("run", config, check=0)
    assert [row[0] for row in table_rows(google_emulators, dataset)] == list(range(keys // 2))
    names = [t["tableReference"]["tableId"]
             for t in google_emulators.bq("GET", f"datasets/{dataset}/tables").get("tables", [])]
    assert sorted(names) == ["users"]  # Neither users_temp nor a merge staging table is left.


@needs_custom_source
def test_debezium_events_merge_into_the_source_table_without_a_transform(
        bizon, google_emulators, dataset):
    schema = [{"name": "id", "type": "INTEGER", "mode": "REQUIRED"},
              {"name": "name", "type": "STRING", "mode": "NULLABLE"},
              {"name": "email", "type": "STRING", "mode": "NULLABLE"}]
    dest = {"name": "bigquery", "config": {
        "project_id": google_emulators.project, "dataset_id": dataset,
        "gcs_buffer_bucket": google_emulators.bucket, "destination_id": "users", "unnest": True,
        "record_schemas": [{"destination_id": "users", "record_schema": schema}],
        "write_disposition": "merge", "primary_key": ["id"], "change_format": "debezium",
        "buffer_size": 0}}
    source = {"name": "debezium_cdc", "stream": "users", "page_size": 2}
    config = bizon.write("p.yml", pipeline("bq-debezium", source, dest))
    bizon.run("run", config, "--custom-source", PYTHON_DATA / "debezium_source.py", check=0)
    found = google_emulators.query(
        f"SELECT id, name, email FROM `{google_emulators.project}.{dataset}.users` ORDER BY id")
    # Three creates, Zoë's email updated, Björn and Chloé deleted (in other pages than their
    # creates): the source table holds Zoë alone.
    assert found == [{"id": "1", "name": "Zoë", "email": "zoe@bizon.dev"}]


def test_merge_config_errors_name_the_option_and_its_line(bizon, google_emulators, dataset):
    dest = merge_destination(google_emulators, dataset, primary_key=["email"])
    config = bizon.write("p.yml", pipeline("bq-merge-bad", generator(count=10), dest))
    result = bizon.run("config", "validate", config)
    assert result.returncode != 0
    assert "destination.config.record_schemas[0].primary_key" in result.stderr + result.stdout
    assert "'email' is not a column of the table's record_schema" in result.stderr + result.stdout
    raw = merge_destination(google_emulators, dataset, unnest=False)
    config = bizon.write("p.yml", pipeline("bq-merge-raw", generator(count=10), raw))
    result = bizon.run("config", "validate", config)
    assert result.returncode != 0
    assert "destination.config.write_disposition: needs unnest: true" in \
        result.stderr + result.stdout


# Records from index 1,500 on carry a new field, and from 2,500 on a fractional value.
EVOLVING = """
index = int(data["name"].split("-")[1])
if index >= 1500:
    data["tier"] = "t" + str(index % 3)
if index >= 2500:
    data["value"] = data["value"] + 0.5
"""


@needs_transforms
def test_an_evolving_merge_killed_and_resumed_adds_and_widens_its_columns_once(
        bizon, google_emulators, dataset, rng, capsys):
    started = time.monotonic()
    keys, count = 1_000, 3_000
    source = generator("stream", count=count, page_size=100, key_count=keys,
                       delete_every=DELETE_EVERY, sleep=0.05)
    dest = merge_destination(google_emulators, dataset, merge_strategy="upsert",
                             schema_contract="evolve")
    config = bizon.write("p.yml", pipeline(
        "bq-merge-evolve", source, dest, engine=runner("stream"),
        transforms=[{"label": "evolve", "python": EVOLVING}]))
    kills = run_until_complete(bizon, config, rng, kills=6, delays=(0.3, 1.5),
                               after_kill=no_duplicate_keys(google_emulators, dataset))
    found = google_emulators.query(
        f"SELECT id, name, value, tier FROM `{google_emulators.project}.{dataset}.users` "
        f"ORDER BY id")
    expected = model(count, keys)
    assert [int(row["id"]) for row in found] == sorted(expected)
    for row in found:
        name, base = expected[int(row["id"])]
        index = int(name.split("-")[1])
        assert row["name"] == name
        assert float(row["value"]) == (base + 0.5 if index >= 2500 else base)
        assert row["tier"] == (f"t{index % 3}" if index >= 1500 else None)
    emit(capsys, "stream (upsert, evolve)", kills, len(found), started)
    assert kills >= 6


def test_replace_makes_each_incremental_run_replace_the_table(bizon, google_emulators, dataset):
    interval_ms = 1
    first, total = 60, 100
    options = dict(page_size=25, interval_ms=interval_ms)
    dest = {"name": "bigquery", "config": {
        "project_id": google_emulators.project, "dataset_id": dataset,
        "gcs_buffer_bucket": google_emulators.bucket, "destination_id": "events",
        "write_disposition": "replace", "buffer_size": 0}}
    config = bizon.write("p.yml", pipeline("bq-replace", generator("incremental", count=first,
                                                                   **options), dest))
    bizon.run("run", config, check=0)

    def ids() -> list[int]:
        found = google_emulators.query(
            f"SELECT _source_record_id FROM `{google_emulators.project}.{dataset}.events`")
        return sorted(int(row["_source_record_id"]) for row in found)

    assert ids() == list(range(first))
    [job] = State(bizon.cwd).jobs()
    start = parse_sql_time(job["created_at"]) - timedelta(milliseconds=interval_ms * (first - 0.5))
    source = generator("incremental", count=total, start=start.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                       **options)
    bizon.write("p.yml", pipeline("bq-replace", source, dest))
    time.sleep((total - first) * interval_ms / 1000 + 0.05)
    bizon.run("run", config, check=0)
    assert ids() == list(range(first, total))  # The second window only: the table was replaced.
