"""Several processes of one kafka stream pipeline, members of one consumer group (issue 19), into
the postgres destination with the postgres backend, on the real broker.

Each process runs the same YAML; `source.member: env://BIZON_MEMBER` tells processes on one host
apart (their static group.instance.id). Each member holds the partitions the group assigns it,
under a job of its own; the backend's partition ledger holds every partition's position, and a
member records a write's cursor and its partitions' new positions in one transaction, fenced by
the epoch of its claim. The tests kill members with SIGKILL at random moments and check that every
message is in the table exactly once.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest_kafka import kafka  # noqa: F401  (fixture)
from conftest_postgres import pg, postgres, postgres_pipeline  # noqa: F401  (fixtures)
from support.exactly_once import assert_ids_exactly_once
from support.kafka import kafka_source
from support.processes import kill, spawn, wait_for

SEED = int(os.environ.get("BIZON_KILL_SEED", "20261203"))
PARTITIONS = 6
# A dead member's partitions move after its session expires: short here, so tests need not wait
# the 45 s default.
GROUP_SETTINGS = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000}


def member_pipeline(pg, kafka, topic: str) -> str:
    source = kafka_source(kafka, {topic: "events"}, batch_size=100, consumer_timeout=1,
                          member="env://BIZON_MEMBER")
    source["consumer_config"].update(GROUP_SETTINGS)
    return postgres_pipeline(pg, "members", source, pg.destination("events"),
                             engine={"runner": {"type": "stream"}})


class Members:
    """The member processes of one pipeline, each logging to members-<n>.log."""

    def __init__(self, bizon, config: Path):
        self.bizon = bizon
        self.config = config
        self.running: dict[str, subprocess.Popen] = {}

    def log(self, member: str) -> Path:
        return self.bizon.cwd / f"members-{member}.log"

    def start(self, member: str) -> None:
        self.running[member] = spawn(self.bizon, "run", self.config, log=self.log(member),
                                     env={"BIZON_MEMBER": member, "HOSTNAME": ""})

    def kill(self, member: str) -> None:
        kill(self.running.pop(member))

    def check_alive(self) -> None:
        for member, process in self.running.items():
            assert process.poll() is None, f"member {member} ended\n{self.tail(member)}"

    def tail(self, member: str) -> str:
        return self.log(member).read_text()[-4000:]

    def stop_all(self) -> None:
        """SIGTERM: each member writes the batch in hand and ends successfully."""
        for process in self.running.values():
            process.send_signal(signal.SIGTERM)
        for member, process in list(self.running.items()):
            process.wait(timeout=90)
            assert process.returncode == 0, f"member {member} exit {process.returncode}\n" + \
                self.tail(member)
        self.running.clear()

    def kill_all(self) -> None:
        for member in list(self.running):
            self.kill(member)


def produce(kafka, topic: str, first: int, count: int) -> int:
    """Messages {"n": first..first+count-1}, spread over every partition in turn."""
    for partition in range(PARTITIONS):
        values = [{"n": n, "pad": "p" * 50} for n in range(first + partition, first + count,
                                                             PARTITIONS)]
        kafka.produce(topic, values, partition=partition)
    return first + count


class SteadyProducer:
    """Produces a message to every partition in turn, `rate` a second, from a thread, until
    stopped: members join, die and come back while messages keep arriving."""

    def __init__(self, kafka, topic: str, first: int, rate: int = 300):
        self.kafka, self.topic, self.next, self.rate = kafka, topic, first, rate
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped.wait(0.2):
            self.next = produce(self.kafka, self.topic, self.next, self.rate // 5)

    def stop(self) -> int:
        """Stops producing; the number of messages produced so far."""
        self.stopped.set()
        self.thread.join(timeout=60)
        return self.next


def loaded(pg) -> list[int]:
    if not pg.table_exists("events"):
        return []
    rows = pg.query(f'SELECT _source_data AS data FROM "{pg.destination_schema}".events')
    envelopes = [json.loads(row["data"]) if isinstance(row["data"], str) else row["data"]
                 for row in rows]
    return sorted(envelope["value"]["n"] for envelope in envelopes)


def rows_by_member(pg) -> dict[str, int]:
    """Rows each member's job recorded as written, by member (the stream name's suffix)."""
    if not pg.table_exists("destination_cursors", schema=pg.backend_schema):
        return {}
    rows = pg.query(f'SELECT j.stream_name AS stream, coalesce(sum(c.rows_written), 0) AS n'
                    f' FROM "{pg.backend_schema}".stream_jobs j'
                    f' LEFT JOIN "{pg.backend_schema}".destination_cursors c'
                    f' ON c.job_id = j.id AND c.success GROUP BY j.stream_name')
    return {row["stream"].rsplit(".", 1)[-1]: int(row["n"]) for row in rows}


def wait_for_all(pg, members: Members, produced: int, timeout: float = 300) -> None:
    def done() -> bool:
        members.check_alive()
        return len(loaded(pg)) >= produced
    try:
        wait_for(done, timeout=timeout, what=f"{produced} rows")
    except AssertionError as failure:
        ledger = pg.query(f'SELECT partition_id, position, owner, epoch'
                          f' FROM "{pg.backend_schema}".partition_positions ORDER BY 1')
        raise AssertionError(f"{failure}: {len(loaded(pg))} loaded; ledger {ledger}; rows by "
                             f"member {rows_by_member(pg)}") from None


@pytest.mark.long
def test_three_members_share_the_partitions_and_a_killed_one_is_replaced_exactly_once(
        bizon, kafka, pg):
    topic = kafka.create_topic(partitions=PARTITIONS)
    producer = SteadyProducer(kafka, topic, produce(kafka, topic, 0, 600))
    members = Members(bizon, bizon.write("p.yml", member_pipeline(pg, kafka, topic)))
    try:
        for member in ("1", "2", "3"):
            members.start(member)
        wait_for(lambda: members.check_alive() or
                 {m for m, n in rows_by_member(pg).items() if n > 0} == {"1", "2", "3"},
                 timeout=180, what="each of the three members to write")
        members.kill("1")  # Mid-run: maybe between a write and its cursor.
        members.start("4")
        # Past member 1's session: its partitions move to the others, then some more.
        wait_for(lambda: members.check_alive() or rows_by_member(pg).get("4", 0) > 0,
                 timeout=180, what="member 4 to write")
        time.sleep(8)
        produced = producer.stop()
        wait_for_all(pg, members, produced)
        time.sleep(3)  # A duplicate arriving late would show.
        members.stop_all()
    except BaseException:
        producer.stop()
        members.kill_all()
        raise
    assert_ids_exactly_once(loaded(pg), produced)
    by_member = rows_by_member(pg)
    assert set(by_member) == {"1", "2", "3", "4"}, by_member
    assert all(n > 0 for n in by_member.values()), f"a member wrote nothing: {by_member}"
    ledger = pg.query(f'SELECT partition_id, position FROM "{pg.backend_schema}".partition_positions')
    assert {row["partition_id"] for row in ledger} == {f"{topic}/{p}" for p in range(PARTITIONS)}
    assert sum(int(row["position"]) for row in ledger) == produced
    claims = "".join(members.log(m).read_text() for m in ("1", "2", "3", "4"))
    assert "claimed" in claims and "FENCED" not in claims


@pytest.mark.long
def test_random_members_killed_again_and_again_lose_and_duplicate_nothing(bizon, kafka, pg):
    rng = random.Random(SEED)
    topic = kafka.create_topic(partitions=PARTITIONS)
    producer = SteadyProducer(kafka, topic, produce(kafka, topic, 0, 600))
    members = Members(bizon, bizon.write("p.yml", member_pipeline(pg, kafka, topic)))
    kills = 0
    try:
        for member in ("1", "2", "3"):
            members.start(member)
        wait_for(lambda: members.check_alive() or len(loaded(pg)) >= 200, timeout=180,
                 what="the first rows")
        for round_ in range(12):
            victim = rng.choice(sorted(members.running))
            time.sleep(rng.uniform(0.2, 2.0))
            members.kill(victim)
            kills += 1
            # Every third victim stays away past its session, so its partitions (and whatever it
            # wrote after its last cursor) go to the others; the rest come back at once.
            time.sleep(8 if round_ % 3 == 2 else rng.uniform(0.0, 1.0))
            members.start(victim)
        produced = producer.stop()
        wait_for_all(pg, members, produced)
        time.sleep(3)
        members.stop_all()
    except BaseException:
        producer.stop()
        members.kill_all()
        raise
    logs = "".join(members.log(m).read_text() for m in ("1", "2", "3"))
    print(f"\nkafka members: {kills} kills of 3 members, {produced} messages, "
          f"{logs.count('is gone: discarding')} adoptions of a dead member's job (seed {SEED})")
    assert_ids_exactly_once(loaded(pg), produced)
    assert all(n > 0 for n in rows_by_member(pg).values())

