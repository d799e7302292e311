"""Kill and resume into BigQuery (the emulators): SIGKILL `bizon run` with the bigquery
destination at random points, rerun until it completes, then query the table: every record
exactly once. A load that landed before its cursor was recorded is found by its deterministic
job id and not run again; a killed full refresh never shows a partial table (after every kill
the published table is absent or complete).

Seeded like test_kill_resume.py (BIZON_KILL_SEED); each scenario prints its figures."""

from __future__ import annotations

import os
import random
import time
import uuid

import pytest

from conftest_google import GoogleApiError, google_emulators  # noqa: F401 (fixture)
from support.exactly_once import assert_ids_exactly_once
from support.pipelines import generator, pipeline, runner
from support.processes import run_until_complete
from support.results import State

SEED = int(os.environ.get("BIZON_KILL_SEED", "20261203"))


@pytest.fixture
def rng():
    return random.Random(SEED)


@pytest.fixture
def dataset(google_emulators) -> str:
    name = f"bq_kill_{uuid.uuid4().hex[:10]}"
    google_emulators.create_dataset(name)
    return name


def destination(emulators, dataset: str, **config) -> dict:
    return {"name": "bigquery", "config": {
        "project_id": emulators.project, "dataset_id": dataset, "gcs_buffer_bucket": emulators.bucket,
        **config}}


def table_ids(emulators, dataset: str, table: str) -> list[int] | None:
    """The generator ids in the table, or None when the table does not exist."""
    try:
        emulators.bq("GET", f"datasets/{dataset}/tables/{table}")
    except GoogleApiError as error:
        if error.status == 404:
            return None
        raise
    found = emulators.query(f"SELECT _source_record_id FROM `{emulators.project}.{dataset}.{table}`")
    return [int(row["_source_record_id"]) for row in found]


def emit(capsys, scenario: str, kills: int, checked: str, started: float) -> None:
    with capsys.disabled():
        print(f"\nbigquery kill-resume {scenario}: {kills} kills, {checked}, "
              f"{time.monotonic() - started:.1f} s (seed {SEED})")


@pytest.mark.long
def test_stream_into_bigquery_killed_and_resumed_loses_and_duplicates_nothing(
        bizon, google_emulators, dataset, rng, capsys):
    started = time.monotonic()
    count = 3_000
    source = generator("stream", count=count, page_size=30, sleep=0.1)
    dest = destination(google_emulators, dataset, destination_id="live", buffer_size=0)
    config = bizon.write("p.yml", pipeline("bq-kill-stream", source, dest, engine=runner("stream")))
    kills = run_until_complete(bizon, config, rng, kills=22, delays=(0.2, 1.2))
    assert_ids_exactly_once(table_ids(google_emulators, dataset, "live"), count)
    emit(capsys, "stream", kills, f"{count} records checked", started)
    assert kills >= 20


@pytest.mark.long
def test_incremental_into_bigquery_killed_and_resumed_loses_and_duplicates_nothing(
        bizon, google_emulators, dataset, rng, capsys):
    started = time.monotonic()
    count = 3_000
    source = generator("incremental", count=count, page_size=30, sleep=0.1, interval_ms=0.01)
    # About three pages per load.
    dest = destination(google_emulators, dataset, destination_id="events", buffer_size=0.008)
    config = bizon.write("p.yml", pipeline("bq-kill-inc", source, dest))

    def staged_rows_never_published_early():
        ids = table_ids(google_emulators, dataset, "events")
        assert ids is None or sorted(ids) == list(range(count))

    kills = run_until_complete(bizon, config, rng, kills=20, delays=(0.2, 1.5),
                               after_kill=staged_rows_never_published_early)
    assert_ids_exactly_once(table_ids(google_emulators, dataset, "events"), count)
    emit(capsys, "incremental", kills, f"{count} records checked", started)
    assert kills >= 20


@pytest.mark.long
def test_killed_full_refresh_into_bigquery_never_shows_a_partial_table(
        bizon, google_emulators, dataset, rng, capsys):
    started = time.monotonic()
    count = 1_500
    source = generator(count=count, page_size=50, sleep=0.02)
    dest = destination(google_emulators, dataset, destination_id="snapshot", buffer_size=0.01)
    config = bizon.write("p.yml", pipeline("bq-kill-fr", source, dest))
    checks = 0

    def absent_or_complete():
        nonlocal checks
        ids = table_ids(google_emulators, dataset, "snapshot")
        if ids is not None:
            assert_ids_exactly_once(ids, count)
        checks += 1

    kills = 0
    for _ in range(2):  # Killed before the first publish, then around the second.
        kills += run_until_complete(bizon, config, rng, kills=6, delays=(0.2, 2.0),
                                    after_kill=absent_or_complete)
        absent_or_complete()
    assert_ids_exactly_once(table_ids(google_emulators, dataset, "snapshot"), count)
    # The staged files of killed jobs were swept by the runs that dropped their staging tables.
    jobs = [job["id"] for job in State(bizon.cwd).jobs()]
    left = [name for job in jobs
            for name in google_emulators.list_objects(google_emulators.bucket, f"generator/records/{job}/")]
    assert left == []
    assert table_ids(google_emulators, dataset, "snapshot_temp") is None
    emit(capsys, "full refresh", kills, f"{count} records checked {checks} times", started)
