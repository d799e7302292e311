"""The RabbitMQ fixture against the real test node: what the rabbitmq queue tests rely on."""

from __future__ import annotations

import uuid

import pika
import pytest

from conftest_rabbitmq import rabbitmq  # noqa: F401 (fixture)
from support.servers import server_pid


def test_publish_depth_get_and_purge(rabbitmq):
    queue = f"bizon-test-{uuid.uuid4().hex[:8]}"
    rabbitmq.publish(queue, [b"one", "two", b"three"])
    assert rabbitmq.queue_depth(queue) == 3

    assert rabbitmq.get_all(queue, ack=False) == [b"one", b"two", b"three"]
    assert rabbitmq.queue_depth(queue) == 3  # Not acknowledged: requeued.
    assert rabbitmq.get_all(queue) == [b"one", b"two", b"three"]
    assert rabbitmq.queue_depth(queue) == 0

    rabbitmq.publish(queue, [b"x"] * 5)
    assert rabbitmq.purge(queue) == 5
    assert rabbitmq.queue_depth(queue) == 0
    rabbitmq.delete_queue(queue)
    assert not rabbitmq.queue_exists(queue)
    with pytest.raises(AssertionError, match="does not exist"):
        rabbitmq.queue_depth(queue)


def test_the_credentials_are_checked(rabbitmq):
    parameters = pika.ConnectionParameters(
        host=rabbitmq.host, port=rabbitmq.port,
        credentials=pika.PlainCredentials(rabbitmq.user, "not-the-password"),
        connection_attempts=1)
    with pytest.raises(pika.exceptions.ProbableAuthenticationError):
        pika.BlockingConnection(parameters)


@pytest.mark.serial  # restarts the broker
def test_restart_is_an_outage_that_keeps_the_port_and_durable_messages(rabbitmq):
    queue = f"bizon-test-{uuid.uuid4().hex[:8]}"
    rabbitmq.publish(queue, [b"kept-1", b"kept-2"])
    connection = rabbitmq.connection()
    pid = server_pid("rabbitmq")

    rabbitmq.restart()

    assert server_pid("rabbitmq") not in (None, pid)  # A new node process.
    with pytest.raises(pika.exceptions.AMQPError):  # The old connection was closed.
        connection.channel().queue_declare(queue=queue, passive=True)
    assert rabbitmq.queue_depth(queue) == 2
    assert rabbitmq.get_all(queue) == [b"kept-1", b"kept-2"]
    rabbitmq.delete_queue(queue)
