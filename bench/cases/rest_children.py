"""The `rest-children` case: a parent -> child API read by our rest_api source (resources form)
and by dlt's rest_api source, on the same loopback server (bench/servers/parent_child_server.py):
PARENTS parents in pages of PER_PAGE, each with CHILDREN children fetched by one request per
parent. Both write two tables (parents, children); the check reads them back: every parent id
0..P-1 and every child id 0..P*C-1 exactly once, and the children's payload padding.

Ours: bench/cases/rest_children.yml into the file destination (parents.json, children.json).
dlt: bench/peers/dlt_rest_children.py into its filesystem destination (JSONL per table), at its
defaults (children one after the other). There is no original side: the original bizon has no
declarative REST source with parents and children.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Optional

from harness import BENCH
from harness.core import PROBE_N, Harness, Pending, Plan, Tier, loopback_server
from harness.records import PAYLOAD_BYTES
from harness.runs import Invocation
from harness.verify import check_generator

SERVER = BENCH / "servers" / "parent_child_server.py"
OURS_YAML = BENCH / "cases" / "rest_children.yml"
DLT_PEER = BENCH / "peers" / "dlt_rest_children.py"

PARENTS = 1_000
CHILDREN = 20
PER_PAGE = 100


def counts(scale: float) -> tuple[int, int]:
    """Parents and records (parents + children) at `scale` (at least 10 parents)."""
    parents = max(10, int(PARENTS * scale))
    return parents, parents * (CHILDREN + 1)


def server(parents: int, payload_bytes: int, holder: dict) -> contextlib.AbstractContextManager:
    return loopback_server([SERVER, "--parents", parents, "--children", CHILDREN,
                            "--payload-bytes", payload_bytes, "--per-page", PER_PAGE], holder)


def ours_yaml(holder: dict) -> str:
    return OURS_YAML.read_text().replace("{base_url}", holder["base_url"]).replace(
        "{per_page}", str(PER_PAGE))


def dlt_argv(dlt_python: str, holder: dict) -> list[str]:
    return [dlt_python, str(DLT_PEER), holder["base_url"], str(PER_PAGE)]


ID = re.compile(rb'(?:\\)?"id(?:\\)?":\s*(\d+)')


def check_ids(lines: list[bytes], count: int, what: str) -> Optional[str]:
    """Each line holds one record whose first "id" is in 0..count-1, each exactly once."""
    seen = bytearray(count)
    for line in lines:
        match = ID.search(line)
        if match is None:
            return f"a {what} line without an id: {line[:120]!r}"
        index = int(match.group(1))
        if not 0 <= index < count or seen[index]:
            return f"unexpected or repeated {what} id {index}"
        seen[index] = 1
    if len(lines) != count:
        return f"{len(lines)} {what}, expected {count}"
    return None


def verify_tables(parents: list[bytes], children: list[bytes], n: int,
                  payload_bytes: int) -> Optional[str]:
    parent_count = n // (CHILDREN + 1)
    error = check_ids(parents, parent_count, "parents") or check_ids(
        children, parent_count * CHILDREN, "children")
    if error:
        return error
    padding = b"x" * payload_bytes
    if payload_bytes and not all(padding in line for line in children[:1] + children[-1:]):
        return f"children without their {payload_bytes}-byte padding"
    return None


def lines_of(paths: list[Path]) -> list[bytes]:
    out: list[bytes] = []
    for path in paths:
        out += [line for line in path.read_bytes().splitlines() if line.strip()]
    return out


def verify_ours(directory: Path, n: int, payload_bytes: int) -> Optional[str]:
    files = {name: directory / f"{name}.json" for name in ("parents", "children")}
    missing = [name for name, path in files.items() if not path.exists()]
    if missing:
        return f"no {', '.join(missing)}.json (files: {sorted(p.name for p in directory.iterdir())})"
    # Our rows carry the record in source_data (escaped): its first "id" is the record's.
    strip = re.compile(rb'^.*?"source_data":')
    rows = {name: [strip.sub(b"", line) for line in lines_of([path])]
            for name, path in files.items()}
    return verify_tables(rows["parents"], rows["children"], n, payload_bytes)


def verify_dlt(directory: Path, n: int, payload_bytes: int) -> Optional[str]:
    parents = sorted((directory / "out").glob("*/parents/*.jsonl"))
    children = sorted((directory / "out").glob("*/children/*.jsonl"))
    if not parents or not children:
        return f"no dlt output under {directory / 'out'}"
    return verify_tables(lines_of(parents), lines_of(children), n, payload_bytes)


def describe(parents: int, dlt_version: Optional[str]) -> str:
    peer = (f"; peer: dlt {dlt_version}'s rest_api source at its defaults (children requested "
            "one after the other) into its filesystem destination as uncompressed JSONL "
            "(bench/peers/dlt_rest_children.py)" if dlt_version else
            "; no peer: dlt is not installed (bench/run.sh makes bench/.venv-dlt)")
    return (f"same loopback HTTP server (bench/servers/parent_child_server.py): {parents:,} "
            f"parents in pages of {PER_PAGE}, {CHILDREN} children each, one request per parent; "
            "ours: the rest_api source's resources form (bench/cases/rest_children.yml, 4 child "
            "requests in flight), parents.json and children.json; no original side (the "
            "original has no declarative parent/child REST source)" + peer)


def plan(h: Harness) -> Plan | Pending:
    why = h.probe_source_built("rest_api")
    if why:
        return Pending(why)
    parents, n = counts(h.args.scale)
    holder: dict[str, str] = {}
    peer = None
    if h.dlt_version:
        peer = Invocation("peer", lambda: dlt_argv(h.args.dlt_python, holder),
                          lambda _: "", n, check_generator,
                          verify=lambda d, inv: verify_dlt(d, inv.n, PAYLOAD_BYTES))
    ours = Invocation("ours", [h.ours, "run", "{config}"], lambda _: ours_yaml(holder),
                      n, check_generator,
                      verify=lambda d, inv: verify_ours(d, inv.n, PAYLOAD_BYTES))
    return Plan(label=describe(parents, h.dlt_version), same_yaml=False,
                tiers=[Tier(n, ours, None, peer=peer)],
                setup=lambda: server(parents, PAYLOAD_BYTES, holder),
                # The warm-up runs expect PROBE_N records: as many whole parents as fit.
                warmup=lambda: server(PROBE_N // (CHILDREN + 1), PAYLOAD_BYTES, holder),
                peer_name=h.dlt_peer_name())
