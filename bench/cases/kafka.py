"""The `kafka` case: N JSON records of ~300 B (KAFKA_N at scale 1) in a one-partition topic, read
by the same YAML on both sides (our kafka source, the original's) into the file destination; the
run ends after consumer_timeout (2 s) without data. Needs a broker: BIZON_BENCH_KAFKA=host:port.

Limit, with kcat installed: `kcat -C -e` of the same topic to a file (librdkafka's defaults).
Peer: `kcat -C -e -J`, each message as a JSON envelope, the shape of our records.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from typing import Callable, Iterator, Optional

from harness.core import PROBE_N, Harness, Pending, Plan, Tier
from harness.kafka_topic import kafka_setup, kafka_source_yaml, pending
from harness.records import FILE_DESTINATION, PAYLOAD_BYTES
from harness.runs import Invocation

KAFKA_N = 1_000_000


def plan(h: Harness) -> Plan | Pending:
    if why := pending(h):
        return Pending(why)
    broker = os.environ["BIZON_BENCH_KAFKA"]
    n = h.scaled(KAFKA_N)
    holder: dict[str, str] = {}

    def yaml(_: int) -> str:
        source = kafka_source_yaml(broker, holder["topic"], "bizon-bench")
        return f"name: bench-kafka\n{source}destination:\n{FILE_DESTINATION}"

    def check(first: dict, last: dict, count: int) -> Optional[str]:
        for i, payload in ((0, first), (count - 1, last)):
            if payload.get("offset") != i or payload.get("value", {}).get("id") != i:
                return f"unexpected kafka record at offset {i}: {str(payload)[:160]}"
        return None

    def check_raw(first: dict, last: dict, count: int) -> Optional[str]:
        for i, payload in ((0, first), (count - 1, last)):
            if payload.get("id") != i or len(payload.get("padding", "")) != PAYLOAD_BYTES:
                return f"unexpected kcat line for offset {i}: {str(payload)[:160]}"
        return None

    def kcat_argv(envelope: bool) -> Callable[[], list[str]]:
        # The librdkafka floor: the same topic consumed to a file with librdkafka's defaults,
        # nothing else done per message. `exec` so that the measured process is kcat itself.
        # With `envelope` (-J), each message becomes a JSON object of its topic, partition,
        # offset, timestamp, key and payload, the payload escaped as a JSON string: the shape
        # of our records, without the JSON check, the uuid and the three RFC 3339 times.
        flag = "-J " if envelope else ""
        return lambda: ["sh", "-c", f"exec kcat -C -q -e {flag}-o beginning -b {broker} "
                                    f"-t {holder['topic']} -p 0 > out.json"]

    def check_envelope(first: dict, last: dict, count: int) -> Optional[str]:
        for i, envelope in ((0, first), (count - 1, last)):
            if envelope.get("offset") != i or json.loads(envelope.get("payload", "{}")).get(
                    "id") != i:
                return f"unexpected kcat -J line for offset {i}: {str(envelope)[:160]}"
        return None

    def tier(count: int) -> Tier:
        ids = rb'"source_record_id":"partition_0_offset_(\d+)"'
        limit = peer = None
        if shutil.which("kcat"):
            limit = Invocation("limit", kcat_argv(False), lambda _: "", count, check_raw,
                               rb'(?m)^\{"id":(\d+),', raw_lines=True)
            peer = Invocation("peer", kcat_argv(True), lambda _: "", count, check_envelope,
                              rb'"offset":(\d+),', raw_lines=True)
        return Tier(count,
                    Invocation("ours", [h.ours, "run", "{config}"], yaml, count, check,
                               ids),
                    Invocation("original", [h.original, "run", "{config}"], yaml, count,
                               check, ids),
                    limit, peer=peer)

    @contextlib.contextmanager
    def topic(count: int) -> Iterator[None]:
        holder["topic"] = kafka_setup(broker, count)
        yield

    return Plan(label=f"same YAML; {n:,} JSON records of ~300 B in a one-partition topic "
                      f"on {broker}; the run ends after consumer_timeout (2 s) without data"
                      + ("; limit: `kcat -C -e` of the same topic to a file (librdkafka "
                         "defaults); peer: `kcat -C -e -J`, each message as a JSON envelope "
                         "(topic, partition, offset, timestamp, key, the payload escaped as a "
                         "string), the shape of our records" if shutil.which("kcat") else
                         "; no limit: kcat is not installed (scripts/install-deps.sh "
                         "--with-bench)"),
                same_yaml=True, tiers=[tier(n)], setup=lambda: topic(n),
                warmup=lambda: topic(PROBE_N), limit_name="kcat", peer_name="kcat -J")
