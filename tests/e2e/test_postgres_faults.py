"""Faults with the postgres backend and destination: the server restarted under a run, and a
run SIGKILLed again and again. Either way the next run resumes with no row lost and none
duplicated: each Write() commits its rows with a load id, the engine records that id with the
cursor, and a resumed job deletes the loads the backend never recorded."""

from __future__ import annotations

import random
import subprocess

import pytest

from conftest_postgres import (  # noqa: F401 (fixtures)
    pg,
    postgres,
    postgres_pipeline,
    restart_postgres,
    start_postgres,
    stop_postgres,
)
from support.exactly_once import assert_exactly_once
from support.pipelines import generator
from support.processes import kill, spawn, wait_for
from support.results import read_result

# Each test restarts or stops a shared server: run alone (conftest.py, marker `serial`).
pytestmark = pytest.mark.serial


def staged_rows(pg, table="out_incremental"):
    if not pg.table_exists(table):
        return 0
    return pg.scalar(f'SELECT count(*) AS n FROM "{pg.destination_schema}"."{table}"')


ERROR_PREFIX = {"backend": "BackendError: ", "destination": "DestinationError: "}


def test_postgres_restart_mid_run_loses_and_duplicates_nothing(bizon, pg):
    # The run reconnects; a statement that met the dead session is resent when it ran on its own
    # (idempotent bookkeeping, BEGIN), and fails the run when it ran inside a transaction (a COPY
    # into staging, rolled back by the server). Either way the result is exact.
    count = 400
    source = generator("incremental", count=count, page_size=10, sleep=0.05)
    config = bizon.write("p.yml", postgres_pipeline(pg, "restart", source,
                                                     pg.destination(buffer_size=0)))
    process = spawn(bizon, "run", config, "--result-json", "r.json")
    wait_for(lambda: staged_rows(pg) >= 50, what="the run to write some rows")
    restart_postgres()
    _, stderr = process.communicate(timeout=120)
    assert "AddressSanitizer" not in stderr and "runtime error" not in stderr, stderr
    outcome = read_result(bizon.cwd / "r.json")
    if process.returncode != 0:
        # Both sides share the server: whichever meets the outage first is blamed, and the error
        # text carries that same one class.
        assert outcome["failure_class"] in ("backend", "destination"), outcome
        assert outcome["error"].startswith(ERROR_PREFIX[outcome["failure_class"]]), outcome
        bizon.run("run", config, check=0)  # Resumes the same job.
    else:
        assert outcome["status"] == "success"
        assert "Reconnected to PostgreSQL" in stderr
    assert pg.ids() == list(range(count))
    [job] = pg.jobs()
    assert job["status"] == "succeeded"


def test_postgres_down_for_long_fails_the_run_and_the_next_run_resumes_exactly(bizon, pg):
    count = 300
    source = generator("incremental", count=count, page_size=10, sleep=0.05)
    config = bizon.write("p.yml", postgres_pipeline(pg, "outage", source,
                                                     pg.destination(buffer_size=0)))
    process = spawn(bizon, "run", config, "--result-json", "r.json")
    wait_for(lambda: staged_rows(pg) >= 50, what="the run to write some rows")
    stop_postgres()
    try:
        # Past the 10 s reconnect window the run gives up, recording what it can.
        _, stderr = process.communicate(timeout=90)
    finally:
        start_postgres()
    assert process.returncode != 0
    outcome = read_result(bizon.cwd / "r.json")
    assert outcome["failure_class"] in ("backend", "destination"), outcome
    assert outcome["error"].startswith(ERROR_PREFIX[outcome["failure_class"]]), outcome
    assert "PostgreSQL" in outcome["error"] or "server" in outcome["error"], outcome
    assert 0 < staged_rows(pg) < count

    [job] = pg.jobs()
    assert job["status"] == "running"  # Left resumable.
    bizon.run("run", config, check=0)
    assert pg.ids() == list(range(count))
    [resumed] = pg.jobs()
    assert resumed["id"] == job["id"] and resumed["status"] == "succeeded"


@pytest.mark.parametrize("mode", ["incremental", "stream"])
def test_kill_and_resume_many_times_loses_and_duplicates_nothing(bizon, pg, mode):
    # Seeded: a failure replays with the same kill points. Each kill lands anywhere from start-up
    # (config, backend, init_job) through fetches, COPYs and cursor commits. The source is slow
    # enough that no killed run gets near the end; the last run, unkilled, goes at full speed
    # (the same pipeline, job and position: only the source's pace differs). Incremental stages
    # into out_incremental (thread runner, a multi-page buffer); stream writes into `out` itself
    # (stream runner, one page per write), where a resume deletes rows in place.
    rng = random.Random(20261202)
    count = 200_000 if mode == "incremental" else 100_000
    kills_wanted = 20
    loaded_table = "out_incremental" if mode == "incremental" else "out"

    def config(sleep):
        source = generator(mode, count=count, page_size=25, sleep=sleep)
        engine = {"runner": {"type": "stream"}} if mode == "stream" else None
        return bizon.write("p.yml", postgres_pipeline(pg, "kills", source,
                                                       pg.destination(buffer_size=0.01),
                                                       engine=engine))

    config(0.01)
    kills = 0
    progress = [0]
    scale = 1.0  # Stretched on a loaded machine, where start-up alone can outlast a delay.
    while kills < kills_wanted:
        process = spawn(bizon, "run", "p.yml")
        try:
            process.wait(timeout=rng.uniform(0.05, 1.5) * scale)
        except subprocess.TimeoutExpired:
            kill(process)
            kills += 1
            progress.append(staged_rows(pg, loaded_table))
            stalled = progress[-1] == progress[-2]
            scale = min(scale * 1.5, 4.0) if stalled else max(scale / 1.5, 1.0)
            continue
        _, stderr = process.communicate()
        raise AssertionError(f"a run ended by itself before its kill point:\n{stderr}")

    assert progress[-1] > 0, f"the killed runs never wrote a row: {progress}"
    config(0)
    bizon.run("run", "p.yml", "--result-json", "r.json", timeout=600, check=0)

    assert_exactly_once(pg.ids(), range(count), what="rows")
    assert read_result(bizon.cwd / "r.json")["status"] == "success"
    statuses = [job["status"] for job in pg.jobs()]
    # One job did the work, resumed after every kill (a stream job stays running). A kill between
    # inserting a job and marking it running leaves a "started" row that the next run ignores.
    final = "succeeded" if mode == "incremental" else "running"
    assert statuses.count(final) == 1, statuses
    assert set(statuses) <= {final, "started"}, statuses
