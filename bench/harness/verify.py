"""The checks of a run's output. A run counts only if its output holds exactly the N records it
was given: out.json (or dlt's files, or a table in a server) with N lines or rows whose ids are
exactly 0..N-1, and the first and last payloads as the source made them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from harness.records import PAYLOAD_BYTES

if TYPE_CHECKING:
    from harness.runs import Invocation


def verify_output(directory: Path, inv: Invocation) -> Optional[str]:
    """Checks out.json: N lines whose ids are exactly 0..N-1 (id_pattern), and the first and last
    payloads. Streams the file, so the harness stays small whatever N."""
    out = directory / "out.json"
    if not out.exists():
        return f"no out.json (files: {sorted(p.name for p in directory.iterdir())})"
    pattern = re.compile(inv.id_pattern)
    seen = bytearray(inv.n)
    lines = matches = 0
    first = last = b""
    rest = b""
    with open(out, "rb") as f:
        while chunk := f.read(8 << 20):
            chunk = rest + chunk
            cut = chunk.rfind(b"\n") + 1
            chunk, rest = chunk[:cut], chunk[cut:]
            if not chunk:
                continue
            lines += chunk.count(b"\n")
            if not first:
                first = chunk[: chunk.index(b"\n")]
            last = chunk[chunk.rfind(b"\n", 0, len(chunk) - 1) + 1 : -1]
            for match in pattern.finditer(chunk):
                index = int(match.group(1))
                if not 0 <= index < inv.n or seen[index]:
                    return f"unexpected or repeated id: {match.group(0).decode()}"
                seen[index] = 1
                matches += 1
    if rest:
        return "out.json does not end with a newline"
    if lines != inv.n:
        return f"out.json has {lines} lines, expected {inv.n}"
    if matches != inv.n:
        return f"out.json has {matches} expected source_record_ids, expected {inv.n}"
    try:
        payloads = [json.loads(line) if inv.raw_lines else json.loads(json.loads(line)["source_data"])
                    for line in (first, last)]
    except (ValueError, KeyError) as error:
        return f"out.json line is not a destination record: {error}"
    return inv.check(payloads[0], payloads[1], inv.n)


def verify_dlt(directory: Path, inv: Invocation) -> Optional[str]:
    """dlt's filesystem destination writes the table as JSONL files under out/<dataset>/items/:
    joined into out.json (their order does not matter to the check), then checked as raw lines."""
    files = sorted((directory / "out").glob("*/items/*.jsonl"))
    if not files:
        return f"no dlt output under {directory / 'out'}"
    with open(directory / "out.json", "wb") as out:
        for path in files:
            out.write(path.read_bytes())
    return verify_output(directory, inv)


def check_generator(first: dict, last: dict, n: int, transformed: bool = False) -> Optional[str]:
    """The first and last payloads against the generator's records 0 and n-1 (`transformed`:
    as the transform case's Python transform leaves them)."""
    for i, payload in ((0, first), (n - 1, last)):
        name = f"record-{i}".upper() if transformed else f"record-{i}"
        if payload.get("id") != i or payload.get("name") != name:
            return f"unexpected payload for record {i}: {str(payload)[:120]}"
        if len(payload.get("padding", "")) != PAYLOAD_BYTES:
            return f"record {i} has no {PAYLOAD_BYTES}-byte padding"
        if transformed and payload.get("value_x2") != payload.get("value", 0) * 2:
            return f"record {i} was not transformed: {str(payload)[:120]}"
    return None


def table_counts_error(table: str, n: int, total: Optional[int], distinct: Optional[int],
                       low: Optional[int], high: Optional[int], named: Optional[int],
                       padding: Optional[int]) -> Optional[str]:
    """What a query of a loaded table found (rows, distinct source_record_ids, their lowest and
    highest, rows whose payload name is record-<id>, shortest payload padding) against N rows
    with the ids exactly 0..N-1: an error, or None."""
    if (total, distinct, low, high, named) != (n, n, 0, n - 1, n) or padding != PAYLOAD_BYTES:
        return (f"{table}: {total} rows, {distinct} distinct ids in [{low}, {high}], "
                f"{named} with the expected name, shortest padding {padding}; expected {n} "
                f"rows, ids 0..{n - 1}, {PAYLOAD_BYTES}-byte padding")
    return None

