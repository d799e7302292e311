"""Kill and resume: SIGKILL `bizon run` at random points, restart it until it completes, then check
that every record reached the published file exactly once (0 lost, 0 duplicated).

The RNG is seeded (BIZON_KILL_SEED, default below), so a failing sequence of kill delays can be
replayed. Each scenario prints its figures (kills, records checked, seconds) even without -s.

* incremental (thread runner, a small multi-page buffer): the first run's full read, killed
  repeatedly; then a second run reading a window of new records, killed repeatedly.
* stream (stream runner, one page per write): one persistent job killed repeatedly.
* full refresh: killed at random points, never leaving a partial published file: after every
  kill the main file is absent (nothing published yet) or holds the whole stream.
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
from collections import Counter
from datetime import timedelta

import pytest

from support.exactly_once import assert_ids_exactly_once
from support.pipelines import file_destination, generator, pipeline, runner
from support.processes import run_until_complete
from support.results import State, ids_in, parse_sql_time

SEED = int(os.environ.get("BIZON_KILL_SEED", "20261202"))
# Record i of the generator has updated_at = start + i * INTERVAL_MS.
INTERVAL_MS = 0.01


@pytest.fixture
def rng():
    return random.Random(SEED)


@pytest.fixture
def report(capsys):
    def emit(scenario: str, kills: int, checked: str, started: float) -> None:
        with capsys.disabled():
            print(
                f"\nkill-resume {scenario}: {kills} kills, {checked}, "
                f"{time.monotonic() - started:.1f} s (seed {SEED})"
            )

    return emit


@pytest.mark.long
def test_incremental_killed_and_resumed_loses_and_duplicates_nothing(bizon, rng, report):
    started = time.monotonic()
    first_count, total = 30_000, 45_000
    destination = file_destination(buffer_size=0.02)  # About four pages per write.
    options = dict(page_size=50, sleep=0.008, interval_ms=INTERVAL_MS)
    config = bizon.write(
        "p.yml", pipeline("kill-inc", generator("incremental", count=first_count, **options), destination)
    )
    kills = run_until_complete(bizon, config, rng, kills=12)
    state = State(bizon.cwd)
    [first] = state.jobs()  # Every restart resumed the one job.
    assert first["status"] == "succeeded"
    assert_ids_exactly_once(ids_in(bizon.read_ndjson("out.json")), first_count)

    # New records, all updated after the first run started: exactly the next run's window.
    last_run = parse_sql_time(first["created_at"])
    start = last_run - timedelta(milliseconds=INTERVAL_MS * (first_count - 0.5))
    source = generator("incremental", count=total, start=start.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), **options)
    bizon.write("p.yml", pipeline("kill-inc", source, destination))
    # The window's upper bound is the second job's start: make sure all new records precede it.
    time.sleep(max(0.0, (total - first_count) * INTERVAL_MS / 1000 + 0.05))
    kills += run_until_complete(bizon, config, rng, kills=12)

    jobs = state.jobs()
    assert [job["status"] for job in jobs] == ["succeeded", "succeeded"]
    assert_ids_exactly_once(ids_in(bizon.read_ndjson("out.json")), total)
    assert not (bizon.cwd / "out_incremental.json").exists()
    report("incremental", kills, f"{total} records checked", started)
    assert kills >= 20


@pytest.mark.long
def test_stream_killed_and_resumed_loses_and_duplicates_nothing(bizon, rng, report):
    started = time.monotonic()
    count = 40_000
    source = generator("stream", count=count, page_size=50, sleep=0.006)
    config = bizon.write("p.yml", pipeline("kill-stream", source, engine=runner("stream")))
    kills = run_until_complete(bizon, config, rng, kills=22)

    [job] = State(bizon.cwd).jobs()  # One persistent job, resumed by every restart.
    assert (job["status"], job["owner"]) == ("running", "")
    assert_ids_exactly_once(ids_in(bizon.read_ndjson("out.json")), count)
    report("stream", kills, f"{count} records checked", started)
    assert kills >= 20


@pytest.mark.long
def test_killed_full_refresh_never_leaves_a_partial_published_file(bizon, rng, report):
    started = time.monotonic()
    count = 20_000
    source = generator(count=count, page_size=100, sleep=0.004)
    config = bizon.write("p.yml", pipeline("kill-fr", source, file_destination(buffer_size=0.05)))
    main = bizon.cwd / "out.json"
    checks = 0

    def published_is_absent_or_complete():
        nonlocal checks
        if main.exists():
            assert_ids_exactly_once(ids_in(bizon.read_ndjson("out.json")), count)
        checks += 1

    # A kill can land after the run marked its job succeeded and before it exited: that run is
    # complete, and the rerun is one more successful full refresh. Such kills are counted.
    late_kills = 0
    succeeded_seen: set[str] = set()

    def succeeded_jobs() -> list[str]:
        try:
            return [job["id"] for job in State(bizon.cwd).jobs() if job["status"] == "succeeded"]
        except sqlite3.OperationalError:  # Killed before the tables existed.
            return []

    def after_kill():
        nonlocal late_kills
        published_is_absent_or_complete()
        succeeded = succeeded_jobs()
        late_kills += len(set(succeeded) - succeeded_seen)
        succeeded_seen.update(succeeded)

    kills = 0
    for _ in range(3):  # Killed before the first publish, then around later ones.
        kills += run_until_complete(bizon, config, rng, kills=4, delays=(0.1, 2.0), after_kill=after_kill)
        published_is_absent_or_complete()
        succeeded_seen.update(succeeded_jobs())
    assert main.exists()
    statuses = Counter(job["status"] for job in State(bizon.cwd).jobs())
    # Killed jobs were retired; the only extra successes are the runs killed after succeeding.
    assert statuses["succeeded"] == 3 + late_kills and statuses["running"] == 0
    report("full refresh", kills, f"{count} records checked {checks} times", started)
