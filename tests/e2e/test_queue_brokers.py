"""Network queues end to end: the kafka and rabbitmq queues, with the producer and the consumer
in one `bizon run` (`--role all`) or in two (`--role producer` and `--role consumer`), against the
real brokers of scripts/test-servers.sh.

Every scenario checks the published file: each generator record exactly once (0 lost, 0
duplicated), or nothing published at all after a producer failure.
"""

from __future__ import annotations

import sqlite3
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml

from conftest import Bizon
from conftest_kafka import kafka  # noqa: F401 (fixture)
from conftest_postgres import pg, postgres  # noqa: F401 (fixtures)
from conftest_rabbitmq import rabbitmq  # noqa: F401 (fixture)
from support.exactly_once import assert_ids_exactly_once
from support.pipelines import file_destination, generator, pipeline
from support.processes import kill, spawn, wait_for
from support.results import State, ids_in, read_result

BROKERS = ["kafka", "rabbitmq"]


class Broker:
    """One queue of one broker for one test: its `engine.queue` block and what is left in it."""

    def __init__(self, kind: str, server):
        self.kind = kind
        self.server = server
        self.name = f"bizon_test_{uuid.uuid4().hex[:12]}"

    def queue(self, **extra) -> dict:
        if self.kind == "kafka":
            config = {"queue": {"bootstrap_server": self.server.bootstrap, "topic": self.name}}
        else:
            config = {
                "queue": {
                    "host": self.server.host,
                    "port": int(self.server.port),
                    "queue_name": self.name,
                    "username": self.server.user,
                    "password": self.server.password,
                }
            }
        config.update(extra)
        return {"queue": {"type": self.kind, "config": config}}

    def unconsumed(self) -> int:
        """Messages left unacknowledged (rabbitmq) or uncommitted by the group (kafka)."""
        if self.kind == "rabbitmq":
            return self.server.queue_depth(self.name)
        ends = self.server.end_offsets(self.name)
        committed = self.server.committed_offsets("bizon", self.name)
        return sum(end - committed.get(partition, 0) for partition, end in ends.items())


@pytest.fixture(params=BROKERS)
def broker(request) -> Broker:
    server = request.getfixturevalue(request.param)
    return Broker(request.param, server)


def config_for(bizon, broker: Broker, count: int, page_size: int, name="queued", **source) -> Path:
    text = pipeline(
        name,
        generator(count=count, page_size=page_size, **source),
        file_destination(buffer_size=0.2),
        engine=broker.queue(),
    )
    return bizon.write("pipeline.yml", text)


def start(bizon, *args, log: str) -> subprocess.Popen:
    """Starts bizon with its stderr in a file of the working directory, to read while it runs."""
    return spawn(bizon, *args, log=bizon.cwd / log)


def finish(process: subprocess.Popen, timeout: float = 240) -> int:
    process.wait(timeout=timeout)
    return process.returncode


def log_of(bizon, name: str) -> str:
    return (bizon.cwd / name).read_text()


def written_cursors(bizon) -> int:
    state = State(bizon.cwd)
    try:
        jobs = state.jobs()
        return len(state.destination_cursors(jobs[-1]["id"])) if jobs else 0
    except sqlite3.OperationalError:  # The consumer is still creating the tables.
        return 0


def test_two_processes_deliver_every_record_exactly_once(bizon, broker):
    count = 50_000
    config = config_for(bizon, broker, count, page_size=500)
    # The producer may start first: it waits for the job the consumer opens.
    producer = start(bizon, "run", config, "--role", "producer", "--result-json", "p.json",
                     log="producer.log")
    consumer = start(bizon, "run", config, "--role", "consumer", "--result-json", "c.json",
                     log="consumer.log")
    assert finish(consumer) == 0, log_of(bizon, "consumer.log")
    assert finish(producer) == 0, log_of(bizon, "producer.log")
    assert_ids_exactly_once(ids_in(bizon.read_ndjson("out.json")), count)

    produced, consumed = read_result(bizon.cwd / "p.json"), read_result(bizon.cwd / "c.json")
    assert (produced["role"], produced["producer"], produced["consumer"]) == (
        "producer", "success", None)
    assert produced["records_published"] == count
    assert (consumed["role"], consumed["producer"], consumed["consumer"]) == (
        "consumer", None, "success")
    assert consumed["records_written"] == count
    assert produced["job_id"] == consumed["job_id"]
    assert State(bizon.cwd).job(consumed["job_id"])["status"] == "succeeded"
    assert "Pipeline finished with status" not in log_of(bizon, "consumer.log")
    assert broker.unconsumed() == 0, "every message is acknowledged once the run published"


