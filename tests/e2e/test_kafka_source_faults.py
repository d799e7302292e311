"""The kafka source under faults: a broker restart mid-stream, and SIGKILLed stream runs resumed.

Both check every message by (partition, offset): 0 lost, 0 duplicated in the file destination.
A stream run joins as a static member named after the pipeline and the host, so a restarted run
takes its partitions back at once instead of waiting for the killed member's session to expire.
The kill test gives each of its runs a HOSTNAME of its own, so its member name never meets one
left by another test on the shared broker.
"""

from __future__ import annotations

import os
import random
import subprocess
import time

import pytest

from conftest_kafka import kafka  # noqa: F401  (fixture)
from support.exactly_once import assert_messages_exactly_once
from support.kafka import (config_text, data_of, expected_positions, kafka_source,
                           slow_first_batch, stream_until)
from support.processes import kill, spawn, stop, wait_for
from support.results import State, line_count

SEED = int(os.environ.get("BIZON_KILL_SEED", "20261202"))


@pytest.mark.serial  # restarts the broker
def test_broker_restart_mid_stream_loses_nothing(bizon, kafka):
    topic = kafka.create_topic(partitions=2)
    kafka.produce_many(topic, 3000, lambda i: {"n": i, "phase": "before"})
    source = kafka_source(kafka, {topic: "events"}, batch_size=100, consumer_timeout=1)
    config = bizon.write("p.yml", config_text(source))
    out = bizon.cwd / "events.json"
    process = spawn(bizon, "run", config)
    try:
        wait_for(lambda: line_count(out) >= 500, timeout=120, what="the first rows")
        kafka.restart()
        kafka.produce_many(topic, 2000, lambda i: {"n": 3000 + i, "phase": "after"})
        wait_for(lambda: process.poll() is not None or line_count(out) >= 5000, timeout=180,
                 what="every row after the restart")
        assert process.poll() is None, process.communicate()[1][-4000:]
    except BaseException:
        if process.poll() is None:
            process.kill()
        raise
    stderr = stop(process)
    assert_messages_exactly_once(data_of(bizon, "events"), expected_positions(kafka, topic))
    assert "Kafka client error" in stderr  # It did see the broker go away.


@pytest.mark.long
def test_killed_stream_runs_resume_without_loss_or_duplicates(bizon, kafka):
    rng = random.Random(SEED)
    topic = kafka.create_topic(partitions=3)
    total = 30_000
    kafka.produce_many(topic, total, lambda i: {"n": i, "pad": "x" * 100})
    source = kafka_source(kafka, {topic: "events"}, batch_size=25, consumer_timeout=1)
    config = bizon.write("p.yml", config_text(source))
    env = {"HOSTNAME": f"kill-test-{rng.randrange(10**6)}"}
    out = bizon.cwd / "events.json"
    kills = 0
    started = time.monotonic()
    while kills < 8 and line_count(out) < total:
        process = spawn(bizon, "run", config, env=env)
        try:
            process.wait(timeout=rng.uniform(0.5, 2.5))
            raise AssertionError(f"the stream run ended by itself\n{process.communicate()[1]}")
        except subprocess.TimeoutExpired:
            kill(process)
            kills += 1
    # The last run: let it catch up, then stop it.
    process = spawn(bizon, "run", config, env=env)
    try:
        wait_for(lambda: process.poll() is not None or line_count(out) >= total, timeout=240,
                 what="every row")
        assert process.poll() is None, process.communicate()[1][-4000:]
        # Nothing more may arrive: a duplicate would show as an extra line.
        time.sleep(2)
    except BaseException:
        if process.poll() is None:
            process.kill()
        raise
    stop(process)
    assert_messages_exactly_once(data_of(bizon, "events"), expected_positions(kafka, topic))
    [job] = State(bizon.cwd).jobs()
    assert job["status"] == "running"
    print(f"\nkafka kill-resume: {kills} kills, {total} messages checked, "
          f"{time.monotonic() - started:.1f} s (seed {SEED})")
    assert kills >= 5


def test_a_consumer_dropped_from_its_group_is_recreated_without_redelivery(bizon, kafka):
    """A batch slower than max.poll.interval.ms: the group drops the member, the commit fails
    with UNKNOWN_MEMBER_ID, and the source rejoins with a new consumer at its own positions.
    A dynamic member; test_kafka_restart checks the static one."""
    topic, consumer_group, config = slow_first_batch(bizon, kafka, static=False)
    stderr = stream_until(bizon, config, {"events": 30})
    assert "UNKNOWN_MEMBER_ID" in stderr and "recreating it" in stderr
    assert_messages_exactly_once(data_of(bizon, "events"), expected_positions(kafka, topic))
    assert kafka.committed_offsets(consumer_group, topic) == {0: 30}
