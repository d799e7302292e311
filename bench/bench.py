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
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

from cases import merge as merge_case  # bench/cases/merge.py (this script's folder is on sys.path)
from cases import rest_children as rest_children_case  # bench/cases/rest_children.py

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
SOURCES = BENCH / "sources"
GENERATOR_SOURCE = SOURCES / "generator_source.py"
REST_SOURCE = SOURCES / "rest_source.py"
PAGED_SERVER = BENCH / "servers" / "paged_server.py"
DLT_REST = BENCH / "peers" / "dlt_rest.py"
DLT_POSTGRES = BENCH / "peers" / "dlt_postgres.py"
DLT_MERGE = BENCH / "peers" / "dlt_merge.py"
PARQUET_ORDER_SHIM = BENCH / "shims" / "original_parquet_order.py"

# Records of about 300 bytes of JSON: {"id","name","updated_at","value","padding"}.
PAYLOAD_BYTES = 200
PAGE_SIZE = 1000
# N at --scale 1: about 10 s for one run of the original on a 2-core VM.
BASE_N = 120_000
# The memory case's first N at --scale 1; it then runs 10x and 100x that.
MEMORY_BASE_N = 10_000
KAFKA_N = 1_000_000
# The bigquery-streaming case: kafka records into the BigQuery emulator's Storage Write API.
BQ_STREAMING_N = 200_000
POSTGRES_N = 300_000
# The members case: N messages in a topic of MEMBERS_PARTITIONS partitions, read by 1, then 2
# processes of one stream pipeline.
MEMBERS_N = 300_000
MEMBERS_PARTITIONS = 6
PROBE_N = 100

ALL_CASES = ["generator", "python-source", "transform", "rest", "rest-children", "kafka",
             "postgres", "merge", "members", "memory", "bigquery", "bigquery-streaming"]

TRANSFORM_PYTHON = """\
data["name"] = data["name"].upper()
data["value_x2"] = data["value"] * 2
"""

CLK_TCK = os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------------------------
# One run


@dataclass(frozen=True)
class Invocation:
    """One side of a pairing: how to run it and what its output must hold."""

    # "ours", "original", "limit" (a tool doing the bare job: kcat, psql \copy) or "peer" (another
    # project's tool doing the same job: dlt)
    impl: str
    # "{config}" stands for the run's config.yml; a callable is called when the run starts.
    argv: list[str] | Callable[[], list[str]]
    render: Callable[[int], str]  # n -> YAML text (rendered when the run starts)
    n: int  # records expected in out.json
    # (first payload, last payload, n) -> an error, or None when they look right
    check: Callable[[dict, dict, int], Optional[str]]
    # source_record_id of record i, with i as the one group: the ids must be exactly 0..n-1
    id_pattern: bytes = rb'"source_record_id":"(\d+)"'
    # Lines are the payloads themselves (a limit tool's output), not destination records.
    raw_lines: bool = False
    # Checks the run's output instead of out.json (a table in a server, say): an error or None.
    verify: Optional[Callable[[Path, "Invocation"], Optional[str]]] = None
    # Wraps the run; the dict it yields is filled at its exit and merged into the measurements
    # (the bigquery case: the emulators' own CPU time during the run).
    around: Optional[Callable[[], contextlib.AbstractContextManager]] = None
    # The key of its measurements in a pair, where a case runs several sides of one impl (the
    # members case: ours_x1, ours_x2); by default the impl.
    side: str = ""
    # A stream pipeline, which does not end by itself: run as that many processes, members of one
    # consumer group (run_members), until `loaded` (the rows in the destination) reaches n.
    members: int = 0
    loaded: Optional[Callable[[], int]] = None
    # Runs in the run's fresh directory before `render`, untimed (the merge case: the seed load
    # the timed run merges into); raises RunFailed.
    before: Optional[Callable[[Path, "Invocation"], None]] = None

    @property
    def key(self) -> str:
        return self.side or self.impl


class RunFailed(Exception):
    pass


def busy_seconds() -> float:
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


def first_line_complete(directory: Path) -> bool:
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return False
    for entry in entries:
        if entry.name.startswith("out") and entry.name.endswith(".json"):
            try:
                if entry.stat().st_size == 0:
                    continue
                with open(entry.path, "rb") as f:
                    if b"\n" in f.read(1 << 16):
                        return True
            except FileNotFoundError:
                continue  # Renamed between listing and opening.
    return False


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


def peer_version(python: str, package: str) -> Optional[str]:
    """The version of `package` installed for the interpreter `python`, or None."""
    if not os.access(python, os.X_OK):
        return None
    done = subprocess.run([python, "-c", f"import importlib.metadata as m; "
                                         f"print(m.version({package!r}))"],
                          capture_output=True, text=True, check=False)
    return (done.stdout.strip() or None) if done.returncode == 0 else None


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


LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d[ T][\d:.]+\s*\|\s*\w+\s*\|\s*")


def last_error(log: Path) -> str:
    """The last meaningful line of a failed run's log, without its timestamp and level."""
    lines = [LOG_PREFIX.sub("", line).strip()
             for line in log.read_text(errors="replace").splitlines()]
    lines = [line for line in lines if line and not line.startswith("Error: Pipeline finished")]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or ["(empty log)"])[-1][:300]


SPAWN_SOURCE = BENCH / "spawn.c"
SPAWN = BENCH / ".build" / "spawn"


def ensure_spawn() -> None:
    """Compiles bench/spawn.c (the launcher that measures each run) when missing or stale."""
    if SPAWN.exists() and SPAWN.stat().st_mtime >= SPAWN_SOURCE.stat().st_mtime:
        return
    SPAWN.parent.mkdir(parents=True, exist_ok=True)
    compiler = os.environ.get("CC", "cc")
    subprocess.run([compiler, "-O2", "-Wall", "-o", str(SPAWN), str(SPAWN_SOURCE)], check=True)


def prepare_run(inv: Invocation, directory: Path) -> list[str]:
    """Makes `directory` afresh (and runs inv.before there) with the run's config.yml; returns
    the run's argv."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    if inv.before:
        inv.before(directory, inv)
    (directory / "config.yml").write_text(inv.render(inv.n))
    return [a.replace("{config}", str(directory / "config.yml"))
            for a in (inv.argv() if callable(inv.argv) else inv.argv)]


def read_usage(usage_file: Path) -> tuple[float, float, float, float]:
    """spawn's line: wall s, user CPU s, system CPU s, peak RSS MiB."""
    wall, user, system, maxrss_kib, _status = usage_file.read_text().split()
    return float(wall), float(user), float(system), int(maxrss_kib) / 1024


def measurements(n: int, wall: float, user: float, system: float, rss_mib: float, busy: float,
                 harness_wall: float, load_start: float) -> dict:
    """The figures of a run that loaded n records; `busy` is the machine's busy CPU time meanwhile
    (busy_seconds), the run's own included."""
    cpu = user + system
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "user_s": user,
        "sys_s": system,
        "rss_mib": rss_mib,
        "records": n,
        "records_per_s": n / wall,
        "cpu_s_per_m": cpu / n * 1e6,
        "background_cores": max(0.0, busy - cpu) / harness_wall,
        "loadavg_1m_at_start": load_start,
    }


