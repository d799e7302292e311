"""The `duckdb` case: our generator source into our duckdb destination (full refresh: the
appender into a staging table, swapped in at the end), DUCKDB_N records at scale 1, into
out.duckdb. No original side: the original bizon has no DuckDB destination.

Peer, when bench/.venv-dlt exists: dlt loading the same records, made in Python, into its duckdb
destination (bench/peers/dlt_duckdb.py, `write_disposition="replace"`), on the same DuckDB release,
at its defaults otherwise. Each run's table is read back with the duckdb package
(bench/peers/duckdb_summary.py, in dlt's venv): N rows, ids exactly 0..N-1, and the payloads of
the first and last records.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Callable, Optional

from harness import BENCH
from harness.core import Harness, Pending, Plan, Tier
from harness.records import PAYLOAD_BYTES, generator_yaml
from harness.runs import Invocation
from harness.verify import check_generator, table_counts_error

DUCKDB_N = 1_000_000
DLT_DUCKDB = BENCH / "peers" / "dlt_duckdb.py"
SUMMARY = BENCH / "peers" / "duckdb_summary.py"
DUCKDB_DESTINATION = "  name: duckdb\n  config:\n    database: out.duckdb\n    table: items\n"


def verify_duckdb(python: str, database: str, table: str, id_column: str
                  ) -> Callable[[Path, Invocation], Optional[str]]:
    """Checks `table` of the run's DuckDB file `database`, read by `python` (with duckdb)."""

    def verify(directory: Path, inv: Invocation) -> Optional[str]:
        path = directory / database
        if not path.exists():
            return f"no DuckDB file {path}"
        done = subprocess.run([python, str(SUMMARY), str(path), table, id_column, str(inv.n)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return f"cannot read {path}: {done.stderr.strip()[-300:]}"
        found = json.loads(done.stdout)
        padding = min(len(found[key].get("padding", "")) for key in ("first", "last"))
        return (table_counts_error(f"{path}:{table}", inv.n, found["rows"], found["distinct"],
                                   found["low"], found["high"], found["rows"], padding)
                or inv.check(found["first"], found["last"], inv.n))

    return verify


def plan(h: Harness) -> Plan | Pending:
    if not h.dlt_version:
        return Pending("the peer needs dlt with duckdb in bench/.venv-dlt (bench/run.sh makes it), "
                       "and so does the check of the DuckDB tables")
    n = h.scaled(DUCKDB_N)
    python = h.args.dlt_python
    ours = Invocation("ours", [h.ours, "run", "{config}"],
                      lambda count: generator_yaml("generator", count,
                                                   destination=DUCKDB_DESTINATION),
                      n, check_generator,
                      verify=verify_duckdb(python, "out.duckdb", "main.items", "_source_record_id"))
    peer = Invocation("peer", [python, str(DLT_DUCKDB), "{config}", str(PAYLOAD_BYTES)],
                      lambda count: f"{count}\n", n, check_generator,
                      verify=verify_duckdb(python, "peer.duckdb", "bench.items", "id"))
    return Plan(label=f"our generator source into our duckdb destination (full refresh: the "
                      f"appender into a staging table swapped in at the end), {n:,} records; no "
                      f"original side, the original bizon has no DuckDB destination; peer: dlt "
                      f"{h.dlt_version} loading the same records, made in Python, into its duckdb "
                      "destination (bench/peers/dlt_duckdb.py), on the same DuckDB release "
                      "(1.5.6); each run's table is read back with the duckdb package (N rows, "
                      "ids 0..N-1, first and last payloads)",
                same_yaml=False, tiers=[Tier(n, ours, None, peer=peer)],
                peer_name=h.dlt_peer_name())
