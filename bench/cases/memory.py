"""The `memory` case: peak RSS as N grows, at default queue settings. The python-source pairing
(bench/cases/generator.py; the generator pairing while ours cannot run --custom-source) at
N = MEMORY_BASE_N x1, x10 and x100, with a table of its own in results.md besides its rows in the
main one."""

from __future__ import annotations

from cases.generator import custom_source_pending, pairing
from harness.core import Harness, Pending, Plan
from harness.report import fmt, ratio_text

# The first N at --scale 1; the case then runs 10x and 100x that.
MEMORY_BASE_N = 10_000


def plan(h: Harness) -> Plan | Pending:
    base = h.scaled(MEMORY_BASE_N)
    python_source = custom_source_pending(h) is None
    label = ("python-source pairing" if python_source else
             "generator pairing (equivalent sources; ours cannot run --custom-source yet)")
    return Plan(label=f"{label}, default queue settings, N = {base:,} x1 x10 x100",
                same_yaml=python_source,
                tiers=[pairing(h, base * k, python_source) for k in (1, 10, 100)])


def results_table(case: dict) -> list[str]:
    """The case's table in results.md, from its entry in the report."""
    lines = ["", "Memory: peak RSS as N grows (default queue settings), median [min–max] MiB:",
             "", "| N | ours | original | ours/original |", "|---:|---:|---:|---:|"]
    for tier in case["tiers"]:
        s = tier["summary"]
        cells = [f"{fmt(s[i]['rss_mib']['median'], '{:,.0f}')} "
                 f"[{fmt(s[i]['rss_mib']['min'], '{:,.0f}')}–"
                 f"{fmt(s[i]['rss_mib']['max'], '{:,.0f}')}]" for i in ("ours", "original")]
        lines.append(f"| {tier['n']:,} | {cells[0]} | {cells[1]} | "
                     f"{ratio_text(s['ratio']['rss_mib'])} |")
    return lines
