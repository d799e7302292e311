"""The `bigquery` case: the python-source case's YAML and custom Python source on both sides, N
records (BASE_N at scale 1) into the BigQuery emulator through the bigquery destination: files
staged in the GCS emulator, one load job per buffer flush (ours stages Avro, the original Parquet,
its columns put in the table's order by bench/shims/original_parquet_order.py because the
emulator loads Parquet by position). A new table per run, checked by a COUNT/COUNT DISTINCT query.
Runs when BIGQUERY_ENV name running emulators (scripts/test-servers.sh start bigquery gcs prints
them).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Callable, Iterator, Optional

from cases.generator import custom_source_pending
from harness import BENCH
from harness.bigquery_emulators import BigQueryEmulators
from harness.core import Harness, Pending, Plan, Tier
from harness.records import BASE_N, GENERATOR_SOURCE, generator_yaml
from harness.runs import Invocation
from harness.verify import check_generator

BIGQUERY_ENV = ("BIGQUERY_EMULATOR_HOST", "STORAGE_EMULATOR_HOST", "BIZON_GCS_BUCKET",
                "BIZON_BIGQUERY_PROJECT")
PARQUET_ORDER_SHIM = BENCH / "shims" / "original_parquet_order.py"


@contextlib.contextmanager
def token_endpoint(key_file: Path) -> Iterator[Path]:
    """A service-account key file whose token_uri is a loopback endpoint handing out tokens.

    The emulators check no credentials, but the original's BigQuery client asks google-auth for
    default credentials and refreshes them before its first request; Google's own token
    endpoint is out of reach. This serves POST /token (the JWT-bearer grant) with a fixed
    bearer token, and writes a key file (a fresh RSA key) for GOOGLE_APPLICATION_CREDENTIALS."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = json.dumps({"access_token": "bench-token", "expires_in": 3600,
                               "token_type": "Bearer"}).encode()
            self.send_response(200 if self.path == "/token" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        key = subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt",
                              "rsa_keygen_bits:2048"], capture_output=True, text=True,
                             check=True).stdout
        key_file.parent.mkdir(parents=True, exist_ok=True)
        key_file.write_text(json.dumps({
            "type": "service_account", "project_id": "bench", "private_key_id": "bench",
            "private_key": key, "client_email": "bench@bench.iam.gserviceaccount.com",
            "client_id": "1", "token_uri": f"http://127.0.0.1:{server.server_port}/token"}))
        yield key_file
    finally:
        server.shutdown()
        server.server_close()


def plan(h: Harness) -> Plan | Pending:
    missing = [name for name in BIGQUERY_ENV if not os.environ.get(name)]
    if missing:
        return Pending("needs the BigQuery and GCS emulators: set " + ", ".join(missing)
                       + " (scripts/test-servers.sh start bigquery gcs prints them)")
    if why := custom_source_pending(h):
        return Pending(why)
    emulators = BigQueryEmulators.from_env()
    holder: dict[str, str] = {}
    runs = iter(range(1_000_000))

    def yaml(impl: str) -> Callable[[int], str]:
        def render(count: int) -> str:
            # A table per run, so that the check counts this run's rows and nothing else.
            holder[impl] = f"{impl}_{count}_{os.getpid()}_{next(runs)}"
            return generator_yaml("bench_python", count, destination=(
                "  name: bigquery\n  config:\n"
                f"    project_id: {emulators.project}\n"
                f"    dataset_id: {holder['dataset']}\n"
                f"    gcs_buffer_bucket: {emulators.bucket}\n"
                f"    destination_id: {holder[impl]}\n"))
        return render

    def verify(impl: str) -> Callable[[Path, Invocation], Optional[str]]:
        return lambda _, inv: emulators.check_table(holder["dataset"], holder[impl], inv.n)

    def around(impl: str) -> Callable[[], contextlib.AbstractContextManager]:
        return lambda: emulators.cpu(holder["dataset"], holder[impl])

    def tier(count: int) -> Tier:
        custom = ["--custom-source", str(GENERATOR_SOURCE)]
        return Tier(count,
                    Invocation("ours", [h.ours, "run", "{config}", *custom],
                               yaml("ours"), count, check_generator,
                               verify=verify("ours"), around=around("ours")),
                    Invocation("original",
                               lambda: ["env", f"GOOGLE_APPLICATION_CREDENTIALS={holder['key']}",
                                        str(Path(h.original).parent / "python"),
                                        str(PARQUET_ORDER_SHIM), "run", "{config}", *custom],
                               yaml("original"), count, check_generator,
                               verify=verify("original"), around=around("original")))

    @contextlib.contextmanager
    def setup() -> Iterator[None]:
        holder["dataset"] = f"bizon_bench_{os.getpid()}"
        emulators.create_dataset(holder["dataset"])
        with token_endpoint(h.work / "google-key.json") as key:
            holder["key"] = str(key)
            yield

    n = h.scaled(BASE_N)
    return Plan(label="same YAML and custom Python source as python-source, into the BigQuery "
                      f"emulator ({emulators.bigquery_url}) through the bigquery destination: "
                      "files staged in the GCS emulator, one load job per buffer flush "
                      "(defaults: ours stages Avro, the original Parquet, its columns put in the "
                      "table's order by bench/shims/original_parquet_order.py because the "
                      "emulator loads Parquet by position), a new table per "
                      "run, checked by a COUNT/COUNT DISTINCT query; the emulators' own CPU "
                      "time is in results.json (emulator_cpu_s)",
                same_yaml=True, tiers=[tier(n)], setup=setup, warmup=setup)
