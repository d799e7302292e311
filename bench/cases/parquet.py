"""The `parquet` case: our generator source into our file destination with `format: parquet` (full
refresh, zstd, a directory of parts under out/), PARQUET_N records at scale 1. No original side:
the original bizon writes no Parquet files of its own.

Peer, when bench/.venv-dlt exists: dlt loading the same records, made in Python, into its
filesystem destination as Parquet (bench/peers/dlt_parquet.py), at its defaults otherwise. Each
run's files are read back with pyarrow (bench/peers/parquet_summary.py, in dlt's venv): N rows,
ids exactly 0..N-1, and the payloads of the first and last records.
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

PARQUET_N = 1_000_000
DLT_PARQUET = BENCH / "peers" / "dlt_parquet.py"
SUMMARY = BENCH / "peers" / "parquet_summary.py"
PARQUET_DESTINATION = "  name: file\n  config:\n    destination_id: out\n    format: parquet\n"


def verify_parquet(python: str, subdirectory: str, id_column: str
                   ) -> Callable[[Path, Invocation], Optional[str]]:
    """Checks the Parquet files under the run's `subdirectory`, read by `python` (with pyarrow)."""

    def verify(directory: Path, inv: Invocation) -> Optional[str]:
        files = directory / subdirectory
        if not any(files.glob("*.parquet")):
            return f"no Parquet files under {files}"
        done = subprocess.run([python, str(SUMMARY), str(files), id_column, str(inv.n)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return f"cannot read {files}: {done.stderr.strip()[-300:]}"
        found = json.loads(done.stdout)
        padding = min(len(found[key].get("padding", "")) for key in ("first", "last"))
        return (table_counts_error(str(files), inv.n, found["rows"], found["distinct"],
                                   found["low"], found["high"], found["rows"], padding)
                or inv.check(found["first"], found["last"], inv.n))

    return verify


def plan(h: Harness) -> Plan | Pending:
    if not h.dlt_version:
        return Pending("the peer needs dlt with pyarrow in bench/.venv-dlt (bench/run.sh makes it), "
                       "and so does the check of the Parquet files")
    n = h.scaled(PARQUET_N)
    python = h.args.dlt_python
    ours = Invocation("ours", [h.ours, "run", "{config}"],
                      lambda count: generator_yaml("generator", count,
                                                   destination=PARQUET_DESTINATION),
                      n, check_generator, verify=verify_parquet(python, "out", "source_record_id"))
    peer = Invocation("peer", [python, str(DLT_PARQUET), "{config}", str(PAYLOAD_BYTES)],
                      lambda count: f"{count}\n", n, check_generator,
                      verify=verify_parquet(python, "out/bench/items", "id"))
    return Plan(label=f"our generator source into our file destination as Parquet (full refresh, "
                      f"zstd, parts of buffer_size), {n:,} records; no original side, the "
                      f"original bizon writes no Parquet files; peer: dlt {h.dlt_version} loading "
                      "the same records, made in Python, into its filesystem destination as "
                      "Parquet (bench/peers/dlt_parquet.py); each run's files are read back with "
                      "pyarrow (N rows, ids 0..N-1, first and last payloads)",
                same_yaml=False, tiers=[Tier(n, ours, None, peer=peer)],
                peer_name=h.dlt_peer_name())
