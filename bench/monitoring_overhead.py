#!/usr/bin/env python3
"""Monitoring overhead: one generator -> file pipeline run with no monitoring, then with Datadog
(metrics and tracing) and with OTLP while every receiver is stopped (closed loopback ports), so
each event is built, queued and then dropped: the worst case for the pipeline's thread.

    bench/monitoring_overhead.py [--binary build/release/bizon] [--records 2000000] [--runs 5]

Prints the median and fastest wall time and the median CPU time of each variant, and their
ratios to the run without monitoring. The
variants run interleaved (A, B, C, A, B, C, ...) so that drift of the machine hits them alike.
Standard library only; not run by CI (docs/monitoring.md has the latest figures).
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def config(records: int, monitoring: str) -> str:
    return f"""\
name: bench-monitoring
source:
  name: generator
  stream: records
  count: {records}
  page_size: 1000
destination:
  name: file
  config:
    destination_id: out
{monitoring}"""


def variants(port: int) -> dict[str, tuple[str, dict]]:
    clean = {"OTEL_EXPORTER_OTLP_ENDPOINT": "", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "",
             "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": ""}
    datadog = f"""\
monitoring:
  type: datadog
  config:
    datadog_agent_host: 127.0.0.1
    datadog_agent_port: {port}
    enable_tracing: true
    tags: {{team: bench}}
"""
    return {
        "none": ("", clean),
        "datadog, receivers stopped": (
            datadog, {**clean, "DD_TRACE_AGENT_URL": f"http://127.0.0.1:{port}"}),
        "otel, receivers stopped": (
            "monitoring:\n  type: otel\n",
            {**clean, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}),
    }


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(binary: Path, directory: Path, text: str, env: dict) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run."""
    path = directory / "p.yml"
    path.write_text(text)
    (directory / "out.json").unlink(missing_ok=True)
    cpu = cpu_of_children()
    started = time.monotonic()
    subprocess.run([str(binary), "run", str(path)], cwd=directory, env={**os.environ, **env},
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - started, cpu_of_children() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", type=Path, default=ROOT / "build" / "release" / "bizon")
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    args.binary = args.binary.resolve()
    if not args.binary.exists():
        parser.error(f"{args.binary} not found (scripts/build.sh release)")
    port = closed_port()
    cases = variants(port)
    times: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    with tempfile.TemporaryDirectory(prefix="bizon-bench-monitoring-") as tmp:
        directory = Path(tmp)
        for name, (monitoring, env) in cases.items():  # Warm-up, not counted.
            run(args.binary, directory, config(min(args.records, 100_000), monitoring), env)
        for _ in range(args.runs):
            for name, (monitoring, env) in cases.items():
                wall, used = run(args.binary, directory, config(args.records, monitoring), env)
                times[name].append(wall)
                cpu[name].append(used)
    # On a busy machine wall time mostly measures the neighbours: the fastest run is the least
    # disturbed one, and CPU time (user + system) is what the process itself spent.
    base = statistics.median(times["none"])
    base_min = min(times["none"])
    base_cpu = statistics.median(cpu["none"])
    print(f"{args.records} records, {args.runs} runs each, {args.binary}")
    print("| monitoring | median wall (s) | min-max (s) | wall ratio (medians) | "
          "wall ratio (minima) | median CPU (s) | CPU ratio |")
    print("|---|---|---|---|---|---|---|")
    for name, values in times.items():
        median = statistics.median(values)
        used = statistics.median(cpu[name])
        print(f"| {name} | {median:.3f} | {min(values):.3f}-{max(values):.3f} | "
              f"{median / base:.3f} | {min(values) / base_min:.3f} | {used:.3f} | "
              f"{used / base_cpu:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
