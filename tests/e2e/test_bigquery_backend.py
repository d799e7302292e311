"""`bizon run` with `engine.backend.type: bigquery` against the BigQuery emulator: the state
tables are created in the backend's dataset, a run's job and cursors land there, a killed run is
resumed from them by the next process (same job, every record once), and a missing dataset is a
clear error unless `create_schema` is set.

Under CI=true a missing emulator fails these tests (conftest_google's fixture)."""

from __future__ import annotations

import os
import random
import subprocess
import uuid

import pytest

from conftest_google import google_emulators  # noqa: F401 (fixture)
from support.exactly_once import assert_exactly_once, assert_ids_exactly_once
from support.pipelines import file_destination, generator, pipeline
from support.processes import kill, spawn, wait_for
from support.results import ids_in


def backend(emulators, dataset: str, **config) -> dict:
    return {"backend": {"type": "bigquery", "config": {
        "database": emulators.project, "schema": dataset, "create_schema": True, **config}}}


@pytest.fixture
def dataset(google_emulators):
    name = f"bizon_state_e2e_{uuid.uuid4().hex[:12]}"
    yield name
    try:
        google_emulators.bq("DELETE", f"datasets/{name}?deleteContents=true")
    except AssertionError:
        pass  # Never created (the missing-dataset test), or already gone.


def jobs(emulators, dataset: str) -> list[dict]:
    return emulators.query(
        f"SELECT id, name, status, sync_mode, owner FROM `{emulators.project}.{dataset}.stream_jobs`"
        " ORDER BY created_at")


def cursors(emulators, dataset: str) -> list[dict]:
    return emulators.query(
        f"SELECT job_id, to_source_iteration, rows_written, success FROM"
        f" `{emulators.project}.{dataset}.destination_cursors` ORDER BY to_source_iteration")


def test_a_run_keeps_its_state_in_the_bigquery_dataset(bizon, google_emulators, dataset):
    config = bizon.write("p.yml", pipeline(
        "bq-state", generator(count=300, page_size=50), file_destination(buffer_size=0),
        engine=backend(google_emulators, dataset, schema_location="EU")))
    bizon.run("run", config, check=0, timeout=300)

    assert sorted(ids_in(bizon.read_ndjson("out.json"))) == list(range(300))
    [job] = jobs(google_emulators, dataset)
    assert (job["name"], job["status"], job["sync_mode"]) == ("bq-state", "succeeded", "full_refresh")
    written = cursors(google_emulators, dataset)
    assert written and all(c["job_id"] == job["id"] and c["success"] == "true" for c in written)
    assert sum(int(c["rows_written"]) for c in written) == 300
    # The run lock was released at the end.
    [lock] = google_emulators.query(
        f"SELECT owner, token FROM `{google_emulators.project}.{dataset}.bizon_run_locks`")
    assert lock == {"owner": None, "token": None}
    # The dataset was created where schema_location says.
    assert google_emulators.bq("GET", f"datasets/{dataset}")["location"] == "EU"


def test_a_killed_run_resumes_from_the_state_in_bigquery(bizon, google_emulators, dataset):
    count = 2_000
    config = bizon.write("p.yml", pipeline(
        "bq-resume", generator("incremental", count=count, page_size=50, sleep=0.05),
        file_destination(buffer_size=0),
        engine=backend(google_emulators, dataset)))
    process = spawn(bizon, "run", config)
    try:
        # Killed once it has committed a few cursors to BigQuery, mid-stream.
        wait_for(lambda: process.poll() is not None or _cursor_count(google_emulators, dataset) >= 3,
                 timeout=240, interval=0.5, what="cursors in the BigQuery backend")
    finally:
        kill(process)
    assert process.returncode != 0, "the run finished before it could be killed"
    [interrupted] = jobs(google_emulators, dataset)
    assert interrupted["status"] == "running"
    committed = cursors(google_emulators, dataset)

    # A new process (its own backend instance, its own run lock) resumes the same job.
    result = bizon.run("run", config, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "taking over the run lock" in result.stderr  # The killed run left it behind.
    [job] = jobs(google_emulators, dataset)
    assert (job["id"], job["status"]) == (interrupted["id"], "succeeded")
    after = cursors(google_emulators, dataset)
    assert after[: len(committed)] == committed
    assert_ids_exactly_once(ids_in(bizon.read_ndjson("out.json")), count)


@pytest.mark.long
def test_repeated_kills_at_random_points_lose_and_duplicate_nothing(bizon, google_emulators,
                                                                   dataset):
    # Kills land anywhere: while the dataset is created or migrated, between taking the run lock
    # and the first job, between a write and its cursor. Seeded, so a failure can be replayed.
    seed = int(os.environ.get("BIZON_KILL_SEED", "20261203"))
    rng = random.Random(seed)
    count = 3_000
    # 60 pages of 0.2 s each: a clean run needs at least 12 s, more than six killed runs of at
    # most 1.5 s can do, so the run cannot complete before the sixth kill on any machine.
    config = bizon.write("p.yml", pipeline(
        "bq-kills", generator("incremental", count=count, page_size=50, sleep=0.2),
        file_destination(buffer_size=0),
        engine=backend(google_emulators, dataset)))
    kills = 0
    for _ in range(40):
        process = spawn(bizon, "run", config)
        if kills < 6:
            try:
                process.wait(timeout=rng.uniform(0.2, 1.5))
            except subprocess.TimeoutExpired:
                kill(process)
                kills += 1
                continue
        _, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, f"exit {process.returncode} (seed {seed})\n{stderr}"
        break
    assert kills == 6
    # Restarts resumed the running job. Besides it there can be a job killed between its insert
    # and its start (status started, nothing written), and, when a kill landed after a run had
    # succeeded and before it exited, one more successful run that found nothing new.
    all_jobs = jobs(google_emulators, dataset)
    assert all_jobs[-1]["status"] == "succeeded", all_jobs
    assert {job["status"] for job in all_jobs} <= {"succeeded", "started"}, all_jobs
    started = {job["id"] for job in all_jobs if job["status"] == "started"}
    assert not [c for c in cursors(google_emulators, dataset) if c["job_id"] in started]
    assert_exactly_once(ids_in(bizon.read_ndjson("out.json")), range(count),
                        what=f"records (seed {seed})")


def _cursor_count(emulators, dataset: str) -> int:
    try:
        return len(cursors(emulators, dataset))
    except AssertionError:  # The tables do not exist yet.
        return 0


def test_a_missing_dataset_is_an_error_without_create_schema(bizon, google_emulators, dataset):
    config = bizon.write("p.yml", pipeline(
        "bq-missing", generator(count=10), file_destination(),
        engine=backend(google_emulators, dataset, create_schema=False)))
    result = bizon.run("run", config, check=1)
    assert (f"Schema or dataset {google_emulators.project}.{dataset} does not exist in the "
            "database, you need to create it first") in result.stderr
    assert not (bizon.cwd / "out.json").exists()
