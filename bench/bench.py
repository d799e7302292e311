#!/usr/bin/env python3
"""Benchmark our bizon against the original (PyPI) on the same pipelines.

Run through bench/run.sh, which prepares bench/.venv (the original bizon + matplotlib) and the
release binary, then calls this script with the venv's Python. See docs/performance.md.

Per case, both implementations run alternately (ours, original, ours, original, ...), each run in
a fresh working directory with its own SQLite state. Per run:

  wall time      monotonic clock from fork to exit
  CPU            ru_utime + ru_stime of the process and every child it reaped (wait4)
  peak RSS       ru_maxrss (largest resident set of the process or a reaped child)

The three come from bench/spawn.c, a small launcher that forks the run and reads wait4(): a
process forked from the harness itself would inherit the harness's resident set as its peak.
  first record   time from spawn until a destination file (out*.json: the staging file or the
                 main one) holds a complete first line; polled every 2 ms from a harness thread
  background     CPU the rest of the machine used during the run (/proc/stat busy time minus
                 the run's own CPU), to tell a quiet machine from a shared one

A run counts only if it exits 0 and out.json holds exactly N lines with N distinct expected
source_record_ids, and the first and last payloads look right (a case writing into a server checks
its table instead: N rows, ids 0..N-1); otherwise the case fails.

Each case first probes what OUR binary can do (a tiny run, or `bizon source list`) and reports
"pending: <why>" instead of failing when a feature has not landed.

The machinery the cases share is in bench/harness/ (one run, the checks, the report); each case
is a module of bench/cases/ with its N, its YAML and its plan (a function of the Harness).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

from cases import (bigquery, bigquery_streaming, duckdb, generator, kafka, members, memory,
                   merge, parquet, postgres, rest, rest_children)
from harness import BENCH, ROOT
from harness.core import Harness, Planner, run_case
from harness.records import BASE_N, PAGE_SIZE, PAYLOAD_BYTES
from harness.report import SIDES, environment, markdown, plot
from harness.runs import ensure_spawn

# The cases in the order they run, each with the function that plans it.
CASES: dict[str, Planner] = {
    "generator": generator.plan_generator,
    "python-source": generator.plan_python_source,
    "transform": generator.plan_transform,
    "rest": rest.plan,
    "rest-children": rest_children.plan,
    "kafka": kafka.plan,
    "postgres": postgres.plan,
    "parquet": parquet.plan,
    "duckdb": duckdb.plan,
    "merge": merge.plan,
    "members": members.plan,
    "memory": memory.plan,
    "bigquery": bigquery.plan,
    "bigquery-streaming": bigquery_streaming.plan,
}
ALL_CASES = list(CASES)
# The cases with a table of their own in results.md, in their order after the main table, each
# with the function that makes it.
TABLES = {"memory": memory.results_table, "members": members.results_table,
          "merge": merge.results_table}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ours", default=str(ROOT / "build" / "release" / "bizon"))
    parser.add_argument("--original", default=str(BENCH / ".venv" / "bin" / "bizon"))
    parser.add_argument("--dlt-python", default=str(BENCH / ".venv-dlt" / "bin" / "python"),
                        help="the interpreter with dlt installed (bench/run.sh makes it)")
    parser.add_argument("--runs", type=int, default=5, help="runs per side per case (default 5)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help=f"multiplies N (default 1: {BASE_N:,} records, memory "
                             f"{memory.MEMORY_BASE_N:,} x1 x10 x100, kafka {kafka.KAFKA_N:,}, "
                             f"postgres {postgres.POSTGRES_N:,}, merge {merge.MERGE_N:,}, "
                             f"members {members.MEMBERS_N:,})")
    parser.add_argument("--cases", default="all",
                        help="comma-separated subset of " + ",".join(ALL_CASES) + " (default all; "
                             "generator is included only while python-source is pending; kafka, "
                             "postgres, merge, members and bigquery need their servers: "
                             "BIZON_BENCH_KAFKA, BIZON_BENCH_POSTGRES (members: both), the "
                             "emulators' variables)")
    parser.add_argument("--results", default=str(BENCH / "results"))
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per run")
    parser.add_argument("--sides", default=",".join(SIDES),
                        help="which sides run, of ours,original,limit,peer (default all; the "
                             "limit is the reference tool of a case that has one: kcat for "
                             "kafka, psql \\copy for postgres; the peer another project's tool "
                             "doing the same job: dlt for rest, postgres and merge; both sides of "
                             "members, x1 and x2, are ours)")
    parser.add_argument("--keep-output", action="store_true", help="keep each run's directory")
    parser.add_argument("--note", default="",
                        help="a sentence on the conditions of the run, quoted under the table's "
                             "header (e.g. what else the machine was doing)")
    parser.add_argument("--update-docs", action="store_true",
                        help="replace the table in docs/performance.md with this run's")
    args = parser.parse_args()

    explicit = args.cases != "all"
    cases = ALL_CASES if not explicit else [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in ALL_CASES]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; choose from {ALL_CASES}")
    args.sides = [side.strip() for side in args.sides.split(",") if side.strip()]
    if "ours" not in args.sides or any(side not in SIDES for side in args.sides):
        parser.error(f"--sides: a subset of {','.join(SIDES)} that includes ours")
    args.ours, args.original = (str(Path(b).resolve()) for b in (args.ours, args.original))
    for binary in (args.ours, args.original) if "original" in args.sides else (args.ours,):
        if not os.access(binary, os.X_OK):
            parser.error(f"{binary} is not an executable (run bench/run.sh, which builds it)")

    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    results = Path(args.results) / stamp
    results.mkdir(parents=True)
    ensure_spawn()
    harness = Harness(args, results)
    env = environment(args)
    print(f"results: {results}\nours: {env['ours_version']} ({args.ours})\n"
          f"original: bizon {env['original_version']} ({args.original})", flush=True)

    report = {"started_at": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
              "runs": args.runs, "scale": args.scale, "payload_bytes": PAYLOAD_BYTES,
              "page_size": PAGE_SIZE, "note": args.note, "environment": env, "cases": []}
    for name in cases:
        if (name == "generator" and not explicit
                and generator.custom_source_pending(harness) is None):
            report["cases"].append({"name": name, "status": "skipped", "reason":
                                    "interim case; python-source now runs on both"})
            continue
        report["cases"].append(run_case(harness, name, CASES[name], args))
        (results / "results.json").write_text(json.dumps(report, indent=2))
    shutil.rmtree(harness.work, ignore_errors=True)

    report["finished_at"] = dt.datetime.now().astimezone().isoformat(timespec="seconds")
    background = [run[impl]["background_cores"] for c in report["cases"] if c["status"] == "ok"
                  for t in c["tiers"] for run in t["runs"] for impl in run]
    if background:
        env["background_cores_median"] = statistics.median(background)
        env["background_cores_max"] = max(background)
        shared = env["background_cores_max"] > 0.1
        env["background_note"] = (
            f"other processes used a median {env['background_cores_median']:.2f} and at most "
            f"{env['background_cores_max']:.2f} of the {env['cores']} cores during the runs"
            + (" — a shared machine: expect noise, compare the ratios, not the absolute figures."
               if shared else " (a quiet machine)."))
    else:
        env["background_note"] = "no run."
    (results / "results.json").write_text(json.dumps(report, indent=2))
    table = markdown(report, TABLES)
    (results / "results.md").write_text(table)
    plot_error = plot(report, results / "plot.png")
    print("\n" + table)
    print(f"written: {results / 'results.json'}, {results / 'results.md'}"
          + (f", {results / 'plot.png'}" if plot_error is None else f" ({plot_error})"))
    if args.update_docs:
        update_docs(table, results)
    failed = [c["name"] for c in report["cases"] if c["status"] == "failed"]
    if failed:
        print(f"FAILED cases: {', '.join(failed)}")
    return 1 if failed else 0


def update_docs(table: str, results: Path) -> None:
    doc = ROOT / "docs" / "performance.md"
    text = doc.read_text()
    begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
    if begin not in text or end not in text:
        print(f"{doc}: no {begin} ... {end} block, not updated")
        return
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    doc.write_text(f"{head}{begin}\n{table}{end}{tail}")
    print(f"updated {doc} (plot: copy {results / 'plot.png'} to docs/performance.png if wanted)")


if __name__ == "__main__":
    sys.exit(main())
