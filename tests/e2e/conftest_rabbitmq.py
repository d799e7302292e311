"""Fixtures for the RabbitMQ end-to-end tests: the real node `scripts/test-servers.sh start
rabbitmq` runs on loopback (Debian's rabbitmq-server, a node of its own), reached with pika.

Its settings come from BIZON_RABBITMQ_HOST, BIZON_RABBITMQ_PORT, BIZON_RABBITMQ_USER and
BIZON_RABBITMQ_PASSWORD; when they are not set, the `rabbitmq` fixture starts the node itself with
the same script. Test modules import it: `from conftest_rabbitmq import rabbitmq`.

    def test_x(bizon, rabbitmq):
        ... run bizon with a rabbitmq queue on rabbitmq.host:rabbitmq.port ...
        assert rabbitmq.queue_depth("bizon") == 0
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from support.servers import import_or_skip, run_servers, skip_or_fail

pika = import_or_skip("pika")

ENV_NAMES = ("BIZON_RABBITMQ_HOST", "BIZON_RABBITMQ_PORT", "BIZON_RABBITMQ_USER",
             "BIZON_RABBITMQ_PASSWORD")


class RabbitMQ:
    """The test node: connection settings, queue inspection and a restart."""

    def __init__(self, host: str, port: int, user: str, password: str):
        self.host = host
        self.port = port
        self.user = user
        self.password = password

    def connection(self) -> "pika.BlockingConnection":
        """A new blocking connection (the caller closes it)."""
        parameters = pika.ConnectionParameters(
            host=self.host, port=self.port,
            credentials=pika.PlainCredentials(self.user, self.password),
            connection_attempts=3, retry_delay=0.5, blocked_connection_timeout=30)
        return pika.BlockingConnection(parameters)

    def _with_channel(self, action):
        connection = self.connection()
        try:
            return action(connection.channel())
        finally:
            connection.close()

    def queue_depth(self, name: str) -> int:
        """How many messages are ready in queue `name` (a missing queue fails the test)."""
        def depth(channel):
            try:
                return channel.queue_declare(queue=name, passive=True).method.message_count
            except pika.exceptions.ChannelClosedByBroker as error:
                raise AssertionError(f"queue {name!r} does not exist: {error}") from None
        return self._with_channel(depth)

    def queue_exists(self, name: str) -> bool:
        def exists(channel):
            try:
                channel.queue_declare(queue=name, passive=True)
                return True
            except pika.exceptions.ChannelClosedByBroker:
                return False
        return self._with_channel(exists)

    def purge(self, name: str) -> int:
        """Empties queue `name` if it exists; returns how many messages it dropped."""
        def purge(channel):
            try:
                return channel.queue_purge(queue=name).method.message_count
            except pika.exceptions.ChannelClosedByBroker:
                return 0
        return self._with_channel(purge)

    def delete_queue(self, name: str) -> None:
        self._with_channel(lambda channel: channel.queue_delete(queue=name))

    def publish(self, queue: str, bodies, durable: bool = True) -> None:
        """Declares `queue` (durable unless told) and publishes each body to it, persistent,
        with publisher confirms."""
        def publish(channel):
            channel.queue_declare(queue=queue, durable=durable)
            channel.confirm_delivery()
            for body in bodies:
                channel.basic_publish(
                    exchange="", routing_key=queue,
                    body=body if isinstance(body, bytes) else str(body).encode(),
                    properties=pika.BasicProperties(delivery_mode=2), mandatory=True)
        self._with_channel(publish)

    def get_all(self, queue: str, ack: bool = True, timeout: float = 10) -> list[bytes]:
        """Every message ready in `queue` now, acknowledged (removed) unless `ack` is False (then
        they are requeued when the connection closes)."""
        def get_all(channel):
            wanted = channel.queue_declare(queue=queue, passive=True).method.message_count
            bodies, deadline = [], time.monotonic() + timeout
            while len(bodies) < wanted and time.monotonic() < deadline:
                method, _properties, body = channel.basic_get(queue=queue, auto_ack=ack)
                if method is None:
                    time.sleep(0.05)
                    continue
                bodies.append(body)
            return bodies
        return self._with_channel(get_all)

    def restart(self) -> None:
        """Stops the node and starts it again on the same port with the same data: connections
        are closed; durable queues and their persistent messages survive."""
        run_servers("restart", "rabbitmq")


def _from_env(env) -> RabbitMQ | None:
    if not all(env.get(name) for name in ENV_NAMES):
        return None
    return RabbitMQ(env["BIZON_RABBITMQ_HOST"], int(env["BIZON_RABBITMQ_PORT"]),
                    env["BIZON_RABBITMQ_USER"], env["BIZON_RABBITMQ_PASSWORD"])


@pytest.fixture(scope="session")
def rabbitmq() -> RabbitMQ:
    """The test node, started here when the environment names none."""
    server = _from_env(os.environ)
    if server is not None:
        return server
    if not Path("/usr/lib/rabbitmq/bin/rabbitmq-server").exists() and \
            not shutil.which("rabbitmq-server"):
        skip_or_fail("RabbitMQ is not installed; scripts/install-deps.sh --with-test-servers "
                    "installs it")
    env = run_servers("start", "rabbitmq")
    server = _from_env(env)
    if server is None:
        pytest.fail(f"scripts/test-servers.sh start rabbitmq printed no settings: {env}")
    os.environ.update(env)  # For the bizon processes the tests start.
    return server
