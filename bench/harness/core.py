"""What the cases share: a case's plan (Plan: its tiers of sides, its setup), the Harness that
each case plans itself from (the arguments, probes of our binary, dlt's version), and run_case,
which runs a plan."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

from harness.report import RATIOS, fmt, summarize
from harness.runs import Invocation, RunFailed, run_once

# The records of a probe and of a warm-up run.
PROBE_N = 100


@dataclass
class Tier:
    n: int
    ours: Invocation
    original: Optional[Invocation]  # None where the original cannot do the job (postgres)
    # The bare job done by a reference tool on the same input (kcat for kafka, psql \copy for
    # postgres): the floor.
    limit: Optional[Invocation] = None
    # Another project's tool doing the same job (dlt for rest), as users compare us with it.
    peer: Optional[Invocation] = None
    # Further sides, each with its own Invocation.side (the members case: ours as 2 members).
    others: tuple[Invocation, ...] = ()

    def sides(self, wanted: list[str]) -> list[Invocation]:
        return [inv for inv in (self.ours, self.original, self.limit, self.peer, *self.others)
                if inv is not None and inv.impl in wanted]


@dataclass
class Plan:
    label: str  # what is compared, shown under the table
    same_yaml: bool
    tiers: list[Tier]
    setup: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
    # What the two 100-record warm-up runs need instead of `setup` (a small server or topic).
    warmup: Optional[Callable[[], contextlib.AbstractContextManager]] = None
    # How the tables name the tiers' limit side (the reference tool), when they have one.
    limit_name: str = "limit"
    # How the tables name the tiers' peer side, when they have one.
    peer_name: str = "peer"
    # The ratio rows, as RATIOS (None: RATIOS, ours over each other side).
    ratios: Optional[tuple[tuple[str, str, str], ...]] = None


@dataclass
class Pending:
    reason: str


def peer_version(python: str, package: str) -> Optional[str]:
    """The version of `package` installed for the interpreter `python`, or None."""
    if not os.access(python, os.X_OK):
        return None
    done = subprocess.run([python, "-c", f"import importlib.metadata as m; "
                                         f"print(m.version({package!r}))"],
                          capture_output=True, text=True, check=False)
    return (done.stdout.strip() or None) if done.returncode == 0 else None


@contextlib.contextmanager
def loopback_server(argv: list, holder: dict) -> Iterator[None]:
    """Runs a server of bench/servers/ (argv: its path and arguments, each made a string) with
    this Python; the server prints its loopback port first. holder["base_url"] is its URL while
    it runs."""
    process = subprocess.Popen([sys.executable, *map(str, argv)], stdout=subprocess.PIPE,
                               text=True)
    try:
        holder["base_url"] = f"http://127.0.0.1:{int(process.stdout.readline())}"
        yield
    finally:
        process.terminate()
        process.wait()


class Harness:
    """The state the cases plan themselves from: the arguments, the results folder, what our
    binary can do (probed once each), dlt's version."""

    def __init__(self, args: argparse.Namespace, results: Path):
        self.args = args
        self.results = results
        self.work = results / "work"
        self.ours = args.ours
        self.original = args.original
        self._probes: dict[str, Optional[str]] = {}
        self._source_list: Optional[str] = None
        # dlt's version where the dlt peers (rest, rest-children, postgres, merge) can run, else
        # None.
        self.dlt_version = peer_version(args.dlt_python, "dlt")

    # ---- probes of OUR binary (None = available, else the reason it is not)

    def probe(self, name: str, inv: Invocation) -> Optional[str]:
        if name not in self._probes:
            try:
                run_once(inv, self.work / f"probe-{name}", timeout_s=120, keep=False)
                self._probes[name] = None
            except RunFailed as error:
                self._probes[name] = str(error).removeprefix("ours: ")
            print(f"  probe {name}: {'available' if self._probes[name] is None else self._probes[name]}")
        return self._probes[name]

    def probe_source_built(self, name: str) -> Optional[str]:
        if self._source_list is None:
            done = subprocess.run([self.ours, "source", "list"], capture_output=True, text=True)
            self._source_list = done.stdout
        for line in self._source_list.splitlines():
            if line.startswith(f"{name} - "):
                if "not implemented" in line:
                    return f"our `{name}` source is declared but not built yet (`bizon source list`)"
                return None
        return f"our binary has no `{name}` source yet (`bizon source list`)"

    # ---- what the cases' plans share

    def scaled(self, n: int) -> int:
        return max(PROBE_N, int(n * self.args.scale))

    def dlt_peer_name(self) -> str:
        """How the tables name a case's dlt peer side (Plan.peer_name)."""
        return f"dlt {self.dlt_version}" if self.dlt_version else "peer"


# A case's plan: a Plan, or Pending with the reason the case cannot run.
Planner = Callable[[Harness], "Plan | Pending"]


def run_case(harness: Harness, name: str, planner: Planner, args: argparse.Namespace) -> dict:
    """Plans the case `name` and runs it: its entry of results.json."""
    print(f"\n== {name}", flush=True)
    plan = planner(harness)
    if isinstance(plan, Pending):
        print(f"  pending: {plan.reason}", flush=True)
        return {"name": name, "status": "pending", "reason": plan.reason}
    print(f"  {plan.label}", flush=True)
    case = {"name": name, "status": "ok", "label": plan.label, "same_yaml": plan.same_yaml,
            "tiers": [], "limit_name": plan.limit_name, "peer_name": plan.peer_name}
    try:
        # One tiny run per side, not counted: warms the page cache and checks both accept the
        # config before the long runs.
        with (plan.warmup or contextlib.nullcontext)():
            for inv in plan.tiers[0].sides(args.sides):
                tiny = dataclasses.replace(inv, n=PROBE_N)
                run_once(tiny, harness.work / f"{name}-warmup-{inv.key}", 300, False)
        print("  warm-up runs ok (both sides, N=100)", flush=True)
        with plan.setup():
            for tier in plan.tiers:
                pairs = []
                for i in range(args.runs):
                    pair = {}
                    for inv in tier.sides(args.sides):
                        directory = harness.work / f"{name}-{tier.n}-{inv.key}-{i}"
                        result = run_once(inv, directory, args.timeout, args.keep_output)
                        pair[inv.key] = result
                        print(f"  N={tier.n:,} run {i + 1}/{args.runs} {inv.key:8s} "
                              f"{result['records_per_s']:>10,.0f} rec/s  "
                              f"cpu {result['cpu_s']:7.2f} s  rss {result['rss_mib']:6.0f} MiB  "
                              f"first {fmt(result['first_record_s'], '{:.2f}')} s  "
                              f"wall {result['wall_s']:6.2f} s  "
                              f"user {result['user_s']:5.2f} sys {result['sys_s']:5.2f}  "
                              f"bg {result['background_cores']:.2f} cores"
                              + (f"  emulators cpu {result['emulator_cpu_s']:.2f} s"
                                 if "emulator_cpu_s" in result else "")
                              + (f"  {result['emulator_jobs']} jobs {result['emulator_job_s']:.2f} s"
                                 if "emulator_job_s" in result else "")
                              + (f"  {result['records_per_s_member']:,.0f} rec/s per member"
                                 if "records_per_s_member" in result else ""), flush=True)
                    pairs.append(pair)
                case["tiers"].append({"n": tier.n, "runs": pairs,
                                      "summary": summarize(pairs, plan.ratios or RATIOS)})
    except RunFailed as error:
        print(f"  FAILED: {error}", flush=True)
        return {"name": name, "status": "failed", "reason": str(error), "label": plan.label}
    return case

