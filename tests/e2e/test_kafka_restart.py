"""A SIGKILLed kafka stream run resumes within seconds (issue 19, item 3), on the real broker.

A restarted process derives the same static member id (group.instance.id = <pipeline>.<host>)
as the one it replaces, from gethostname() rather than an exported HOSTNAME, so the broker hands
it the dead member's partitions at once. Before, each restart joined as a new dynamic member and
the group waited for the dead one's session to expire (session.timeout.ms, 45 s by default):
nothing was consumed for that long.

The time from a restart to its first new record is asserted below RESUME_BOUND_S. Timed
assertions are avoided elsewhere; this one is the issue's acceptance criterion ("consumes again
within 5 s"). The bound is 10 s, generous for the dev build's ASan start-up and a 2-core machine,
and still far from the 45 s of the failure mode. HOSTNAME is set empty for every run so that the
test checks the gethostname() path even where the variable is exported.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest_kafka import kafka  # noqa: F401  (fixture)
from support.exactly_once import assert_messages_exactly_once
from support.kafka import (config_text, data_of, expected_positions, kafka_source,
                           slow_first_batch, stream_until)
from support.processes import kill, spawn, wait_for
from support.results import State, line_count

# Restarts or stops a shared server, or bounds a time: run alone (conftest.py, marker `serial`).
pytestmark = pytest.mark.serial

SEED = int(os.environ.get("BIZON_KILL_SEED", "20261202"))
RESUME_BOUND_S = 10.0
NO_HOSTNAME = {"HOSTNAME": ""}


def start(bizon, config, log: Path, cwd: Path | None = None, env=None) -> subprocess.Popen:
    """`bizon run config` with its stderr appended to `log` (a pipe nobody reads could fill)."""
    return spawn(bizon, "run", config, env={**NO_HOSTNAME, **(env or {})}, log=log, cwd=cwd)


def test_killed_stream_runs_consume_again_within_seconds_and_lose_nothing(bizon, kafka):
    rng = random.Random(SEED)
    topic = kafka.create_topic(partitions=3)
    produced = kafka.produce_many(topic, 6000, lambda i: {"n": i, "pad": "x" * 100})
    source = kafka_source(kafka, {topic: "events"}, batch_size=50, consumer_timeout=1)
    config = bizon.write("p.yml", config_text(source))
    out = bizon.cwd / "events.json"
    log = bizon.cwd / "runs.log"

    def tail() -> str:
        return log.read_text()[-4000:]

    process = start(bizon, config, log)
    wait_for(lambda: process.poll() is not None or line_count(out) >= 300, timeout=120,
             what="the first rows")
    assert process.poll() is None, tail()
    kill(process)

    latencies: list[float] = []
    blind_kills = 0
    for _ in range(6):
        # Producers keep writing, as in the trial.
        produced += kafka.produce_many(topic, 1500, lambda i: {"n": produced + i, "pad": "y"})
        before = line_count(out)
        process = start(bizon, config, log)
        restarted = time.monotonic()
        try:
            # Measured past the bound so that a failure shows how long it really took.
            wait_for(lambda: process.poll() is not None or line_count(out) > before,
                     timeout=120, what="a new record after the restart")
            latencies.append(time.monotonic() - restarted)
            assert process.poll() is None, tail()
            time.sleep(rng.uniform(0.3, 3.0))
        finally:
            kill(process)
        # A run killed at a random moment, maybe before or while it joins the group: its
        # successor must take over from it just as fast.
        process = start(bizon, config, log)
        time.sleep(rng.uniform(0.3, 3.0))
        kill(process)
        blind_kills += 1

    # The last run drains the topic and is stopped.
    process = start(bizon, config, log)
    try:
        wait_for(lambda: process.poll() is not None or line_count(out) >= produced, timeout=240,
                 what="every row")
        assert process.poll() is None, tail()
        time.sleep(2)  # A duplicate arriving late would show as an extra line.
    except BaseException:
        kill(process)
        raise
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)
    assert process.returncode == 0, tail()

    shown = ", ".join(f"{s:.2f}" for s in latencies)
    print(f"\nkafka restart: first new record {shown} s after each restart; "
          f"{len(latencies) + blind_kills + 1} kills, {produced} messages (seed {SEED})")
    assert max(latencies) < RESUME_BOUND_S, f"restart to first new record: {shown} s\n{tail()}"
    assert_messages_exactly_once(data_of(bizon, "events"), expected_positions(kafka, topic))
    assert kafka.committed_offsets(source["group_id"], topic) == kafka.end_offsets(topic)
    [job] = State(bizon.cwd).jobs()
    assert job["status"] == "running"
    assert "FENCED" not in log.read_text()  # Each successor replaced a dead member only.


def test_a_static_member_slower_than_max_poll_interval_rejoins_without_redelivery(bizon, kafka):
    """A batch slower than max.poll.interval.ms: librdkafka drops the static member's id, and a
    commit under the same group.instance.id would be fenced, fatally, as if another process had
    taken it. The source sees the reset id, skips that commit and rejoins with a new consumer
    at its own positions. (test_kafka_source_faults checks the same with a dynamic member.)"""
    topic, consumer_group, config = slow_first_batch(bizon, kafka, static=True)
    stderr = stream_until(bizon, config, {"events": 30}, env=NO_HOSTNAME)
    assert "group.instance.id=kafka-" in stderr  # Static membership was on.
    assert "max.poll.interval.ms exceeded" in stderr and "recreating it" in stderr
    assert "Failure" not in stderr
    assert_messages_exactly_once(data_of(bizon, "events"), expected_positions(kafka, topic))
    assert kafka.committed_offsets(consumer_group, topic) == {0: 30}


def test_a_second_live_process_with_the_same_member_id_fences_the_first_clearly(bizon, kafka):
    """The same pipeline on the same host twice, each with its own backend (so that the run lock
    does not see the other): the newer process takes the static member id and the older one
    stops with an error saying why; with `member` set apart, both run as members of the group."""
    topic = kafka.create_topic(partitions=2)
    kafka.produce_many(topic, 400, lambda i: {"n": i})
    source = kafka_source(kafka, {topic: "events"}, batch_size=20, consumer_timeout=1,
                          member="env://BIZON_MEMBER")
    config = bizon.write("p.yml", config_text(source))

    def run_two(member_a: str, member_b: str, phase: str):
        """Starts a process in <phase>-a/, and once it consumes, another in <phase>-b/."""
        directories = [bizon.cwd / f"{phase}-{side}" for side in "ab"]
        for directory in directories:
            directory.mkdir()
        first = start(bizon, config, directories[0] / "run.log", cwd=directories[0],
                      env={"BIZON_MEMBER": member_a})
        wait_for(lambda: first.poll() is not None or line_count(directories[0] / "events.json"),
                 timeout=60, what="the first process's rows")
        second = start(bizon, config, directories[1] / "run.log", cwd=directories[1],
                       env={"BIZON_MEMBER": member_b})
        return (first, second), directories

    (first, second), directories = run_two("a", "a", "same")
    try:
        first.wait(timeout=60)
    finally:
        kill(first)
        kill(second)
    failure = (directories[0] / "run.log").read_text()
    assert first.returncode != 0, failure[-4000:]
    assert "FENCED_INSTANCE_ID" in failure and "its own source.member" in failure, failure[-4000:]

    kafka.produce_many(topic, 400, lambda i: {"n": 400 + i})
    processes, directories = run_two("a", "b", "apart")
    try:
        # The first may have read everything before the group shared the partitions: keep
        # producing until the second one gets some.
        deadline = time.monotonic() + 60
        while not line_count(directories[1] / "events.json"):
            assert time.monotonic() < deadline, "no rows from the second member within 60 s"
            assert all(p.poll() is None for p in processes)
            kafka.produce_many(topic, 20, lambda i: {"n": -1})
            time.sleep(0.5)
        time.sleep(3)
        assert all(p.poll() is None for p in processes), [
            (d / "run.log").read_text()[-2000:] for d in directories]
    finally:
        for process in processes:
            kill(process)
    for directory in directories:
        assert "FENCED" not in (directory / "run.log").read_text()
