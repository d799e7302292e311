"""The `members` case: one kafka `stream` pipeline (postgres backend and destination, on the
servers of BIZON_BENCH_KAFKA and BIZON_BENCH_POSTGRES) run as 1 and as 2 processes of the same
YAML, members of one consumer group (`source.member: env://BIZON_MEMBER`). N records (MEMBERS_N at
scale 1) in a topic of MEMBERS_PARTITIONS partitions, loaded once; a new group and new schemas per
run. Each run's processes are stopped by SIGTERM once the table holds N rows (run_members), which
are then checked. Both sides are ours (ours_x1, ours_x2), in a table of their own with the ratio
x2/x1.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable, Iterator, Optional

from harness.core import PROBE_N, Harness, Pending, Plan, Tier
from harness.kafka_topic import kafka_setup, kafka_source_yaml, pending
from harness.postgres_server import POSTGRES_COLUMNS, PostgresServer
from harness.report import fmt, ratio_text
from harness.runs import MEMBERS_POLL_S, Invocation, RunFailed
from harness.verify import check_generator

# N messages in a topic of MEMBERS_PARTITIONS partitions, read by 1, then 2 processes of one
# stream pipeline.
MEMBERS_N = 300_000
MEMBERS_PARTITIONS = 6

# The case's table: N over the time to N rows, and per member; CPU summed over the
# member processes, the peak RSS of the largest.
MEMBER_METRICS = [
    ("records_per_s", "records/s", "{:,.0f}", "higher"),
    ("records_per_s_member", "records/s per member", "{:,.0f}", "higher"),
    ("cpu_s_per_m", "CPU s / M records, all members", "{:,.1f}", "lower"),
    ("rss_mib", "peak RSS MiB, largest member", "{:,.0f}", "lower"),
    ("wall_s", "s to N rows", "{:,.2f}", "lower"),
]

# The sides (Invocation.side) as the table shows them, and the ratio row.
MEMBER_SIDES = {"ours_x1": "ours ×1", "ours_x2": "ours ×2"}
MEMBER_RATIOS = (("ratio_members", "ours_x2", "ours_x1"),)


def plan(h: Harness) -> Plan | Pending:
    server = PostgresServer.from_env()
    reasons = [why for why in (pending(h), server) if isinstance(why, str)]
    if reasons:
        return Pending("; ".join(reasons))
    broker = os.environ["BIZON_BENCH_KAFKA"]
    table = "events"
    holder: dict = {"schemas": []}
    runs = iter(range(1_000_000))
    # A dead member's partitions move after its session: short, as in the members' tests.
    group_settings = "    session.timeout.ms: 6000\n    heartbeat.interval.ms: 1000\n"

    def yaml(side: str) -> Callable[[int], str]:
        def render(_: int) -> str:
            # A new consumer group and new schemas (destination, backend) per run, made before
            # it starts: every run reads the whole topic.
            run = f"{os.getpid()}_{next(runs)}"
            holder[side] = schema = f"bizon_bench_{run}"
            state = f"bizon_bench_state_{run}"
            holder["schemas"] += [schema, state]
            server.psql(f'CREATE SCHEMA "{schema}"; CREATE SCHEMA "{state}"')
            source = kafka_source_yaml(broker, holder["topic"], f"bizon-bench-{run}",
                                       sync_mode="stream", destination_id=table,
                                       extra="  member: env://BIZON_MEMBER\n",
                                       consumer_config=group_settings)
            return (f"name: bench-members\n{source}"
                    f"destination:\n{server.destination_yaml(schema, table)}"
                    f"engine:\n  runner:\n    type: stream\n  backend:\n"
                    f"{server.backend_yaml(state)}")
        return render

    def verify(side: str) -> Callable[[Path, Invocation], Optional[str]]:
        # The stream table has the load column too; a message's id is its payload's.
        return lambda _, inv: server.check_table(
            holder[side], table, inv.n, (*POSTGRES_COLUMNS, ("_bizon_load_id", "bigint")),
            data="(_source_data->'value')", record_id="(_source_data->'value'->>'id')")

    def side(members: int) -> Invocation:
        key = f"ours_x{members}"
        return Invocation("ours", [h.ours, "run", "{config}"], yaml(key), n,
                          check_generator, verify=verify(key), side=key, members=members,
                          loaded=lambda: server.row_count(holder[key], table))

    @contextlib.contextmanager
    def topic(count: int) -> Iterator[None]:
        holder["topic"] = kafka_setup(broker, count, MEMBERS_PARTITIONS)
        try:
            yield
        finally:
            if holder["schemas"]:
                with contextlib.suppress(RunFailed):
                    server.psql("; ".join(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'
                                          for schema in holder["schemas"]))
            holder["schemas"].clear()

    n = h.scaled(MEMBERS_N)
    return Plan(label="one kafka `stream` pipeline (postgres backend and destination on "
                      f"{server.host}:{server.port}, `source.member: env://BIZON_MEMBER`) "
                      "run as 1 and as 2 processes of the same YAML, members of one consumer "
                      f"group; {n:,} JSON records of ~300 B in a topic of {MEMBERS_PARTITIONS} "
                      f"partitions on {broker}, loaded once; a new group and new schemas per "
                      "run; each process is stopped by SIGTERM once the table holds N rows, "
                      "which are then checked (N rows, N distinct message ids 0..N-1)",
                same_yaml=True, tiers=[Tier(n, side(1), None, others=(side(2),))],
                setup=lambda: topic(n), warmup=lambda: topic(PROBE_N), ratios=MEMBER_RATIOS)


def results_table(case: dict) -> list[str]:
    """The case's table in results.md, from its entry in the report."""
    lines = ["", "Members: one kafka stream pipeline run as 1 and 2 processes, members of one "
                 "consumer group, into the postgres destination, medians; records/s is N over "
                 "the time from the first start to N rows in the table (counted every "
                 f"{MEMBERS_POLL_S:g} s), CPU is summed over the processes; the ratio row is "
                 "×2/×1 per pair, as min – **median** – max:", "",
             "| N | side | " + " | ".join(m[1] for m in MEMBER_METRICS) + " |",
             "|---:|---|" + "---:|" * len(MEMBER_METRICS)]
    for tier in case["tiers"]:
        s = tier["summary"]
        for i, (side, shown) in enumerate(MEMBER_SIDES.items()):
            lines.append((f"| {tier['n']:,} |" if i == 0 else "| |") + f" {shown} | "
                         + " | ".join(fmt(s[side][k]["median"], f)
                                      for k, _, f, _ in MEMBER_METRICS) + " |")
        lines.append("| | ×2/×1 | " + " | ".join(
            ratio_text(s["ratio_members"][k]) for k, *_ in MEMBER_METRICS) + " |")
    return lines
