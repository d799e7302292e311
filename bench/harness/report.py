"""Statistics and reports: the spreads of a case's runs (summarize), results.md (markdown),
plot.png (plot) and the environment the figures were taken in."""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import subprocess
from pathlib import Path
from typing import Callable, Mapping, Optional

from harness import ROOT

METRICS = [  # key, heading, format, better
    ("records_per_s", "records/s", "{:,.0f}", "higher"),
    ("cpu_s_per_m", "CPU s / M records", "{:,.1f}", "lower"),
    ("rss_mib", "peak RSS MiB", "{:,.0f}", "lower"),
    ("first_record_s", "first record s", "{:,.2f}", "lower"),
    ("wall_s", "wall s", "{:,.2f}", "lower"),
]


def spread(values: list[float]) -> dict:
    values = [v for v in values if v is not None]
    if not values:
        return {"min": None, "median": None, "max": None}
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


# The figures summarize spreads: METRICS, the members case's records/s per member, and the
# machine's background load.
SUMMARIZED = (*(key for key, *_ in METRICS), "records_per_s_member", "background_cores")

SIDES = ("ours", "original", "limit", "peer")
# Ratio rows, per alternated pair: (name, numerator side, denominator side); by default ours over
# each other side.
RATIOS = (("ratio", "ours", "original"), ("ratio_limit", "ours", "limit"),
          ("ratio_peer", "ours", "peer"))
# The cases shown only in tables of their own (their sides are not ours, original, limit, peer):
# not in the main table, nor in the plot.
OWN_TABLE_ONLY = ("members", "merge")


def summarize(runs: list[dict], ratios: tuple[tuple[str, str, str], ...] = RATIOS) -> dict:
    """runs: [{"ours": {...}, "original": {...}, "limit": {...}}] in pair order, keyed by side; a
    side of SIDES that did not run is absent from every pair (its spreads are then None)."""
    sides = [*SIDES, *sorted({side for pair in runs for side in pair} - set(SIDES))]
    out: dict = {name: {} for name in (*sides, *(r for r, _, _ in ratios))}
    for key in SUMMARIZED:
        for side in sides:
            out[side][key] = spread([pair[side].get(key) for pair in runs if side in pair])
        for ratio, top, bottom in ratios:
            out[ratio][key] = spread([
                pair[top][key] / pair[bottom][key] for pair in runs
                if top in pair and bottom in pair and pair[top].get(key) is not None
                and pair[bottom].get(key)])
    return out


def fmt(value: Optional[float], pattern: str) -> str:
    return "–" if value is None else pattern.format(value)


def ratio_text(r: dict) -> str:
    if r["median"] is None:
        return "–"
    def one(v: float) -> str:
        return f"{v:.3f}" if v < 0.1 else f"{v:.2f}" if v < 10 else f"{v:.1f}"
    if r["min"] == r["max"]:
        return f"**{one(r['median'])}**"
    return f"{one(r['min'])} – **{one(r['median'])}** – {one(r['max'])}"


