"""A DogStatsD listener for tests: UDP on loopback (and, when asked, a Unix datagram socket) that
parses every datagram exactly as the Datadog Agent's DogStatsD server reads it and records a
violation for anything the protocol does not allow.

Datagram: one or more metric lines separated by newlines (a trailing newline is allowed), at most
8192 bytes (the agent's default dogstatsd_buffer_size). Metric line:

    <name>:<value>[:<value>...]|<type>[|@<sample rate>][|#<tag>,<tag>...][|c:<container>][|T<ts>]

* name: starts with a letter, then letters, digits, underscores and periods, at most 200 chars;
* type: c (count), g (gauge), ms (timer), h (histogram), s (set), d (distribution); several values
  in one line (protocol v1.1) only for d, h and ms;
* value: a number (for a set, any text);
* sample rate: a number in (0, 1];
* tags: non-empty, without spaces around them; `key:value` or a bare `key`.

Events (`_e{`) and service checks (`_sc|`) are not what bizon sends: they are violations too.

    statsd = FakeDogStatsD().start()
    ... run bizon with datadog_agent_host 127.0.0.1, datadog_agent_port statsd.port ...
    statsd.wait_for(lambda m: m.name == "bizon_pipeline.status")
    assert statsd.total("bizon_pipeline.records_synced") == 100
    statsd.stop()

Standard library only.
"""

from __future__ import annotations

import math
import os
import re
import socket
import threading
import time
from dataclasses import dataclass, field

MAX_DATAGRAM = 8192
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.]{0,199}")
TYPES = {"c", "g", "ms", "h", "s", "d"}
MULTI_VALUE_TYPES = {"d", "h", "ms"}


@dataclass
class Metric:
    name: str
    values: list
    type: str
    sample_rate: float = 1.0
    tags: list = field(default_factory=list)
    transport: str = "udp"

    @property
    def tag_map(self) -> dict:
        out = {}
        for tag in self.tags:
            key, _, value = tag.partition(":")
            out[key] = value
        return out


class ProtocolError(Exception):
    pass


def parse_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ProtocolError(f"value {text!r} is not a number") from None
    if math.isnan(value) or math.isinf(value):
        raise ProtocolError(f"value {text!r} is not finite")
    return value


def parse_line(line: str) -> Metric:
    if line.startswith("_e{") or line.startswith("_sc|"):
        raise ProtocolError("an event or a service check, not a metric")
    parts = line.split("|")
    if len(parts) < 2:
        raise ProtocolError(f"no type in {line!r}")
    head, kind, extras = parts[0], parts[1], parts[2:]
    name, sep, value_text = head.partition(":")
    if not sep or not value_text:
        raise ProtocolError(f"no value in {line!r}")
    if not NAME.fullmatch(name):
        raise ProtocolError(f"invalid metric name {name!r}")
    if kind not in TYPES:
        raise ProtocolError(f"unknown metric type {kind!r} in {line!r}")
    raw_values = value_text.split(":")
    if len(raw_values) > 1 and kind not in MULTI_VALUE_TYPES:
        raise ProtocolError(f"several values for a metric of type {kind!r}")
    values = raw_values if kind == "s" else [parse_number(v) for v in raw_values]
    metric = Metric(name=name, values=values, type=kind)
    seen = set()
    for extra in extras:
        if not extra:
            raise ProtocolError(f"empty field in {line!r}")
        prefix = extra[0] if extra[0] in "@#T" else extra[:2]
        if prefix in seen:
            raise ProtocolError(f"field {prefix!r} twice in {line!r}")
        seen.add(prefix)
        if prefix == "@":
            rate = parse_number(extra[1:])
            if not 0 < rate <= 1:
                raise ProtocolError(f"sample rate {rate} outside (0, 1]")
            metric.sample_rate = rate
        elif prefix == "#":
            tags = extra[1:].split(",")
            for tag in tags:
                if not tag or tag != tag.strip() or tag.startswith(":"):
                    raise ProtocolError(f"invalid tag {tag!r} in {line!r}")
            metric.tags = tags
        elif prefix == "c:":
            pass
        elif prefix == "T":
            if not extra[1:].isdigit():
                raise ProtocolError(f"invalid timestamp {extra!r}")
        else:
            raise ProtocolError(f"unknown field {extra!r} in {line!r}")
    return metric


class FakeDogStatsD:
    def __init__(self, unix_path: str | None = None):
        self.unix_path = unix_path
        self.metrics: list[Metric] = []
        self.datagrams: list[bytes] = []
        self.violations: list[str] = []
        self._lock = threading.Lock()
        self._sockets: list[tuple[socket.socket, str]] = []
        self._threads: list[threading.Thread] = []
        self._stopping = False

    def start(self) -> "FakeDogStatsD":
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        self._sockets.append((udp, "udp"))
        if self.unix_path:
            if os.path.exists(self.unix_path):
                os.unlink(self.unix_path)
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            unix.bind(self.unix_path)
            self._sockets.append((unix, "unix"))
        for sock, transport in self._sockets:
            sock.settimeout(0.1)
            thread = threading.Thread(target=self._serve, args=(sock, transport), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self):
        self._stopping = True
        for thread in self._threads:
            thread.join(timeout=2)
        for sock, _ in self._sockets:
            sock.close()
        self._sockets.clear()
        if self.unix_path and os.path.exists(self.unix_path):
            os.unlink(self.unix_path)

    @property
    def port(self) -> int:
        return next(s for s, t in self._sockets if t == "udp").getsockname()[1]

    def _serve(self, sock: socket.socket, transport: str):
        while not self._stopping:
            try:
                data = sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            self.receive(data, transport)

    def receive(self, data: bytes, transport: str = "udp"):
        """Parses one datagram (also called directly by unit tests of this fake)."""
        with self._lock:
            self.datagrams.append(data)
        problems, metrics = [], []
        if len(data) > MAX_DATAGRAM:
            problems.append(f"datagram of {len(data)} bytes, over {MAX_DATAGRAM}")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            problems.append("datagram is not UTF-8")
            text = ""
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if not lines and not problems:
            problems.append("empty datagram")
        for line in lines:
            try:
                metric = parse_line(line)
                metric.transport = transport
                metrics.append(metric)
            except ProtocolError as error:
                problems.append(str(error))
        with self._lock:
            self.metrics.extend(metrics)
            self.violations.extend(problems)

    # -- helpers for tests -------------------------------------------------------------------

    def named(self, name: str, **tags) -> list[Metric]:
        with self._lock:
            return [
                m for m in self.metrics
                if m.name == name and all(m.tag_map.get(k) == v for k, v in tags.items())
            ]

    def total(self, name: str, **tags) -> float:
        """Sum of a count's values, scaled by their sample rates as the agent does."""
        return sum(v / m.sample_rate for m in self.named(name, **tags) for v in m.values)

    def wait_for(self, predicate, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if any(predicate(m) for m in self.metrics):
                    return True
            time.sleep(0.05)
        return False
