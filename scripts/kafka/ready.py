#!/usr/bin/env python3
"""Exits 0 when the Kafka broker at 127.0.0.1:PORT serves metadata that lists itself, 1 when not
(yet). scripts/test-servers.sh polls it after starting the broker: an open port alone is not
enough, since a KRaft broker accepts connections before it has joined the quorum and been
unfenced, and a client that produces then gets errors instead of a leader.

One Metadata request, version 4 (the oldest a 4.x broker still serves, and the newest whose
encoding is not "flexible"), with the standard library only, so it works before the test venv
exists:

    request : int32 size | int16 api_key=3 | int16 api_version=4 | int32 correlation_id
              | string client_id | nullable array topics (-1: all) | bool allow_auto_topic_creation
    response: int32 size | int32 correlation_id | int32 throttle_time_ms
              | array brokers [int32 node_id, string host, int32 port, nullable string rack]
              | nullable string cluster_id | int32 controller_id | ...

Usage: ready.py PORT
"""

import socket
import struct
import sys

METADATA = 3
VERSION = 4
CORRELATION_ID = 7


def string(data: bytes, at: int) -> tuple[str | None, int]:
    (length,) = struct.unpack_from(">h", data, at)
    at += 2
    if length < 0:
        return None, at
    return data[at : at + length].decode(), at + length


def receive(sock: socket.socket, size: int) -> bytes:
    chunks = b""
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        chunks += chunk
    return chunks


def brokers(port: int) -> tuple[list[tuple[int, str, int]], int]:
    client = b"bizon-test-servers"
    body = struct.pack(">hhih", METADATA, VERSION, CORRELATION_ID, len(client)) + client
    body += struct.pack(">i?", -1, False)
    with socket.create_connection(("127.0.0.1", port), timeout=3) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", receive(sock, 4))
        data = receive(sock, size)
    correlation, _throttle, count = struct.unpack_from(">iii", data, 0)
    if correlation != CORRELATION_ID:
        raise ValueError(f"unexpected correlation id {correlation}")
    at = 12
    found = []
    for _ in range(count):
        (node,) = struct.unpack_from(">i", data, at)
        host, at = string(data, at + 4)
        (broker_port,) = struct.unpack_from(">i", data, at)
        _rack, at = string(data, at + 4)
        found.append((node, host, broker_port))
    _cluster, at = string(data, at)
    (controller,) = struct.unpack_from(">i", data, at)
    return found, controller


def main() -> int:
    port = int(sys.argv[1])
    try:
        found, controller = brokers(port)
    except (OSError, ValueError, struct.error) as error:
        print(f"kafka not ready: {error}", file=sys.stderr)
        return 1
    if controller < 0 or not any(broker_port == port for _, _, broker_port in found):
        print(f"kafka not ready: brokers {found}, controller {controller}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