def markdown(report: dict, tables: Mapping[str, Callable[[dict], list[str]]]) -> str:
    """results.md: the main table, then the tables of the cases that have one of their own and
    were measured (`tables`: a case's name and the function that makes its lines from its entry
    in the report), the emulators' table, the cases' notes and those not measured."""
    env = report["environment"]
    lines = [
        f"Taken {report['finished_at']} on {env['cpu']} ({env['cores']} cores, "
        f"{env['memory_gib']:.0f} GiB), {env['os']}; ours {env['ours_version']} "
        f"({env['ours_commit']}), original bizon {env['original_version']} on Python "
        f"{env['python']}. {report['runs']} runs per side, alternating; scale {report['scale']}.",
        "",
        f"Background load: {env['background_note']}",
        "",
        *([f"Note: {report['note']}", ""] if report.get("note") else []),
    ]
    rows, notes = [], []
    for case in report["cases"]:
        if case["status"] != "ok":
            continue
        mark = "" if case["same_yaml"] else "†"
        for tier in [] if case["name"] in OWN_TABLE_ONLY else case["tiers"]:
            s = tier["summary"]
            title = f"{case['name']}{mark}"
            rows.append(f"| {title} | {tier['n']:,} | ours | " + " | ".join(
                fmt(s["ours"][k]["median"], f) for k, _, f, _ in METRICS) + " |")
            for side, ratio, shown in (("original", "ratio", "original"),
                                       ("limit", "ratio_limit", case.get("limit_name", "limit")),
                                       ("peer", "ratio_peer", case.get("peer_name", "peer"))):
                if s.get(side, {}).get("wall_s", {}).get("median") is None:
                    continue
                rows.append(f"| | | {shown} | " + " | ".join(
                    fmt(s[side][k]["median"], f) for k, _, f, _ in METRICS) + " |")
                rows.append(f"| | | ours/{shown} | " + " | ".join(
                    ratio_text(s[ratio][k]) for k, *_ in METRICS) + " |")
        notes.append(f"- **{case['name']}**{mark}: {case['label']}.")
    if rows:
        lines += ["Medians over the runs; the ratio row is ours/original per A/B pair (ours/<tool> "
                  "against a case's limit: kcat, psql; the postgres case has no original side, "
                  "only ours/psql), as min – **median** – max (records/s: higher is better for "
                  "ours; the others: lower).", "",
                  "| case | N | side | " + " | ".join(m[1] for m in METRICS) + " |",
                  "|---|---:|---|" + "---:|" * len(METRICS), *rows]
    for name, table in tables.items():
        lines += [line for case in report["cases"] if case["name"] == name
                  and case["status"] == "ok" for line in table(case)]
    emulated = [(c, t) for c in report["cases"] if c["status"] == "ok" for t in c["tiers"]
                if any("emulator_cpu_s" in run.get("ours", {}) for run in t["runs"])]
    if emulated:
        lines += ["", "The emulators' own CPU time during each run (their processes' utime + stime "
                      "from /proc, not in the CPU column; other clients of the emulators count "
                      "too), median s per run and its share of the run's CPU plus theirs; and "
                      "the jobs that wrote the run's table (jobs API: their count and total "
                      "creation-to-end time, and that time over the run's wall time):", "",
                  "| case | N | side | emulators CPU s | share | emulators cores (CPU / wall) "
                  "| jobs | job time s | job time / wall |",
                  "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
        for case, tier in emulated:
            for impl in ("ours", "original"):
                runs = [run[impl] for run in tier["runs"] if "emulator_cpu_s" in run.get(impl, {})]
                if not runs:
                    continue
                emu = statistics.median(r["emulator_cpu_s"] for r in runs)
                share = statistics.median(r["emulator_cpu_s"] / (r["emulator_cpu_s"] + r["cpu_s"])
                                          for r in runs)
                cores = statistics.median(r["emulator_cpu_s"] / r["wall_s"] for r in runs)
                jobs = statistics.median(r.get("emulator_jobs", 0) for r in runs)
                job_s = statistics.median(r.get("emulator_job_s", 0.0) for r in runs)
                job_share = statistics.median(r.get("emulator_job_s", 0.0) / r["wall_s"]
                                              for r in runs)
                lines.append(f"| {case['name']} | {tier['n']:,} | {impl} | {emu:.2f} | "
                             f"{share:.0%} | {cores:.2f} | {jobs:g} | {job_s:.2f} | "
                             f"{job_share:.0%} |")
    lines += ["", *notes]
    if any(not c["same_yaml"] for c in report["cases"] if c["status"] == "ok"):
        lines.append("- † not the same YAML on both sides: a comparison of equivalent sources.")
    others = [c for c in report["cases"] if c["status"] != "ok"]
    if others:
        lines += ["", "Not measured:", ""]
        lines += [f"- **{c['name']}**: {c['status']}: {c['reason']}" for c in others]
    return "\n".join(lines) + "\n"


def plot(report: dict, path: Path) -> Optional[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no plot"
    bars = [(c["name"] + ("" if c["same_yaml"] else "†") + f"\nN={t['n']:,}", t["summary"])
            for c in report["cases"]
            if c["status"] == "ok" and c["name"] not in OWN_TABLE_ONLY for t in c["tiers"]]
    if not bars:
        return "no case of the plot (all but members and merge) was measured: no plot"
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 1.6 * len(bars) + 4), 4.8))
    width = 0.38
    for ax, key, title in ((axes[0], "records_per_s", "records/s (higher is better)"),
                           (axes[1], "rss_mib", "peak RSS, MiB (lower is better)")):
        for offset, impl, color in ((-width / 2, "ours", "#1f77b4"),
                                    (width / 2, "original", "#ff7f0e")):
            med = [s[impl][key]["median"] or 0 for _, s in bars]
            err = [[m - (s[impl][key]["min"] or 0) for m, (_, s) in zip(med, bars)],
                   [(s[impl][key]["max"] or 0) - m for m, (_, s) in zip(med, bars)]]
            ax.bar([i + offset for i in range(len(bars))], med, width, yerr=err, capsize=3,
                   label=impl, color=color)
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels([name for name, _ in bars], fontsize=8)
        ax.set_yscale("log")
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3, which="both")
        ax.legend()
    fig.suptitle(f"bizon (C++) vs original bizon {report['environment']['original_version']}: "
                 f"median, min–max bars, {report['runs']} runs each "
                 "(† equivalent sources, not the same YAML)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def environment(args: argparse.Namespace) -> dict:
    cpu = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = 0.0
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = int(line.split()[1]) / 1024 / 1024
    try:
        from importlib.metadata import version
        original_version = version("bizon")
    except Exception:  # noqa: BLE001 (not installed in this interpreter: ask the CLI's venv)
        original_version = "unknown"
    ours_version = subprocess.run([args.ours, "--version"], capture_output=True,
                                  text=True).stdout.strip() or "unknown"
    # The tree the binary was built in (a worktree of main, say, with BIZON_BIN), else ours.
    tree = subprocess.run(["git", "-C", str(Path(args.ours).parent), "rev-parse",
                           "--show-toplevel"], capture_output=True, text=True).stdout.strip()
    tree = tree or str(ROOT)
    commit = subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", tree, "status", "--porcelain", "--", "src",
                            "include", "CMakeLists.txt"], capture_output=True, text=True).stdout
    os_name = platform.platform()
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                os_name = line.split("=", 1)[1].strip('"') + f", Linux {platform.release()}"
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory_gib": memory, "os": os_name,
        "python": platform.python_version(), "original_version": original_version,
        "ours_version": ours_version, "ours_binary": str(args.ours),
        "ours_commit": commit + ("+uncommitted changes" if dirty else ""),
    }
