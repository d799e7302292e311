"""One run of one side of a case, and its measurements.

Each run goes through bench/spawn.c, a small launcher that forks the run and reads wait4() (wall
time, CPU of the process and its reaped children, peak RSS): a process forked from the harness
itself would inherit the harness's resident set as its peak. run_once runs one process and
polls for its first record; run_members runs several processes of one stream pipeline until the
destination holds N rows.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from harness import BENCH
from harness.verify import verify_output

CLK_TCK = os.sysconf("SC_CLK_TCK")


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