def test_hosts_sharing_a_postgres_backend(bizon, broker, pg):  # noqa: F811
    """The multi-host layout: the producer runs in a directory of its own (another host: no
    shared files), the consumer writes the file destination; they share only the PostgreSQL
    backend and the broker."""
    count = 30_000
    text = yaml_with_postgres(pg, broker, count)
    producer_host = Bizon(bizon.binary, bizon.cwd / "producer_host")
    producer_host.cwd.mkdir()
    producer = start(producer_host, "run", producer_host.write("pipeline.yml", text), "--role",
                     "producer", "--result-json", "p.json", log="producer.log")
    consumer = start(bizon, "run", bizon.write("pipeline.yml", text), "--role", "consumer",
                     "--result-json", "c.json", log="consumer.log")
    assert finish(consumer) == 0, log_of(bizon, "consumer.log")
    assert finish(producer) == 0, log_of(producer_host, "producer.log")
    assert_ids_exactly_once(ids_in(bizon.read_ndjson("out.json")), count)
    assert not (producer_host.cwd / "out.json").exists()
    assert [job["status"] for job in pg.jobs()] == ["succeeded"]
    assert read_result(producer_host.cwd / "p.json")["job_id"] == pg.jobs()[0]["id"]


def yaml_with_postgres(pg, broker: Broker, count: int) -> str:
    config = {
        "name": "hosts",
        "source": generator(count=count, page_size=500),
        "destination": file_destination(buffer_size=0.2),
        "engine": {**broker.queue(), "backend": pg.backend()},
    }
    return yaml.safe_dump(config, sort_keys=False)


def test_role_all_runs_both_sides_through_the_broker(bizon, broker):
    count = 20_000
    config = config_for(bizon, broker, count, page_size=1000)
    result = bizon.run("run", config, "--result-json", "r.json", timeout=240, check=0)
    assert f"to {broker.kind} " in result.stderr, result.stderr
    assert_ids_exactly_once(ids_in(bizon.read_ndjson("out.json")), count)
    outcome = read_result(bizon.cwd / "r.json")
    assert (outcome["producer"], outcome["consumer"]) == ("success", "success")
    assert "role" not in outcome
    assert broker.unconsumed() == 0

    # A second full refresh runs a new job through the same queue and replaces the file.
    bizon.run("run", config, timeout=240, check=0)
    assert_ids_exactly_once(ids_in(bizon.read_ndjson("out.json")), count)
    assert [job["status"] for job in State(bizon.cwd).jobs()] == ["succeeded", "succeeded"]


def test_producer_failure_fails_the_consumer_and_publishes_nothing(bizon, broker):
    config = config_for(bizon, broker, 10_000, page_size=500, fail_at_iteration=5)
    producer = start(bizon, "run", config, "--role", "producer", "--result-json", "p.json",
                     log="producer.log")
    consumer = start(bizon, "run", config, "--role", "consumer", "--result-json", "c.json",
                     log="consumer.log")
    assert finish(consumer) == 1, log_of(bizon, "consumer.log")
    assert finish(producer) == 1, log_of(bizon, "producer.log")

    assert not (bizon.cwd / "out.json").exists(), "a failed run publishes nothing"
    consumed = read_result(bizon.cwd / "c.json")
    assert (consumed["producer"], consumed["consumer"]) == ("source_error", "source_error")
    assert consumed["failure_class"] == "source"
    assert "generator asked to fail at iteration 5" in consumed["error"]
    produced = read_result(bizon.cwd / "p.json")
    assert (produced["producer"], produced["failure_class"]) == ("source_error", "source")
    assert "Error: Pipeline finished with status Failure (Producer: source_error)" in log_of(
        bizon, "producer.log")
    assert State(bizon.cwd).job(consumed["job_id"])["status"] == "failed"
    assert broker.unconsumed() == 0, "the error termination is acknowledged"


