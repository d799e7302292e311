r"""The `postgres` case: our generator source into our postgres destination (full refresh, at its
defaults), N records (POSTGRES_N at scale 1), on the server of BIZON_BENCH_POSTGRES. No original
side: the original bizon has no postgres destination.

Limit: `psql -c "\copy ... FROM file"` of the same rows (COPY text, written before the runs)
into an empty table of the same columns, the floor. Peer, when bench/.venv-dlt exists: dlt at its
defaults loading the same records, made in Python, into a table of its own shape
(bench/peers/dlt_postgres.py). Each run's table is checked (columns, N rows, ids 0..N-1), then
dropped.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import uuid
from pathlib import Path
from typing import Callable, Iterator, Optional

from harness import BENCH
from harness.core import PROBE_N, Harness, Pending, Plan, Tier
from harness.postgres_server import POSTGRES_COLUMNS, PostgresServer
from harness.records import PAYLOAD_BYTES, generator_payload, generator_yaml
from harness.runs import Invocation, RunFailed
from harness.verify import check_generator

POSTGRES_N = 300_000
DLT_POSTGRES = BENCH / "peers" / "dlt_postgres.py"
# The table dlt makes of the same records at its defaults (the postgres case's peer).
DLT_POSTGRES_COLUMNS = (("id", "bigint"), ("name", "character varying"),
                        ("updated_at", "timestamp with time zone"), ("value", "bigint"),
                        ("padding", "character varying"), ("_dlt_load_id", "character varying"),
                        ("_dlt_id", "character varying"))


def write_copy_rows(path: Path, n: int) -> None:
    """The rows our postgres destination writes for the generator's records 0..N-1, in COPY's
    text format, in POSTGRES_COLUMNS order: a new uuid, the time now for the three timestamps,
    the id, the payload (escaped as COPY text; the generator's payloads need no escape)."""
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f+00")
    escapes = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
    with open(path, "w") as out:
        for i in range(n):
            out.write(f"{uuid.uuid4()}\t{now}\t{now}\t{i}\t{now}\t"
                      f"{generator_payload(i).translate(escapes)}\n")


def plan(h: Harness) -> Plan | Pending:
    server = PostgresServer.from_env()
    if isinstance(server, str):
        return Pending(server)
    # A table per side, dropped after each run's check (the schema at the end).
    schema = f"bizon_bench_{os.getpid()}"
    tables = {"ours": "bench_ours", "limit": "bench_copy", "peer": "items"}
    limit = f'"{schema}"."{tables["limit"]}"'
    holder: dict[str, Path] = {}

    def ours_yaml(count: int) -> str:
        return generator_yaml("generator", count,
                              destination=server.destination_yaml(schema, tables["ours"]))

    def limit_table(_: int) -> str:
        # The empty table, made before the run so that only the COPY is timed.
        columns = ", ".join(f"{column} {kind}" for column, kind in POSTGRES_COLUMNS)
        server.psql(f"DROP TABLE IF EXISTS {limit}; CREATE TABLE {limit} ({columns})")
        return ""

    def copy_argv() -> list[str]:
        # The COPY floor: psql streaming the prepared rows file into the same table shape.
        columns = ", ".join(column for column, _ in POSTGRES_COLUMNS)
        return server.psql_argv(f"\\copy {limit} ({columns}) FROM '{holder['rows']}'")

    def verify(impl: str) -> Callable[[Path, Invocation], Optional[str]]:
        return lambda _, inv: server.check_table(schema, tables[impl], inv.n)

    # dlt's dataset: a schema of its own, with dlt's state tables beside the data, dropped
    # after each run so that the next one starts as new.
    dataset = f"{schema}_dlt"

    def verify_dlt(_: Path, inv: Invocation) -> Optional[str]:
        # dlt's own table shape: a column per field, and its load id and row id.
        try:
            return server.check_table(dataset, tables["peer"], inv.n,
                                      columns=DLT_POSTGRES_COLUMNS,
                                      data=f"to_jsonb({tables['peer']})", record_id="id")
        finally:
            with contextlib.suppress(RunFailed):
                server.psql(f'DROP SCHEMA IF EXISTS "{dataset}" CASCADE')

    def tier(count: int) -> Tier:
        peer = None
        if h.dlt_version:
            # The run's "config" is the record count (the warm-up runs another N).
            peer = Invocation("peer", [h.args.dlt_python, str(DLT_POSTGRES), server.url,
                                       dataset, "{config}", str(PAYLOAD_BYTES)],
                              lambda n: f"{n}\n", count, check_generator, verify=verify_dlt)
        return Tier(count,
                    Invocation("ours", [h.ours, "run", "{config}"], ours_yaml, count,
                               check_generator, verify=verify("ours")),
                    None,
                    Invocation("limit", copy_argv, limit_table, count, check_generator,
                               verify=verify("limit")),
                    peer=peer)

    @contextlib.contextmanager
    def prepared(count: int) -> Iterator[None]:
        rows = h.work / f"postgres-rows-{count}.tsv"
        rows.parent.mkdir(parents=True, exist_ok=True)
        print(f"  postgres: writing {count:,} rows to {rows}", flush=True)
        write_copy_rows(rows, count)
        holder["rows"] = rows
        server.psql(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        try:
            yield
        finally:
            with contextlib.suppress(RunFailed):
                server.psql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            rows.unlink(missing_ok=True)

    n = h.scaled(POSTGRES_N)
    return Plan(label=f"our generator source into our postgres destination (full refresh, "
                      f"defaults) on {server.host}:{server.port}, {n:,} records; no original "
                      "side, the original bizon has no postgres destination: the ratio row "
                      "is ours/psql, against the limit: `psql -c \"\\copy ... FROM file\"` "
                      "of the same rows (COPY text, prepared before the run) into an empty "
                      "table of the same columns; each run's table is checked (columns, N "
                      "rows, ids 0..N-1) and dropped"
                      + (f"; peer: dlt {h.dlt_version} at its defaults loading the same records, "
                         "made in Python, into a table of its own shape "
                         "(bench/peers/dlt_postgres.py)" if h.dlt_version else ""),
                same_yaml=True, tiers=[tier(n)], setup=lambda: prepared(n),
                warmup=lambda: prepared(PROBE_N), limit_name="psql",
                peer_name=h.dlt_peer_name())