def run_once(inv: Invocation, directory: Path, timeout_s: float, keep: bool) -> dict:
    """Runs one invocation in `directory` and returns its measurements; raises RunFailed."""
    if inv.members:
        return run_members(inv, directory, timeout_s, keep)
    argv = prepare_run(inv, directory)
    usage_file = directory / "usage.txt"
    log = open(directory / "log.txt", "wb")
    first_record: list[float] = []
    done = threading.Event()
    load_start = os.getloadavg()[0]
    busy_start = busy_seconds()
    start = time.monotonic()
    try:
        process = subprocess.Popen([str(SPAWN), str(usage_file), *argv], cwd=directory,
                                   stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as error:
        raise RunFailed(f"{inv.impl}: cannot start {SPAWN}: {error}") from error

    def poll() -> None:
        while not done.is_set():
            if first_line_complete(directory):
                first_record.append(time.monotonic() - start)
                return
            time.sleep(0.002)

    def kill() -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    timer = threading.Timer(timeout_s, kill)
    timer.start()
    extra: dict = {}
    try:
        with (inv.around or contextlib.nullcontext)() as measured:
            process.wait()
        extra = measured or {}
    finally:
        timer.cancel()
    harness_wall = time.monotonic() - start
    busy = busy_seconds() - busy_start
    done.set()
    poller.join()
    log.close()
    if process.returncode != 0 or not usage_file.exists():
        reason = ("killed after the timeout" if harness_wall >= timeout_s
                  else f"exit {process.returncode}")
        raise RunFailed(f"{inv.impl}: {reason}: {last_error(directory / 'log.txt')}")
    wall, user, system, rss_mib = read_usage(usage_file)
    error = (inv.verify or verify_output)(directory, inv)
    if error:
        raise RunFailed(f"{inv.impl}: wrong output: {error}")
    if not first_record and first_line_complete(directory):
        first_record.append(wall)  # Written and renamed between two polls: bounded by the wall time.
    if not keep:
        shutil.rmtree(directory, ignore_errors=True)
    return {**measurements(inv.n, wall, user, system, rss_mib, busy, harness_wall, load_start),
            "first_record_s": first_record[0] if first_record else None, **extra}


def spawned_child(pid: int) -> Optional[int]:
    """The program that bench/spawn.c (`pid`) forked, or None while there is none."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(Path(f"/proc/{pid}/task/{pid}/children").read_text().split()[0])
    return None


def stop_spawned(processes: list[subprocess.Popen], timeout_s: float = 90) -> None:
    """SIGTERM to the program each spawn runs (spawn then writes its usage and exits with the
    program's code), then waits; SIGKILL to the group of any that is still there after timeout_s."""
    for process in processes:
        child = spawned_child(process.pid)
        if child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


# How often run_members counts the rows in the destination.
MEMBERS_POLL_S = 0.5


def run_members(inv: Invocation, directory: Path, timeout_s: float, keep: bool) -> dict:
    """Runs inv.members processes of one stream pipeline (the same config.yml, BIZON_MEMBER=1, 2,
    ...), each through spawn, counts the destination's rows (inv.loaded) every MEMBERS_POLL_S
    until they reach N, then stops every process with SIGTERM and waits for it to exit 0.

    wall_s is from the first start to the count that saw N rows; CPU is summed over the
    processes and the peak RSS is the largest one's (each process's own figures are under
    "processes")."""
    argv = prepare_run(inv, directory)
    logs = [directory / f"log-{member}.txt" for member in range(1, inv.members + 1)]
    usages = [directory / f"usage-{member}.txt" for member in range(1, inv.members + 1)]
    processes: list[subprocess.Popen] = []
    load_start = os.getloadavg()[0]
    busy_start = busy_seconds()
    start = time.monotonic()
    try:
        for member, (log, usage) in enumerate(zip(logs, usages), 1):
            with open(log, "wb") as sink:
                processes.append(subprocess.Popen(
                    [str(SPAWN), str(usage), *argv], cwd=directory, stdout=sink,
                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                    env={**os.environ, "BIZON_MEMBER": str(member)}))
        while (loaded := inv.loaded()) < inv.n:
            for log, process in zip(logs, processes):
                if process.poll() is not None:
                    raise RunFailed(f"{inv.impl}: {log.stem} ended (exit {process.returncode}) "
                                    f"at {loaded:,} of {inv.n:,} rows: {last_error(log)}")
            if time.monotonic() - start >= timeout_s:
                raise RunFailed(f"{inv.impl}: {loaded:,} of {inv.n:,} rows after the timeout")
            time.sleep(MEMBERS_POLL_S)
        wall = time.monotonic() - start
    finally:
        stop_spawned(processes)
    harness_wall = time.monotonic() - start
    busy = busy_seconds() - busy_start
    for log, usage, process in zip(logs, usages, processes):
        if process.returncode != 0 or not usage.exists():
            raise RunFailed(f"{inv.impl}: {log.stem}: exit {process.returncode} after SIGTERM: "
                            f"{last_error(log)}")
    each = [read_usage(usage) for usage in usages]
    error = inv.verify(directory, inv) if inv.verify else "no check of the destination"
    if error:
        raise RunFailed(f"{inv.impl}: wrong output: {error}")
    if not keep:
        shutil.rmtree(directory, ignore_errors=True)
    result = measurements(inv.n, wall, sum(u[1] for u in each), sum(u[2] for u in each),
                          max(u[3] for u in each), busy, harness_wall, load_start)
    return {**result, "first_record_s": None, "members": inv.members,
            "records_per_s_member": result["records_per_s"] / inv.members,
            "processes": [{"wall_s": w, "cpu_s": u + s, "rss_mib": r} for w, u, s, r in each]}


# --------------------------------------------------------------------------------------------
# Configs


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


def transforms_yaml() -> str:
    body = "".join(f"      {line}\n" for line in TRANSFORM_PYTHON.splitlines())
    return f"transforms:\n  - label: bench\n    python: |\n{body}"


def kafka_source_yaml(broker: str, topic: str, group: str, sync_mode: str = "full_refresh",
                      destination_id: str = "out", extra: str = "",
                      consumer_config: str = "") -> str:
    """The `source:` block of our kafka source reading `topic` (the bench's records, plaintext);
    `extra` adds settings to it, `consumer_config` to its consumer_config (lines indented as they
    go)."""
    return f"""\
source:
  name: kafka
  stream: topic
  sync_mode: {sync_mode}
  topics:
    - name: {topic}
      destination_id: {destination_id}
  bootstrap_servers: {broker}
  group_id: {group}
  batch_size: {PAGE_SIZE}
  consumer_timeout: 2
  message_encoding: utf-8
{extra}  authentication:
    type: basic
    params:
      username: unused
      password: unused
  consumer_config:
    auto.offset.reset: earliest
    enable.auto.commit: false
    security.protocol: PLAINTEXT
{consumer_config}"""


def check_generator(first: dict, last: dict, n: int, transformed: bool = False) -> Optional[str]:
    for i, payload in ((0, first), (n - 1, last)):
        name = f"record-{i}".upper() if transformed else f"record-{i}"
        if payload.get("id") != i or payload.get("name") != name:
            return f"unexpected payload for record {i}: {str(payload)[:120]}"
        if len(payload.get("padding", "")) != PAYLOAD_BYTES:
            return f"record {i} has no {PAYLOAD_BYTES}-byte padding"
        if transformed and payload.get("value_x2") != payload.get("value", 0) * 2:
            return f"record {i} was not transformed: {str(payload)[:120]}"
    return None


def generator_invocation(impl: str, binary: str, source_name: str, n: int, custom_source: bool,
                         transformed: bool = False) -> Invocation:
    argv = [binary, "run", "{config}"]
    if custom_source:
        argv += ["--custom-source", str(GENERATOR_SOURCE)]
    extra = transforms_yaml() if transformed else ""
    return Invocation(
        impl=impl, argv=argv, n=n,
        render=lambda count: generator_yaml(source_name, count, extra),
        check=lambda first, last, count: check_generator(first, last, count, transformed))


# --------------------------------------------------------------------------------------------
# Cases


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


class Harness:
    def __init__(self, args: argparse.Namespace, results: Path):
        self.args = args
        self.results = results
        self.work = results / "work"
        self.ours = args.ours
        self.original = args.original
        self._probes: dict[str, Optional[str]] = {}
        self._source_list: Optional[str] = None
        # dlt's version where the rest and postgres cases' peer can run, else None.
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

    def probe_custom_source(self) -> Optional[str]:
        # A source name that is not built in, so a binary that ignored --custom-source fails
        # instead of silently running the built-in generator.
        why = self.probe("custom-source", generator_invocation(
            "ours", self.ours, "bench_python", PROBE_N, custom_source=True))
        return None if why is None else f"our binary cannot run --custom-source yet ({why})"

    def probe_transforms(self) -> Optional[str]:
        why = self.probe("transforms", generator_invocation(
            "ours", self.ours, "generator", PROBE_N, custom_source=False, transformed=True))
        return None if why is None else f"our binary cannot run Python transforms yet ({why})"

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

    # ---- case plans

    def plan(self, case: str) -> Plan | Pending:
        return getattr(self, "plan_" + case.replace("-", "_"))()

    def generator_pairing(self, n: int, transformed: bool = False) -> Tier:
        return Tier(n,
                    generator_invocation("ours", self.ours, "generator", n, False, transformed),
                    generator_invocation("original", self.original, "generator", n, True, transformed))

    def python_pairing(self, n: int, transformed: bool = False) -> Tier:
        return Tier(n,
                    generator_invocation("ours", self.ours, "bench_python", n, True, transformed),
                    generator_invocation("original", self.original, "bench_python", n, True,
                                         transformed))

    def scaled(self, n: int) -> int:
        return max(PROBE_N, int(n * self.args.scale))

    def plan_generator(self) -> Plan | Pending:
        return Plan(
            label="equivalent sources, not the same YAML: ours runs the built-in `generator` "
                  "source, the original runs bench/sources/generator_source.py (--custom-source), "
                  "which emits the identical records (ids, fields, sizes)",
            same_yaml=False, tiers=[self.generator_pairing(self.scaled(BASE_N))])

    def plan_python_source(self) -> Plan | Pending:
        why = self.probe_custom_source()
        if why:
            return Pending(why)
        return Plan(label="same YAML and the same custom Python source file on both "
                          "(bench/sources/generator_source.py)",
                    same_yaml=True, tiers=[self.python_pairing(self.scaled(BASE_N))])

    def plan_transform(self) -> Plan | Pending:
        why = self.probe_transforms()
        if why:
            return Pending(why)
        n = self.scaled(BASE_N)
        if self.probe_custom_source() is None:
            return Plan(label="python-source case plus a two-line Python transform; same YAML",
                        same_yaml=True, tiers=[self.python_pairing(n, transformed=True)])
        return Plan(label="generator case plus a two-line Python transform; equivalent sources "
                          "(ours cannot run --custom-source yet)",
                    same_yaml=False, tiers=[self.generator_pairing(n, transformed=True)])

    def plan_memory(self) -> Plan | Pending:
        base = self.scaled(MEMORY_BASE_N)
        if self.probe_custom_source() is None:
            pair, label, same = self.python_pairing, "python-source pairing", True
        else:
            pair, same = self.generator_pairing, False
            label = "generator pairing (equivalent sources; ours cannot run --custom-source yet)"
        return Plan(label=f"{label}, default queue settings, N = {base:,} x1 x10 x100",
                    same_yaml=same, tiers=[pair(base), pair(base * 10), pair(base * 100)])

    def plan_rest(self) -> Plan | Pending:
        why = self.probe_source_built("rest_api")
        if why:
            return Pending(why)
        n = self.scaled(BASE_N)
        holder: dict[str, str] = {}

        def tier(count: int) -> Tier:
            def ours_yaml(_: int) -> str:
                text = (BENCH / "cases" / "rest_api.yml").read_text()
                return text.replace("{base_url}", holder["base_url"]).replace(
                    "{page_size}", str(PAGE_SIZE))

            def original_yaml(_: int) -> str:
                return f"""\
name: bench-rest
source:
  name: bench_rest
  stream: items
  base_url: {holder['base_url']}
  page_size: {PAGE_SIZE}
destination:
  name: file
  config:
    destination_id: out
"""
            peer = None
            if self.dlt_version:
                peer = Invocation("peer", lambda: [self.args.dlt_python, str(DLT_REST),
                                                   holder["base_url"], str(PAGE_SIZE)],
                                  lambda _: "", count, check_generator,
                                  rb'(?m)^\{"id":(\d+),', raw_lines=True, verify=verify_dlt)
            return Tier(count,
                        Invocation("ours", [self.ours, "run", "{config}"], ours_yaml, count,
                                   check_generator),
                        Invocation("original", [self.original, "run", "{config}",
                                                "--custom-source", str(REST_SOURCE)],
                                   original_yaml, count, check_generator),
                        peer=peer)

        @contextlib.contextmanager
        def server(count: int) -> Iterator[None]:
            process = subprocess.Popen(
                [sys.executable, str(PAGED_SERVER), "--count", str(count), "--payload-bytes",
                 str(PAYLOAD_BYTES), "--page-size", str(PAGE_SIZE)],
                stdout=subprocess.PIPE, text=True)
            try:
                port = int(process.stdout.readline())
                holder["base_url"] = f"http://127.0.0.1:{port}"
                yield
            finally:
                process.terminate()
                process.wait()

        dlt_version = self.dlt_version
        return Plan(label="same loopback HTTP server (bench/servers/paged_server.py, pages of "
                          f"{PAGE_SIZE}, next-URL links): our rest_api source vs a custom source "
                          "for the original using requests (bench/sources/rest_source.py)"
                          + (f"; peer: dlt {dlt_version}'s rest_api source into its filesystem "
                             "destination as uncompressed JSONL (bench/peers/dlt_rest.py)"
                             if dlt_version else "; no peer: dlt is not installed (bench/run.sh "
                             "makes bench/.venv-dlt)"),
                    same_yaml=False, tiers=[tier(n)], setup=lambda: server(n),
                    warmup=lambda: server(PROBE_N),
                    peer_name=f"dlt {dlt_version}" if dlt_version else "peer")

    def plan_rest_children(self) -> Plan | Pending:
        why = self.probe_source_built("rest_api")
        if why:
            return Pending(why)
        case = rest_children_case
        parents, n = case.counts(self.args.scale)
        holder: dict[str, str] = {}
        peer = None
        if self.dlt_version:
            peer = Invocation("peer", lambda: case.dlt_argv(self.args.dlt_python, holder),
                              lambda _: "", n, check_generator,
                              verify=lambda d, inv: case.verify_dlt(d, inv.n, PAYLOAD_BYTES))
        ours = Invocation("ours", [self.ours, "run", "{config}"], lambda _: case.ours_yaml(holder),
                          n, check_generator,
                          verify=lambda d, inv: case.verify_ours(d, inv.n, PAYLOAD_BYTES))
        dlt_version = self.dlt_version
        return Plan(label=case.describe(parents, dlt_version), same_yaml=False,
                    tiers=[Tier(n, ours, None, peer=peer)],
                    setup=lambda: case.server(parents, PAYLOAD_BYTES, holder),
                    # The warm-up runs expect PROBE_N records: as many whole parents as fit.
                    warmup=lambda: case.server(PROBE_N // (case.CHILDREN + 1), PAYLOAD_BYTES,
                                               holder),
                    peer_name=f"dlt {dlt_version}" if dlt_version else "peer")

    def kafka_pending(self) -> Optional[str]:
        """Why the cases reading kafka cannot run (our source, the broker, the producer's
        library), or None."""
        reasons = [why] if (why := self.probe_source_built("kafka")) else []
        if not os.environ.get("BIZON_BENCH_KAFKA"):
            reasons.append("needs a broker: set BIZON_BENCH_KAFKA=host:port (bench/run.sh then "
                           "installs bizon[kafka] and loads the topic)")
        if reasons:
            return "; ".join(reasons)
        try:
            import confluent_kafka  # noqa: F401  (installed by bizon[kafka])
        except ImportError:
            return ("confluent-kafka is missing from bench/.venv: re-run bench/run.sh with "
                    "BIZON_BENCH_KAFKA set so it installs bizon[kafka]")
        return None

    def plan_kafka(self) -> Plan | Pending:
        if why := self.kafka_pending():
            return Pending(why)
        broker = os.environ["BIZON_BENCH_KAFKA"]
        n = max(PROBE_N, int(KAFKA_N * self.args.scale))
        holder: dict[str, str] = {}

        def yaml(_: int) -> str:
            source = kafka_source_yaml(broker, holder["topic"], "bizon-bench")
            return f"name: bench-kafka\n{source}destination:\n{FILE_DESTINATION}"

        def check(first: dict, last: dict, count: int) -> Optional[str]:
            for i, payload in ((0, first), (count - 1, last)):
                if payload.get("offset") != i or payload.get("value", {}).get("id") != i:
                    return f"unexpected kafka record at offset {i}: {str(payload)[:160]}"
            return None

        def check_raw(first: dict, last: dict, count: int) -> Optional[str]:
            for i, payload in ((0, first), (count - 1, last)):
                if payload.get("id") != i or len(payload.get("padding", "")) != PAYLOAD_BYTES:
                    return f"unexpected kcat line for offset {i}: {str(payload)[:160]}"
            return None

        def kcat_argv(envelope: bool) -> Callable[[], list[str]]:
            # The librdkafka floor: the same topic consumed to a file with librdkafka's defaults,
            # nothing else done per message. `exec` so that the measured process is kcat itself.
            # With `envelope` (-J), each message becomes a JSON object of its topic, partition,
            # offset, timestamp, key and payload, the payload escaped as a JSON string: the shape
            # of our records, without the JSON check, the uuid and the three RFC 3339 times.
            flag = "-J " if envelope else ""
            return lambda: ["sh", "-c", f"exec kcat -C -q -e {flag}-o beginning -b {broker} "
                                        f"-t {holder['topic']} -p 0 > out.json"]

        def check_envelope(first: dict, last: dict, count: int) -> Optional[str]:
            for i, envelope in ((0, first), (count - 1, last)):
                if envelope.get("offset") != i or json.loads(envelope.get("payload", "{}")).get(
                        "id") != i:
                    return f"unexpected kcat -J line for offset {i}: {str(envelope)[:160]}"
            return None

        def tier(count: int) -> Tier:
            ids = rb'"source_record_id":"partition_0_offset_(\d+)"'
            limit = peer = None
            if shutil.which("kcat"):
                limit = Invocation("limit", kcat_argv(False), lambda _: "", count, check_raw,
                                   rb'(?m)^\{"id":(\d+),', raw_lines=True)
                peer = Invocation("peer", kcat_argv(True), lambda _: "", count, check_envelope,
                                  rb'"offset":(\d+),', raw_lines=True)
            return Tier(count,
                        Invocation("ours", [self.ours, "run", "{config}"], yaml, count, check,
                                   ids),
                        Invocation("original", [self.original, "run", "{config}"], yaml, count,
                                   check, ids),
                        limit, peer=peer)

        @contextlib.contextmanager
        def topic(count: int) -> Iterator[None]:
            holder["topic"] = kafka_setup(broker, count)
            yield

        return Plan(label=f"same YAML; {n:,} JSON records of ~300 B in a one-partition topic "
                          f"on {broker}; the run ends after consumer_timeout (2 s) without data"
                          + ("; limit: `kcat -C -e` of the same topic to a file (librdkafka "
                             "defaults); peer: `kcat -C -e -J`, each message as a JSON envelope "
                             "(topic, partition, offset, timestamp, key, the payload escaped as a "
                             "string), the shape of our records" if shutil.which("kcat") else
                             "; no limit: kcat is not installed (scripts/install-deps.sh "
                             "--with-bench)"),
                    same_yaml=True, tiers=[tier(n)], setup=lambda: topic(n),
                    warmup=lambda: topic(PROBE_N), limit_name="kcat", peer_name="kcat -J")

    def plan_postgres(self) -> Plan | Pending:
        server = PostgresServer.from_env()
        if isinstance(server, str):
            return Pending(server)
        # A table per side, dropped after each run's check (the schema at the end).
        schema = f"bizon_bench_{os.getpid()}"
        tables = {"ours": "bench_ours", "limit": "bench_copy", "peer": "items"}
        limit = f'"{schema}"."{tables["limit"]}"'
        holder: dict[str, Path] = {}

        def ours_yaml(count: int) -> str:
            return generator_yaml("generator", count,
                                  destination=server.destination_yaml(schema, tables["ours"]))

        def limit_table(_: int) -> str:
            # The empty table, made before the run so that only the COPY is timed.
            columns = ", ".join(f"{column} {kind}" for column, kind in POSTGRES_COLUMNS)
            server.psql(f"DROP TABLE IF EXISTS {limit}; CREATE TABLE {limit} ({columns})")
            return ""

        def copy_argv() -> list[str]:
            # The COPY floor: psql streaming the prepared rows file into the same table shape.
            columns = ", ".join(column for column, _ in POSTGRES_COLUMNS)
            return server.psql_argv(f"\\copy {limit} ({columns}) FROM '{holder['rows']}'")

        def verify(impl: str) -> Callable[[Path, Invocation], Optional[str]]:
            return lambda _, inv: server.check_table(schema, tables[impl], inv.n)

        # dlt's dataset: a schema of its own, with dlt's state tables beside the data, dropped
        # after each run so that the next one starts as new.
        dataset = f"{schema}_dlt"

        def verify_dlt(_: Path, inv: Invocation) -> Optional[str]:
            # dlt's own table shape: a column per field, and its load id and row id.
            try:
                return server.check_table(dataset, tables["peer"], inv.n,
                                          columns=DLT_POSTGRES_COLUMNS,
                                          data=f"to_jsonb({tables['peer']})", record_id="id")
            finally:
                with contextlib.suppress(RunFailed):
                    server.psql(f'DROP SCHEMA IF EXISTS "{dataset}" CASCADE')

        def tier(count: int) -> Tier:
            peer = None
            if self.dlt_version:
                # The run's "config" is the record count (the warm-up runs another N).
                peer = Invocation("peer", [self.args.dlt_python, str(DLT_POSTGRES), server.url,
                                           dataset, "{config}", str(PAYLOAD_BYTES)],
                                  lambda n: f"{n}\n", count, check_generator, verify=verify_dlt)
            return Tier(count,
                        Invocation("ours", [self.ours, "run", "{config}"], ours_yaml, count,
                                   check_generator, verify=verify("ours")),
                        None,
                        Invocation("limit", copy_argv, limit_table, count, check_generator,
                                   verify=verify("limit")),
                        peer=peer)

        @contextlib.contextmanager
        def prepared(count: int) -> Iterator[None]:
            rows = self.work / f"postgres-rows-{count}.tsv"
            rows.parent.mkdir(parents=True, exist_ok=True)
            print(f"  postgres: writing {count:,} rows to {rows}", flush=True)
            write_copy_rows(rows, count)
            holder["rows"] = rows
            server.psql(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            try:
                yield
            finally:
                with contextlib.suppress(RunFailed):
                    server.psql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
                rows.unlink(missing_ok=True)

        n = max(PROBE_N, int(POSTGRES_N * self.args.scale))
        dlt_version = self.dlt_version
        return Plan(label=f"our generator source into our postgres destination (full refresh, "
                          f"defaults) on {server.host}:{server.port}, {n:,} records; no original "
                          "side, the original bizon has no postgres destination: the ratio row "
                          "is ours/psql, against the limit: `psql -c \"\\copy ... FROM file\"` "
                          "of the same rows (COPY text, prepared before the run) into an empty "
                          "table of the same columns; each run's table is checked (columns, N "
                          "rows, ids 0..N-1) and dropped"
                          + (f"; peer: dlt {dlt_version} at its defaults loading the same records, "
                             "made in Python, into a table of its own shape "
                             "(bench/peers/dlt_postgres.py)" if dlt_version else ""),
                    same_yaml=True, tiers=[tier(n)], setup=lambda: prepared(n),
                    warmup=lambda: prepared(PROBE_N), limit_name="psql",
                    peer_name=f"dlt {dlt_version}" if dlt_version else "peer")

    def plan_merge(self) -> Plan | Pending:
        server = PostgresServer.from_env()
        if isinstance(server, str):
            return Pending(server)
        merges = MergeRuns(server, self.args.timeout)
        strategies, skipped = [], []
        with merges.cleanup():
            for strategy in merge_case.STRATEGIES:
                tiny = self.merge_side("ours", strategy, merges, PROBE_N)
                why = self.probe(f"merge-{strategy}", tiny)
                if why:
                    skipped.append(f"{strategy}: {why}")
                else:
                    strategies.append(strategy)
        if not strategies:
            return Pending("our postgres destination cannot merge yet: " + "; ".join(skipped))
        n = self.scaled(merge_case.MERGE_N)
        sides = [self.merge_side(tool, strategy, merges, n) for strategy in strategies
                 for tool in ("ours", "dlt") if tool == "ours" or self.dlt_version]
        dlt_version = self.dlt_version
        return Plan(label=merge_case.describe(n, f"{server.host}:{server.port}")
                          + (f"; peer: dlt {dlt_version} (bench/peers/dlt_merge.py), "
                             "write_disposition merge, primary_key id, at its defaults otherwise"
                             if dlt_version else "; no peer: dlt is not installed (bench/run.sh "
                             "makes bench/.venv-dlt)")
                          + (f"; not measured: {'; '.join(skipped)}" if skipped else ""),
                    same_yaml=False,
                    tiers=[Tier(n, sides[0], None, others=tuple(sides[1:]))],
                    setup=merges.cleanup, warmup=merges.cleanup,
                    peer_name=f"dlt {dlt_version}" if dlt_version else "peer",
                    ratios=merge_case.RATIOS)

    def merge_side(self, tool: str, strategy: str, merges: MergeRuns, n: int) -> Invocation:
        """One side of the merge case: `tool` (ours or dlt) merging N records with `strategy`."""
        key = merge_case.side_key(tool, strategy)
        if tool == "ours":
            def seed_argv(directory: Path, schema: str, load: merge_case.Load) -> list[str]:
                config = directory / "config.yml"
                config.write_text(merges.ours_yaml(load, strategy, schema))
                return [self.ours, "run", str(config)]

            return Invocation(
                "ours", [self.ours, "run", "{config}"],
                lambda count: merges.ours_yaml(merge_case.loads(count)[1], strategy,
                                               merges.schemas[key]),
                n, check_generator, verify=merges.verify(key),
                before=merges.seed(key, seed_argv, own_directory=True), side=key)

        def dlt_argv(spec: str, schema: str) -> list[str]:
            return [self.args.dlt_python, str(DLT_MERGE), merges.server.url, schema, spec,
                    str(PAYLOAD_BYTES)]

        def dlt_seed_argv(directory: Path, schema: str, load: merge_case.Load) -> list[str]:
            spec = directory / "seed.json"
            spec.write_text(json.dumps(load.spec(strategy)))
            return dlt_argv(str(spec), schema)

        return Invocation(
            "peer", lambda: dlt_argv("{config}", merges.schemas[key]),
            lambda count: json.dumps(merge_case.loads(count)[1].spec(strategy)) + "\n",
            n, check_generator, verify=merges.verify(key),
            before=merges.seed(key, dlt_seed_argv, own_directory=False), side=key)

    def plan_members(self) -> Plan | Pending:
        server = PostgresServer.from_env()
        reasons = [why for why in (self.kafka_pending(), server) if isinstance(why, str)]
        if reasons:
            return Pending("; ".join(reasons))
        broker = os.environ["BIZON_BENCH_KAFKA"]
        table = "events"
        holder: dict = {"schemas": []}
        runs = iter(range(1_000_000))
        # A dead member's partitions move after its session: short, as in the members' tests.
        group_settings = "    session.timeout.ms: 6000\n    heartbeat.interval.ms: 1000\n"

        def yaml(side: str) -> Callable[[int], str]:
            def render(_: int) -> str:
                # A new consumer group and new schemas (destination, backend) per run, made before
                # it starts: every run reads the whole topic.
                run = f"{os.getpid()}_{next(runs)}"
                holder[side] = schema = f"bizon_bench_{run}"
                state = f"bizon_bench_state_{run}"
                holder["schemas"] += [schema, state]
                server.psql(f'CREATE SCHEMA "{schema}"; CREATE SCHEMA "{state}"')
                source = kafka_source_yaml(broker, holder["topic"], f"bizon-bench-{run}",
                                           sync_mode="stream", destination_id=table,
                                           extra="  member: env://BIZON_MEMBER\n",
                                           consumer_config=group_settings)
                return (f"name: bench-members\n{source}"
                        f"destination:\n{server.destination_yaml(schema, table)}"
                        f"engine:\n  runner:\n    type: stream\n  backend:\n"
                        f"{server.backend_yaml(state)}")
            return render

        def verify(side: str) -> Callable[[Path, Invocation], Optional[str]]:
            # The stream table has the load column too; a message's id is its payload's.
            return lambda _, inv: server.check_table(
                holder[side], table, inv.n, (*POSTGRES_COLUMNS, ("_bizon_load_id", "bigint")),
                data="(_source_data->'value')", record_id="(_source_data->'value'->>'id')")

        def side(members: int) -> Invocation:
            key = f"ours_x{members}"
            return Invocation("ours", [self.ours, "run", "{config}"], yaml(key), n,
                              check_generator, verify=verify(key), side=key, members=members,
                              loaded=lambda: server.row_count(holder[key], table))

        @contextlib.contextmanager
        def topic(count: int) -> Iterator[None]:
            holder["topic"] = kafka_setup(broker, count, MEMBERS_PARTITIONS)
            try:
                yield
            finally:
                if holder["schemas"]:
                    with contextlib.suppress(RunFailed):
                        server.psql("; ".join(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'
                                              for schema in holder["schemas"]))
                holder["schemas"].clear()

        n = self.scaled(MEMBERS_N)
        return Plan(label="one kafka `stream` pipeline (postgres backend and destination on "
                          f"{server.host}:{server.port}, `source.member: env://BIZON_MEMBER`) "
                          "run as 1 and as 2 processes of the same YAML, members of one consumer "
                          f"group; {n:,} JSON records of ~300 B in a topic of {MEMBERS_PARTITIONS} "
                          f"partitions on {broker}, loaded once; a new group and new schemas per "
                          "run; each process is stopped by SIGTERM once the table holds N rows, "
                          "which are then checked (N rows, N distinct message ids 0..N-1)",
                    same_yaml=True, tiers=[Tier(n, side(1), None, others=(side(2),))],
                    setup=lambda: topic(n), warmup=lambda: topic(PROBE_N), ratios=MEMBER_RATIOS)

    def plan_bigquery_streaming(self) -> Plan | Pending:
        if why := self.kafka_pending():
            return Pending(why)
        missing = [name for name in BQ_STREAMING_ENV if not os.environ.get(name)]
        if missing:
            return Pending("needs the BigQuery emulator: set " + ", ".join(missing)
                           + " (scripts/test-servers.sh start bigquery prints them)")
        broker = os.environ["BIZON_BENCH_KAFKA"]
        emulators = BigQueryEmulators.from_env()
        holder: dict[str, str] = {}
        runs = iter(range(1_000_000))

        def yaml(count: int) -> str:
            # A table and a consumer group per run: the check counts this run's rows only.
            run = next(runs)
            holder["table"] = f"kafka_{count}_{os.getpid()}_{run}"
            source = kafka_source_yaml(broker, holder["topic"], f"bizon-bench-bq-{run}",
                                       destination_id=holder["table"])
            return (f"name: bench-kafka-bigquery\n{source}destination:\n"
                    "  name: bigquery_streaming_v2\n  config:\n"
                    f"    project_id: {emulators.project}\n"
                    f"    dataset_id: {holder['dataset']}\n"
                    "    time_partitioning: null\n")

        def verify(_: Path, inv: Invocation) -> Optional[str]:
            return emulators.check_kafka_table(holder["dataset"], holder["table"], inv.n)

        @contextlib.contextmanager
        def setup(count: int) -> Iterator[None]:
            holder["dataset"] = f"bizon_bench_bqs_{os.getpid()}"
            emulators.create_dataset(holder["dataset"])
            holder["topic"] = kafka_setup(broker, count)
            yield

        def tier(count: int) -> Tier:
            ours = Invocation("ours", [self.ours, "run", "{config}"], yaml, count,
                              lambda *_: None, verify=verify,
                              around=lambda: emulators.cpu(holder["dataset"], holder["table"]))
            return Tier(count, ours, None)

        n = self.scaled(BQ_STREAMING_N)
        return Plan(label=f"our kafka source (full refresh, {n:,} JSON records of ~300 B in a "
                          f"one-partition topic on {broker}) into the BigQuery emulator through "
                          "bigquery_streaming_v2 (defaults: a PENDING write stream per flush, "
                          "committed once its cursor is recorded, then the staging table published "
                          "by CREATE OR REPLACE TABLE ... AS SELECT); a new table per run, checked "
                          "by a COUNT/COUNT DISTINCT query. No original side: the original's "
                          "Storage Write client cannot be pointed at an emulator. The emulator's "
                          "own CPU time is in results.json (emulator_cpu_s)",
                    same_yaml=True, tiers=[tier(n)], setup=lambda: setup(n),
                    warmup=lambda: setup(PROBE_N))

    def plan_bigquery(self) -> Plan | Pending:
        missing = [name for name in BIGQUERY_ENV if not os.environ.get(name)]
        if missing:
            return Pending("needs the BigQuery and GCS emulators: set " + ", ".join(missing)
                           + " (scripts/test-servers.sh start bigquery gcs prints them)")
        if why := self.probe_custom_source():
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
                        Invocation("ours", [self.ours, "run", "{config}", *custom],
                                   yaml("ours"), count, check_generator,
                                   verify=verify("ours"), around=around("ours")),
                        Invocation("original",
                                   lambda: ["env", f"GOOGLE_APPLICATION_CREDENTIALS={holder['key']}",
                                            str(Path(self.original).parent / "python"),
                                            str(PARQUET_ORDER_SHIM), "run", "{config}", *custom],
                                   yaml("original"), count, check_generator,
                                   verify=verify("original"), around=around("original")))

        @contextlib.contextmanager
        def setup() -> Iterator[None]:
            holder["dataset"] = f"bizon_bench_{os.getpid()}"
            emulators.create_dataset(holder["dataset"])
            with token_endpoint(self.work / "google-key.json") as key:
                holder["key"] = str(key)
                yield

        n = self.scaled(BASE_N)
        return Plan(label="same YAML and custom Python source as python-source, into the BigQuery "
                          f"emulator ({emulators.bigquery_url}) through the bigquery destination: "
                          "files staged in the GCS emulator, one load job per buffer flush "
                          "(defaults: ours stages Avro, the original Parquet, its columns put in the "
                          "table's order by bench/shims/original_parquet_order.py because the "
                          "emulator loads Parquet by position), a new table per "
                          "run, checked by a COUNT/COUNT DISTINCT query; the emulators' own CPU "
                          "time is in results.json (emulator_cpu_s)",
                    same_yaml=True, tiers=[tier(n)], setup=setup, warmup=setup)


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


BIGQUERY_ENV = ("BIGQUERY_EMULATOR_HOST", "STORAGE_EMULATOR_HOST", "BIZON_GCS_BUCKET",
                "BIZON_BIGQUERY_PROJECT")
BQ_STREAMING_ENV = ("BIGQUERY_EMULATOR_HOST", "BIGQUERY_STORAGE_EMULATOR_HOST",
                    "BIZON_BIGQUERY_PROJECT")


def process_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime (fields 14, 15)


def listening_pid(url: str) -> Optional[int]:
    """The process listening on the loopback port of `url` (ss), or None."""
    port = url.rstrip("/").rsplit(":", 1)[-1]
    done = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True)
    match = re.search(r"pid=(\d+)", done.stdout)
    return int(match.group(1)) if match else None


@dataclass
class BigQueryEmulators:
    """The emulators of the bigquery case, through their REST APIs (standard library only)."""

    bigquery_url: str
    storage_url: str
    project: str
    bucket: str

    @staticmethod
    def from_env() -> "BigQueryEmulators":
        def url(host: str) -> str:
            return host.rstrip("/") if "://" in host else f"http://{host.rstrip('/')}"
        # The bigquery-streaming case needs no GCS: its storage_url and bucket stay empty.
        storage = os.environ.get("STORAGE_EMULATOR_HOST", "")
        return BigQueryEmulators(url(os.environ["BIGQUERY_EMULATOR_HOST"]),
                                 url(storage) if storage else "",
                                 os.environ["BIZON_BIGQUERY_PROJECT"],
                                 os.environ.get("BIZON_GCS_BUCKET", ""))

    def call(self, method: str, path: str, body: Optional[dict] = None) -> dict:
        import urllib.error
        import urllib.request
        request = urllib.request.Request(
            f"{self.bigquery_url}/bigquery/v2/projects/{self.project}/{path}", method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Content-Type": "application/json"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=600) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            return {"error": {"code": error.code, "message": error.read().decode(errors="replace")}}

    def create_dataset(self, dataset: str) -> None:
        answer = self.call("POST", "datasets", {"datasetReference": {
            "projectId": self.project, "datasetId": dataset}})
        if "error" in answer and answer["error"]["code"] != 409:
            raise RunFailed(f"bigquery emulator: cannot create dataset {dataset}: {answer}")

    def check_table(self, dataset: str, table: str, n: int) -> Optional[str]:
        """N rows with N distinct source_record_ids 0..N-1, and the first and last payloads."""
        answer = self.call("POST", "queries", {"useLegacySql": False, "timeoutMs": 600000, "query": (
            "SELECT COUNT(*), COUNT(DISTINCT _source_record_id), "
            "MIN(CAST(_source_record_id AS INT64)), MAX(CAST(_source_record_id AS INT64)), "
            "COUNTIF(JSON_VALUE(_source_data, '$.name') = CONCAT('record-', _source_record_id)), "
            "MIN(LENGTH(JSON_VALUE(_source_data, '$.padding'))) "
            f"FROM `{self.project}.{dataset}.{table}`")})
        if "error" in answer or not answer.get("rows"):
            return f"bigquery emulator: cannot count {dataset}.{table}: {str(answer)[:300]}"
        error = table_counts_error(f"{dataset}.{table}", n, *(
            int(cell["v"]) if cell["v"] is not None else None for cell in answer["rows"][0]["f"]))
        if error:
            return error
        self.call("DELETE", f"datasets/{dataset}/tables/{table}")  # Keeps the emulator small.
        return None

    def check_kafka_table(self, dataset: str, table: str, n: int) -> Optional[str]:
        """N rows of the bench topic's records (one partition): N distinct offsets 0..N-1, and
        the value's id equal to its offset in every row."""
        answer = self.call("POST", "queries", {"useLegacySql": False, "timeoutMs": 600000, "query": (
            "SELECT COUNT(*), COUNT(DISTINCT _source_record_id), "
            "MIN(CAST(JSON_VALUE(_source_data, '$.offset') AS INT64)), "
            "MAX(CAST(JSON_VALUE(_source_data, '$.offset') AS INT64)), "
            "COUNTIF(JSON_VALUE(_source_data, '$.value.id') = JSON_VALUE(_source_data, '$.offset')) "
            f"FROM `{self.project}.{dataset}.{table}`")})
        if "error" in answer or not answer.get("rows"):
            return f"bigquery emulator: cannot count {dataset}.{table}: {str(answer)[:300]}"
        total, distinct, low, high, matching = (
            int(cell["v"]) if cell["v"] is not None else None for cell in answer["rows"][0]["f"])
        if (total, distinct, low, high, matching) != (n, n, 0, n - 1, n):
            return (f"{dataset}.{table}: {total} rows, {distinct} distinct ids, offsets "
                    f"{low}..{high}, {matching} with value.id = offset; expected {n}, 0..{n - 1}")
        self.call("DELETE", f"datasets/{dataset}/tables/{table}")  # Keeps the emulator small.
        return None

    def job_seconds(self, dataset: str, table: str) -> tuple[int, float]:
        """The jobs whose destination is `table` or `table`_temp (loads, copies, queries), and
        the sum of their durations (creation to end, from the jobs API), newest 1,000 jobs."""
        answer = self.call("GET", "jobs?projection=full&allUsers=true&maxResults=1000")
        count, seconds = 0, 0.0
        for job in answer.get("jobs", []):
            for kind in ("load", "copy", "query"):
                target = job.get("configuration", {}).get(kind, {}).get("destinationTable", {})
                if (target.get("datasetId") == dataset
                        and target.get("tableId") in (table, f"{table}_temp")):
                    statistics_ = job.get("statistics", {})
                    with contextlib.suppress(KeyError, ValueError):
                        seconds += (int(statistics_["endTime"])
                                    - int(statistics_["creationTime"])) / 1000
                        count += 1
        return count, seconds

    @contextlib.contextmanager
    def cpu(self, dataset: Optional[str] = None, table: Optional[str] = None) -> Iterator[dict]:
        """Yields a dict that holds, at exit, the CPU seconds each emulator process used, and
        (with a table) the count and total duration of the jobs that wrote it."""
        pids = {"bigquery": listening_pid(self.bigquery_url),
                "gcs": listening_pid(self.storage_url) if self.storage_url else None}
        before = {name: process_cpu_s(pid) for name, pid in pids.items() if pid}
        measured: dict = {}
        yield measured
        for name, start in before.items():
            with contextlib.suppress(OSError):
                measured[f"emulator_{name}_cpu_s"] = process_cpu_s(pids[name]) - start
        measured["emulator_cpu_s"] = sum(v for k, v in measured.items() if k.endswith("_cpu_s"))
        if dataset and table:
            measured["emulator_jobs"], measured["emulator_job_s"] = self.job_seconds(dataset, table)


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


# The columns of our postgres destination's published table (raw records, no unnest), in its
# order, with their types as format_type() spells them.
POSTGRES_COLUMNS = (("_bizon_id", "text"), ("_bizon_extracted_at", "timestamp with time zone"),
                    ("_bizon_loaded_at", "timestamp with time zone"), ("_source_record_id", "text"),
                    ("_source_timestamp", "timestamp with time zone"), ("_source_data", "jsonb"))
# The table dlt makes of the same records at its defaults (the postgres case's peer).
DLT_POSTGRES_COLUMNS = (("id", "bigint"), ("name", "character varying"),
                        ("updated_at", "timestamp with time zone"), ("value", "bigint"),
                        ("padding", "character varying"), ("_dlt_load_id", "character varying"),
                        ("_dlt_id", "character varying"))


@dataclass
class PostgresServer:
    """The server of the postgres case, named by BIZON_BENCH_POSTGRES as a libpq URI
    (postgresql://user:password@host:port/database), reached through psql."""

    url: str
    host: str
    port: int
    user: str
    password: str
    database: str
    psql_path: str

    @staticmethod
    def from_env() -> "PostgresServer | str":
        """The server, or why it cannot be used."""
        from urllib.parse import unquote, urlsplit
        url = os.environ.get("BIZON_BENCH_POSTGRES")
        if not url:
            return ("needs a PostgreSQL server: set BIZON_BENCH_POSTGRES to a libpq URI, "
                    "postgresql://user:password@host:port/database")
        parts = urlsplit(url)
        database = unquote(parts.path.lstrip("/"))
        if parts.scheme not in ("postgresql", "postgres") or not parts.username or not database:
            return ("BIZON_BENCH_POSTGRES is not a libpq URI with a user and a database "
                    "(postgresql://user:password@host:port/database)")
        psql = shutil.which("psql")
        if not psql:
            return ("psql is not installed (Debian's postgresql-client: "
                    "scripts/install-deps.sh --with-test-servers)")
        return PostgresServer(url, parts.hostname or "localhost", parts.port or 5432,
                              unquote(parts.username), unquote(parts.password or ""), database,
                              psql)

    def psql_argv(self, command: str, *options: str) -> list[str]:
        return [self.psql_path, "-X", "-q", "-v", "ON_ERROR_STOP=1", *options, "-d", self.url,
                "-c", command]

    def psql(self, sql: str) -> str:
        done = subprocess.run(self.psql_argv(sql, "-A", "-t"), capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=600)
        if done.returncode != 0:
            raise RunFailed(f"psql: {done.stderr.strip()[:300]} (SQL: {sql[:120]})")
        return done.stdout.strip()

    def connection_yaml(self, indent: str) -> str:
        """The connection settings of our postgres destination and backend, each line indented."""
        password = f"{indent}password: {json.dumps(self.password)}\n" if self.password else ""
        return (f"{indent}host: {self.host}\n{indent}port: {self.port}\n"
                f"{indent}database: {json.dumps(self.database)}\n"
                f"{indent}username: {json.dumps(self.user)}\n{password}")

    def destination_yaml(self, schema: str, table: str) -> str:
        """Our postgres destination's block, at its defaults, into `schema`.`table`."""
        return (f"  name: postgres\n  config:\n{self.connection_yaml('    ')}"
                f"    schema: {schema}\n    destination_id: {table}\n")

    def backend_yaml(self, schema: str) -> str:
        """The `engine.backend` block of our postgres backend, at its defaults, in `schema`."""
        return (f"    type: postgres\n    config:\n{self.connection_yaml('      ')}"
                f"      schema: {schema}\n")

    def row_count(self, schema: str, table: str) -> int:
        """The rows in `schema`.`table`; 0 while it does not exist."""
        try:
            return int(self.psql(f'SELECT count(*) FROM "{schema}"."{table}"'))
        except RunFailed as error:
            if "does not exist" in str(error):
                return 0
            raise

    def check_table(self, schema: str, table: str, n: int,
                    columns: tuple[tuple[str, str], ...] = POSTGRES_COLUMNS,
                    data: str = "_source_data",
                    record_id: str = "_source_record_id") -> Optional[str]:
        """The table has `columns` and holds N rows whose ids (`record_id`, an SQL expression) are
        exactly 0..N-1, with the generator's payloads (`data`, the jsonb expression of a row's
        payload); then drops it, whatever it held."""
        name = f'"{schema}"."{table}"'
        try:
            found = self.psql(
                "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' "
                f"ORDER BY attnum) FROM pg_attribute WHERE attrelid = '{name}'::regclass "
                "AND attnum > 0 AND NOT attisdropped")
            expected = ", ".join(f"{column} {kind}" for column, kind in columns)
            if found != expected:
                return f"{name} has the columns ({found}), expected ({expected})"
            counts = self.psql(
                f"SELECT count(*), count(DISTINCT {record_id}), "
                f"min(({record_id})::bigint), max(({record_id})::bigint), "
                f"count(*) FILTER (WHERE {data}->>'name' = 'record-' || {record_id}), "
                f"min(length({data}->>'padding')) FROM {name}")
            return table_counts_error(name, n, *(int(v) if v else None for v in counts.split("|")))
        except RunFailed as error:
            return str(error)
        finally:
            with contextlib.suppress(RunFailed):
                self.psql(f"DROP TABLE IF EXISTS {name}")


class MergeRuns:
    """The merge case's runs on one server: a fresh schema per run, the untimed seed the run
    merges into (checked, then VACUUM ANALYZE), the check of the merged table against the model
    (bench/cases/merge.py), and every schema dropped."""

    def __init__(self, server: PostgresServer, timeout_s: float):
        self.server = server
        self.timeout_s = timeout_s
        self.schemas: dict[str, str] = {}  # side key -> the schema of its current run
        self.oids: dict[str, str] = {}  # side key -> the oid of its seeded table
        self.made: list[str] = []  # every schema made (and dlt's staging ones), for cleanup
        self.runs = iter(range(1_000_000))

    def ours_yaml(self, load: merge_case.Load, strategy: str, schema: str) -> str:
        return merge_case.ours_yaml(load, strategy, self.server.connection_yaml("    "), schema,
                                    PAGE_SIZE, PAYLOAD_BYTES)

    def table(self, key: str) -> str:
        return f'"{self.schemas[key]}"."{merge_case.TABLE}"'

    def fresh_schema(self, key: str) -> str:
        schema = f"bizon_bench_{os.getpid()}_merge_{next(self.runs)}"
        self.schemas[key] = schema
        self.made += [schema, f"{schema}_staging"]
        self.server.psql(f'CREATE SCHEMA "{schema}"')
        return schema

    def seed(self, key: str, argv: Callable[[Path, str, merge_case.Load], list[str]],
             own_directory: bool) -> Callable[[Path, Invocation], None]:
        """The `before` of a side: a fresh schema, then the seed run (argv(directory, schema,
        load)) in the run's directory or, with own_directory, in its seed/ (a state of its own,
        so that the timed run is a first incremental run too)."""
        def before(directory: Path, inv: Invocation) -> None:
            schema = self.fresh_schema(key)
            load = merge_case.loads(inv.n)[0]
            where = directory / "seed" if own_directory else directory
            where.mkdir(exist_ok=True)
            log = where / "seed-log.txt"
            with open(log, "wb") as sink:
                try:
                    done = subprocess.run(argv(where, schema, load), cwd=where, stdout=sink,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          timeout=self.timeout_s)
                except subprocess.TimeoutExpired as error:
                    raise RunFailed(f"{key}: the seed run was killed after the timeout") from error
            if done.returncode != 0:
                raise RunFailed(f"{key}: seed run: exit {done.returncode}: {last_error(log)}")
            if error := self.check(self.table(key), (load,)):
                raise RunFailed(f"{key}: seed run: {error}")
            self.server.psql(f"VACUUM ANALYZE {self.table(key)}")  # The same start for all.
            self.oids[key] = self.oid(key)
        return before

    def oid(self, key: str) -> str:
        return self.server.psql(f"SELECT '{self.table(key)}'::regclass::oid")

    def check(self, table: str, runs: tuple[merge_case.Load, ...]) -> Optional[str]:
        """`table` against the model of `runs` merged in turn: an error, or None."""
        try:
            found = self.server.psql(merge_case.check_sql(table, runs[-1], PAYLOAD_BYTES))
        except RunFailed as error:
            return str(error)
        return merge_case.table_error(table, found, merge_case.expected(runs, PAYLOAD_BYTES))

    def verify(self, key: str) -> Callable[[Path, Invocation], Optional[str]]:
        """The `verify` of a side: the seeded table, merged into (the same oid), equals the
        model of the seed and the timed run; then the run's schemas are dropped."""
        def verify(_: Path, inv: Invocation) -> Optional[str]:
            try:
                if self.oid(key) != self.oids[key]:
                    return (f"{self.table(key)} is a new table since the seed: it was replaced, "
                            "not merged into")
                return self.check(self.table(key), merge_case.loads(inv.n))
            except RunFailed as error:
                return str(error)
            finally:
                self.drop([self.schemas[key], f"{self.schemas[key]}_staging"])
        return verify

    def drop(self, schemas: list[str]) -> None:
        if schemas:
            with contextlib.suppress(RunFailed):
                self.server.psql("; ".join(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'
                                           for schema in schemas))

    @contextlib.contextmanager
    def cleanup(self) -> Iterator[None]:
        """Drops, at exit, every schema made meanwhile (those of failed runs)."""
        try:
            yield
        finally:
            self.drop(self.made)
            self.made.clear()


def write_copy_rows(path: Path, n: int) -> None:
    """The rows our postgres destination writes for the generator's records 0..N-1, in COPY's
    text format, in POSTGRES_COLUMNS order: a new uuid, the time now for the three timestamps,
    the id, the payload (escaped as COPY text; the generator's payloads need no escape)."""
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f+00")
    escapes = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
    with open(path, "w") as out:
        for i in range(n):
            out.write(f"{uuid.uuid4()}\t{now}\t{now}\t{i}\t{now}\t"
                      f"{generator_payload(i).translate(escapes)}\n")


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


def kafka_setup(broker: str, n: int, partitions: int = 1) -> str:
    """Creates (once) a topic of `partitions` partitions holding n JSON records of ~300 B and
    returns its name.

    Record i is the generator record i (the same payload as every other case), key {"id": i},
    in partition i % partitions. An existing topic of that name with exactly n messages from
    offset 0 is reused as is.
    """
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"bizon-bench-{n}-{PAYLOAD_BYTES}" + (f"-{partitions}p" if partitions > 1 else "")
    admin = AdminClient({"bootstrap.servers": broker})
    metadata = admin.list_topics(timeout=10)
    if topic in metadata.topics:
        consumer = Consumer({"bootstrap.servers": broker, "group.id": "bizon-bench-setup"})
        marks = [consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
                 for partition in metadata.topics[topic].partitions]
        consumer.close()
        if (len(marks) == partitions and all(low == 0 for low, _ in marks)
                and sum(high for _, high in marks) == n):
            return topic
        for future in admin.delete_topics([topic]).values():
            future.result()
        time.sleep(2)
    for future in admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                                replication_factor=1)]).values():
        future.result()
    print(f"  kafka: loading {n:,} records into {topic} on {broker}", flush=True)
    producer = Producer({"bootstrap.servers": broker, "linger.ms": 50, "batch.size": 1 << 20,
                         "compression.type": "lz4", "enable.idempotence": True})
    for i in range(n):
        value = generator_payload(i)
        while True:
            try:
                producer.produce(topic, value=value.encode(), key=json.dumps({"id": i}).encode(),
                                 partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.1)
        if i % 10000 == 0:
            producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError(f"kafka: {topic}: some records were not delivered")
    return topic


