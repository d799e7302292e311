"""The `bigquery-streaming` case: our kafka source (full refresh, N JSON records of ~300 B in a
one-partition topic, BQ_STREAMING_N at scale 1) into the BigQuery emulator's Storage Write API
through bigquery_streaming_v2 at its defaults. A new table per run, checked by a COUNT/COUNT
DISTINCT query. No original side: the original's Storage Write client cannot be pointed at an
emulator. Runs when BIZON_BENCH_KAFKA and BQ_STREAMING_ENV are set (scripts/test-servers.sh
start bigquery prints the latter).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator, Optional

from harness.bigquery_emulators import BigQueryEmulators
from harness.core import PROBE_N, Harness, Pending, Plan, Tier
from harness.kafka_topic import kafka_setup, kafka_source_yaml, pending
from harness.runs import Invocation

BQ_STREAMING_N = 200_000
BQ_STREAMING_ENV = ("BIGQUERY_EMULATOR_HOST", "BIGQUERY_STORAGE_EMULATOR_HOST",
                    "BIZON_BIGQUERY_PROJECT")


def plan(h: Harness) -> Plan | Pending:
    if why := pending(h):
        return Pending(why)
    missing = [name for name in BQ_STREAMING_ENV if not os.environ.get(name)]
    if missing:
        return Pending("needs the BigQuery emulator: set " + ", ".join(missing)
                       + " (scripts/test-servers.sh start bigquery prints them)")
    broker = os.environ["BIZON_BENCH_KAFKA"]
    emulators = BigQueryEmulators.from_env()
    holder: dict[str, str] = {}
    runs = iter(range(1_000_000))

    def yaml(count: int) -> str:
        # A table and a consumer group per run: the check counts this run's rows only.
        run = next(runs)
        holder["table"] = f"kafka_{count}_{os.getpid()}_{run}"
        source = kafka_source_yaml(broker, holder["topic"], f"bizon-bench-bq-{run}",
                                   destination_id=holder["table"])
        return (f"name: bench-kafka-bigquery\n{source}destination:\n"
                "  name: bigquery_streaming_v2\n  config:\n"
                f"    project_id: {emulators.project}\n"
                f"    dataset_id: {holder['dataset']}\n"
                "    time_partitioning: null\n")

    def verify(_: Path, inv: Invocation) -> Optional[str]:
        return emulators.check_kafka_table(holder["dataset"], holder["table"], inv.n)

    @contextlib.contextmanager
    def setup(count: int) -> Iterator[None]:
        holder["dataset"] = f"bizon_bench_bqs_{os.getpid()}"
        emulators.create_dataset(holder["dataset"])
        holder["topic"] = kafka_setup(broker, count)
        yield

    def tier(count: int) -> Tier:
        ours = Invocation("ours", [h.ours, "run", "{config}"], yaml, count,
                          lambda *_: None, verify=verify,
                          around=lambda: emulators.cpu(holder["dataset"], holder["table"]))
        return Tier(count, ours, None)

    n = h.scaled(BQ_STREAMING_N)
    return Plan(label=f"our kafka source (full refresh, {n:,} JSON records of ~300 B in a "
                      f"one-partition topic on {broker}) into the BigQuery emulator through "
                      "bigquery_streaming_v2 (defaults: a PENDING write stream per flush, "
                      "committed once its cursor is recorded, then the staging table published "
                      "by CREATE OR REPLACE TABLE ... AS SELECT); a new table per run, checked "
                      "by a COUNT/COUNT DISTINCT query. No original side: the original's "
                      "Storage Write client cannot be pointed at an emulator. The emulator's "
                      "own CPU time is in results.json (emulator_cpu_s)",
                same_yaml=True, tiers=[tier(n)], setup=lambda: setup(n),
                warmup=lambda: setup(PROBE_N))