def test_killed_consumer_restarts_without_loss_or_duplicates(bizon, broker):
    count = 20_000
    # Slow pages, a small back-pressure bound and a small buffer: the producer is still
    # publishing when the consumer dies, and must pause for it.
    text = pipeline(
        "killed",
        generator(count=count, page_size=200, sleep=0.02, payload_bytes=200),
        file_destination(buffer_size=0.05),
        engine=broker.queue(max_bytes=200_000),
    )
    config = bizon.write("pipeline.yml", text)
    producer = start(bizon, "run", config, "--role", "producer", log="producer.log")
    consumer = start(bizon, "run", config, "--role", "consumer", log="consumer.log")
    wait_for(lambda: written_cursors(bizon) >= 5, timeout=120, what="the first writes")
    kill(consumer)
    # With nobody writing, the producer stops once the bound is reached.
    wait_for(lambda: "waiting for the consumer" in log_of(bizon, "producer.log"), timeout=120,
             what="the producer to pause")
    assert producer.poll() is None, "the producer waits for the consumer instead of finishing"

    restarted = start(bizon, "run", config, "--role", "consumer", "--result-json", "c.json",
                      log="consumer2.log")
    assert finish(restarted) == 0, log_of(bizon, "consumer2.log")
    assert finish(producer) == 0, log_of(bizon, "producer.log")
    assert "treating it as interrupted" in log_of(bizon, "consumer2.log")
    assert_ids_exactly_once(ids_in(bizon.read_ndjson("out.json")), count)
    jobs = State(bizon.cwd).jobs()
    assert [job["status"] for job in jobs] == ["succeeded"], "the restart resumed the same job"


@pytest.mark.serial  # restarts the broker
def test_broker_restart_mid_run_loses_nothing(bizon, broker):
    count = 30_000
    text = pipeline(
        "restarted",
        generator(count=count, page_size=300, sleep=0.03),
        file_destination(buffer_size=0.1),
        engine=broker.queue(),
    )
    config = bizon.write("pipeline.yml", text)
    producer = start(bizon, "run", config, "--role", "producer", log="producer.log")
    consumer = start(bizon, "run", config, "--role", "consumer", log="consumer.log")
    wait_for(lambda: written_cursors(bizon) >= 3, timeout=120, what="the first writes")
    assert producer.poll() is None and consumer.poll() is None
    broker.server.restart()
    assert finish(consumer, timeout=400) == 0, log_of(bizon, "consumer.log")
    assert finish(producer, timeout=400) == 0, log_of(bizon, "producer.log")
    assert_ids_exactly_once(ids_in(bizon.read_ndjson("out.json")), count)
    if broker.kind == "rabbitmq":  # librdkafka reconnects silently; rabbitmq-c is ours to drive.
        assert "reconnecting" in log_of(bizon, "consumer.log")


def test_split_roles_need_a_network_queue(bizon):
    config = bizon.write("p.yml", pipeline("local", generator(count=10)))
    result = bizon.run("run", config, "--role", "consumer", check=1)
    assert "p.yml: engine.queue.type: --role consumer needs a kafka or rabbitmq queue" in (
        result.stderr)
    assert not (bizon.cwd / "out.json").exists()


def test_unknown_role_is_a_cli_error(bizon):
    config = bizon.write("p.yml", pipeline("local", generator(count=10)))
    result = bizon.run("run", config, "--role", "worker")
    assert result.returncode != 0
    assert "--role" in result.stderr and "worker" in result.stderr
    assert not (bizon.cwd / "bizon.sqlite3").exists(), "nothing ran"


def test_producer_without_consumer_gives_up_clearly(bizon, rabbitmq):  # noqa: F811
    broker = Broker("rabbitmq", rabbitmq)
    config = config_for(bizon, broker, 100, page_size=10, name="lonely")
    result = bizon.run("run", config, "--role", "producer", "--wait-for-job", "0.5",
                       "--result-json", "p.json", check=1)
    assert "no consumer opened a job for pipeline 'lonely'" in result.stderr
    assert "start `bizon run --role consumer`" in result.stderr
    assert read_result(bizon.cwd / "p.json")["role"] == "producer"
    assert not rabbitmq.queue_exists(broker.name), "it gave up before publishing anything"


def test_refused_credentials_are_a_clear_queue_error(bizon, rabbitmq):  # noqa: F811
    broker = Broker("rabbitmq", rabbitmq)
    queue = broker.queue()
    queue["queue"]["config"]["queue"]["password"] = "not-the-password-4812"
    text = pipeline("refused", generator(count=10), file_destination(), engine=queue)
    result = bizon.run("run", bizon.write("p.yml", text), "--result-json", "r.json", check=1)
    assert f"cannot log in to {rabbitmq.host}:{rabbitmq.port} as {rabbitmq.user}" in result.stderr
    assert "ACCESS_REFUSED" in result.stderr
    assert "not-the-password-4812" not in result.stderr
    outcome = read_result(bizon.cwd / "r.json")
    assert (outcome["failure_class"], outcome["consumer"]) == ("queue", "queue_error")
    assert not (bizon.cwd / "out.json").exists()