# --------------------------------------------------------------------------------------------
# Statistics and reports


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


# The members case's table: N over the time to N rows, and per member; CPU summed over the
# member processes, the peak RSS of the largest.
MEMBER_METRICS = [
    ("records_per_s", "records/s", "{:,.0f}", "higher"),
    ("records_per_s_member", "records/s per member", "{:,.0f}", "higher"),
    ("cpu_s_per_m", "CPU s / M records, all members", "{:,.1f}", "lower"),
    ("rss_mib", "peak RSS MiB, largest member", "{:,.0f}", "lower"),
    ("wall_s", "s to N rows", "{:,.2f}", "lower"),
]

# The merge case's table: no first record (it writes no file).
MERGE_METRICS = [m for m in METRICS if m[0] != "first_record_s"]

SIDES = ("ours", "original", "limit", "peer")
# Ratio rows, per alternated pair: (name, numerator side, denominator side); by default ours over
# each other side.
RATIOS = (("ratio", "ours", "original"), ("ratio_limit", "ours", "limit"),
          ("ratio_peer", "ours", "peer"))
# The members case: its sides (Invocation.side) as its table shows them, and its ratio row.
MEMBER_SIDES = {"ours_x1": "ours ×1", "ours_x2": "ours ×2"}
MEMBER_RATIOS = (("ratio_members", "ours_x2", "ours_x1"),)


