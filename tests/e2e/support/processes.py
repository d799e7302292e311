"""Runs a test watches, stops or kills: start bizon without waiting, SIGTERM or SIGKILL it, wait for
a visible effect, and restart a killed run until it completes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path


def spawn(bizon, *args, env=None, log: Path | None = None, cwd: Path | None = None
          ) -> subprocess.Popen:
    """Starts bizon without waiting, in `cwd` (default: the test's directory). Its stderr goes
    to a pipe, or is appended to `log` when given, for a run that logs more than a pipe nobody
    reads can hold."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    command = [str(bizon.binary), *map(str, args)]
    if log is None:
        return subprocess.Popen(command, cwd=cwd or bizon.cwd, env=full_env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with log.open("a") as sink:
        return subprocess.Popen(command, cwd=cwd or bizon.cwd, env=full_env,
                                stdout=subprocess.DEVNULL, stderr=sink, text=True)


def kill(process: subprocess.Popen) -> str:
    """SIGKILL: no destructor, no error path runs, as with an OOM kill or a pod deadline.
    Returns what the run wrote to its stderr pipe (empty when it logs to a file)."""
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
    _, stderr = process.communicate(timeout=30)
    return stderr or ""


def stop(process: subprocess.Popen, timeout: float = 60) -> str:
    """SIGTERM, then the run must end by itself, successfully. Returns its stderr."""
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=timeout)
    assert process.returncode == 0, f"exit {process.returncode}\n{stderr}"
    return stderr


def wait_for(predicate, timeout: float = 60, interval: float = 0.02, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def wait_for_run(process: subprocess.Popen, log: Path, predicate, timeout: float = 60,
                 interval: float = 0.02, what: str = "condition"):
    """wait_for on a run spawned with `log`: on a timeout the assertion carries the end of the
    run's log, so a failure that happens once in many runs can be read from the report."""
    try:
        return wait_for(predicate, timeout=timeout, interval=interval, what=what)
    except AssertionError as error:
        text = log.read_text(errors="replace") if log.exists() else "(no log)"
        raise AssertionError(f"{error}\n--- the run's log, last lines ---\n{text[-4000:]}") from None


def killed_after(process: subprocess.Popen, rng, delays) -> bool:
    """Waits a random delay in `delays`, then SIGKILLs the run if it still goes. True when the
    kill landed; False when the run had ended by itself (its output is left to read)."""
    try:
        process.wait(timeout=rng.uniform(*delays))
    except subprocess.TimeoutExpired:
        kill(process)
        return True
    return False


# Logged by the consumer once its job is complete (engine/progress.cc); a kill after it lands in
# the process's exit, and the run is complete.
_JOB_COMPLETE = re.compile(r"\| Finished \S+: wrote \d+ records")


def run_until_complete(bizon, config, rng, kills, delays=(0.1, 0.6), after_kill=None) -> int:
    """Starts `bizon run` again and again, killing the first `kills` attempts after a random
    delay, until one completes. Returns the number of kills that landed before the run's job was
    complete (a kill in the exit of a run that had completed its job ends the loop too: running
    it again would start a new job, which no user would do)."""
    landed = 0
    for _ in range(kills * 4 + 20):
        process = spawn(bizon, "run", config)
        if landed < kills:
            try:
                process.wait(timeout=rng.uniform(*delays))
            except subprocess.TimeoutExpired:
                if _JOB_COMPLETE.search(kill(process)):
                    return landed
                landed += 1
                if after_kill:
                    after_kill()
                continue
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, f"exit {process.returncode}\n{stderr}"
        return landed
    raise AssertionError("the pipeline never completed")


def children_of(pid: int) -> list[int]:
    """Live processes whose parent is `pid` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the command name, which is in parentheses and may hold spaces.
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] != "Z"
