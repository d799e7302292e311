"""The records every case moves: the generator's, in our `generator` source and in
bench/sources/generator_source.py alike. Record i is {"id": i, "name": "record-<i>",
"updated_at": 2024-01-01 + i ms, "value": i x 7919 mod 1000, "padding": PAYLOAD_BYTES x "x"}."""

from __future__ import annotations

import datetime as dt
import json

from harness import BENCH

GENERATOR_SOURCE = BENCH / "sources" / "generator_source.py"

# Records of about 300 bytes of JSON: {"id","name","updated_at","value","padding"}.
PAYLOAD_BYTES = 200
PAGE_SIZE = 1000
# N at --scale 1 of the generator, python-source, transform, rest and bigquery cases: about 10 s
# for one run of the original on a 2-core VM.
BASE_N = 120_000

FILE_DESTINATION = "  name: file\n  config:\n    destination_id: out\n"


def generator_yaml(source_name: str, n: int, extra: str = "",
                   destination: str = FILE_DESTINATION) -> str:
    """`destination` is the YAML block under `destination:`, indented by two spaces."""
    return f"""\
name: bench-{source_name}
source:
  name: {source_name}
  stream: records
  count: {n}
  page_size: {PAGE_SIZE}
  payload_bytes: {PAYLOAD_BYTES}
destination:
{destination}{extra}"""


GENERATOR_START = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
GENERATOR_PADDING = "x" * PAYLOAD_BYTES


def generator_payload(i: int) -> str:
    """The JSON of our `generator` source's record i at its defaults and PAYLOAD_BYTES of
    padding, byte for byte (as bench/sources/generator_source.py makes it)."""
    return json.dumps({
        "id": i, "name": f"record-{i}",
        "updated_at": (GENERATOR_START + dt.timedelta(milliseconds=i)).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ"),
        "value": (i * 7919) % 1000, "padding": GENERATOR_PADDING}, separators=(",", ":"))