def summarize(runs: list[dict], ratios: tuple[tuple[str, str, str], ...] = RATIOS) -> dict:
    """runs: [{"ours": {...}, "original": {...}, "limit": {...}}] in pair order, keyed by side; a
    side of SIDES that did not run is absent from every pair (its spreads are then None)."""
    sides = [*SIDES, *sorted({side for pair in runs for side in pair} - set(SIDES))]
    out: dict = {name: {} for name in (*sides, *(r for r, _, _ in ratios))}
    for key in dict.fromkeys(k for k, *_ in METRICS + MEMBER_METRICS + [("background_cores",)]):
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


def markdown(report: dict) -> str:
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
        # members and merge: tables of their own, below.
        for tier in [] if case["name"] in ("members", "merge") else case["tiers"]:
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
    memory = [c for c in report["cases"] if c["name"] == "memory" and c["status"] == "ok"]
    if memory:
        lines += ["", "Memory: peak RSS as N grows (default queue settings), median [min–max] MiB:",
                  "", "| N | ours | original | ours/original |", "|---:|---:|---:|---:|"]
        for tier in memory[0]["tiers"]:
            s = tier["summary"]
            cells = [f"{fmt(s[i]['rss_mib']['median'], '{:,.0f}')} "
                     f"[{fmt(s[i]['rss_mib']['min'], '{:,.0f}')}–"
                     f"{fmt(s[i]['rss_mib']['max'], '{:,.0f}')}]" for i in ("ours", "original")]
            lines.append(f"| {tier['n']:,} | {cells[0]} | {cells[1]} | "
                         f"{ratio_text(s['ratio']['rss_mib'])} |")
    members = [c for c in report["cases"] if c["name"] == "members" and c["status"] == "ok"]
    if members:
        lines += ["", "Members: one kafka stream pipeline run as 1 and 2 processes, members of one "
                      "consumer group, into the postgres destination, medians; records/s is N over "
                      "the time from the first start to N rows in the table (counted every "
                      f"{MEMBERS_POLL_S:g} s), CPU is summed over the processes; the ratio row is "
                      "×2/×1 per pair, as min – **median** – max:", "",
                  "| N | side | " + " | ".join(m[1] for m in MEMBER_METRICS) + " |",
                  "|---:|---|" + "---:|" * len(MEMBER_METRICS)]
        for tier in members[0]["tiers"]:
            s = tier["summary"]
            for i, (side, shown) in enumerate(MEMBER_SIDES.items()):
                lines.append((f"| {tier['n']:,} |" if i == 0 else "| |") + f" {shown} | "
                             + " | ".join(fmt(s[side][k]["median"], f)
                                          for k, _, f, _ in MEMBER_METRICS) + " |")
            lines.append("| | ×2/×1 | " + " | ".join(
                ratio_text(s["ratio_members"][k]) for k, *_ in MEMBER_METRICS) + " |")
    lines += merge_lines(report)
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


