"""The `rest` case: paged JSON from a loopback HTTP server (bench/servers/paged_server.py, pages of
PAGE_SIZE linked by next URLs), N records (BASE_N at scale 1) into the file destination.

Ours: our rest_api source (bench/cases/rest_api.yml). The original: a custom source using
requests (bench/sources/rest_source.py), the same requests. Peer, when bench/.venv-dlt exists:
dlt's rest_api source into its filesystem destination as uncompressed JSONL
(bench/peers/dlt_rest.py).
"""

from __future__ import annotations

import contextlib

from harness import BENCH
from harness.core import PROBE_N, Harness, Pending, Plan, Tier, loopback_server
from harness.records import BASE_N, PAGE_SIZE, PAYLOAD_BYTES
from harness.runs import Invocation
from harness.verify import check_generator, verify_dlt

OURS_YAML = BENCH / "cases" / "rest_api.yml"
REST_SOURCE = BENCH / "sources" / "rest_source.py"
PAGED_SERVER = BENCH / "servers" / "paged_server.py"
DLT_REST = BENCH / "peers" / "dlt_rest.py"


def original_yaml(base_url: str) -> str:
    return f"""\
name: bench-rest
source:
  name: bench_rest
  stream: items
  base_url: {base_url}
  page_size: {PAGE_SIZE}
destination:
  name: file
  config:
    destination_id: out
"""


def plan(h: Harness) -> Plan | Pending:
    why = h.probe_source_built("rest_api")
    if why:
        return Pending(why)
    n = h.scaled(BASE_N)
    holder: dict[str, str] = {}

    def tier(count: int) -> Tier:
        def ours_yaml(_: int) -> str:
            return OURS_YAML.read_text().replace("{base_url}", holder["base_url"]).replace(
                "{page_size}", str(PAGE_SIZE))

        peer = None
        if h.dlt_version:
            peer = Invocation("peer", lambda: [h.args.dlt_python, str(DLT_REST),
                                               holder["base_url"], str(PAGE_SIZE)],
                              lambda _: "", count, check_generator,
                              rb'(?m)^\{"id":(\d+),', raw_lines=True, verify=verify_dlt)
        return Tier(count,
                    Invocation("ours", [h.ours, "run", "{config}"], ours_yaml, count,
                               check_generator),
                    Invocation("original", [h.original, "run", "{config}",
                                            "--custom-source", str(REST_SOURCE)],
                               lambda _: original_yaml(holder["base_url"]), count,
                               check_generator),
                    peer=peer)

    def server(count: int) -> contextlib.AbstractContextManager:
        return loopback_server([PAGED_SERVER, "--count", count, "--payload-bytes", PAYLOAD_BYTES,
                                "--page-size", PAGE_SIZE], holder)

    return Plan(label="same loopback HTTP server (bench/servers/paged_server.py, pages of "
                      f"{PAGE_SIZE}, next-URL links): our rest_api source vs a custom source "
                      "for the original using requests (bench/sources/rest_source.py)"
                      + (f"; peer: dlt {h.dlt_version}'s rest_api source into its filesystem "
                         "destination as uncompressed JSONL (bench/peers/dlt_rest.py)"
                         if h.dlt_version else "; no peer: dlt is not installed (bench/run.sh "
                         "makes bench/.venv-dlt)"),
                same_yaml=False, tiers=[tier(n)], setup=lambda: server(n),
                warmup=lambda: server(PROBE_N), peer_name=h.dlt_peer_name())