def merge_lines(report: dict) -> list[str]:
    """The merge case's table in results.md (none when it was not measured)."""
    merges = [c for c in report["cases"] if c["name"] == "merge" and c["status"] == "ok"]
    if not merges:
        return []
    lines = ["", "Merge: a timed merge into a seeded table, each strategy on each side, medians "
                 "(CPU and peak RSS of the tool's process; the server's in neither); the ratio "
                 "rows are ours/dlt per pair and strategy, as min – **median** – max:", "",
             "| N | side | " + " | ".join(m[1] for m in MERGE_METRICS) + " |",
             "|---:|---|" + "---:|" * len(MERGE_METRICS)]
    for tier in merges[0]["tiers"]:
        lines += merge_case.table_rows(tier["summary"], tier["n"], merges[0]["peer_name"],
                                       MERGE_METRICS, fmt, ratio_text)
    return lines


def plot(report: dict, path: Path) -> Optional[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no plot"
    bars = [(c["name"] + ("" if c["same_yaml"] else "†") + f"\nN={t['n']:,}", t["summary"])
            for c in report["cases"]
            if c["status"] == "ok" and c["name"] not in ("members", "merge") for t in c["tiers"]]
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


# --------------------------------------------------------------------------------------------
# Main


def run_case(harness: Harness, name: str, args: argparse.Namespace) -> dict:
    print(f"\n== {name}", flush=True)
    plan = harness.plan(name)
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ours", default=str(ROOT / "build" / "release" / "bizon"))
    parser.add_argument("--original", default=str(BENCH / ".venv" / "bin" / "bizon"))
    parser.add_argument("--dlt-python", default=str(BENCH / ".venv-dlt" / "bin" / "python"),
                        help="the interpreter with dlt installed (bench/run.sh makes it)")
    parser.add_argument("--runs", type=int, default=5, help="runs per side per case (default 5)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help=f"multiplies N (default 1: {BASE_N:,} records, memory "
                             f"{MEMORY_BASE_N:,} x1 x10 x100, kafka {KAFKA_N:,}, postgres "
                             f"{POSTGRES_N:,}, merge {merge_case.MERGE_N:,}, members "
                             f"{MEMBERS_N:,})")
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
        if name == "generator" and not explicit and harness.probe_custom_source() is None:
            report["cases"].append({"name": name, "status": "skipped", "reason":
                                    "interim case; python-source now runs on both"})
            continue
        report["cases"].append(run_case(harness, name, args))
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
    table = markdown(report)
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
