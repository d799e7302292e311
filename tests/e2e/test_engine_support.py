"""Helpers shared by the engine end-to-end tests (test_engine_*.py, test_kill_resume.py).

It holds no tests. Pipelines are built as Python dicts and written as YAML; the backend's state is
read straight from the sqlite file the run leaves in the test's working directory, so tests check
what bizon persisted, not only what it printed.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import yaml

DUMMY_AUTH = {"type": "api_key", "params": {"token": "dummy_key"}}
CREATURES = [
    {"id": 9898, "name": "bizon", "age": 26},
    {"id": 88787, "name": "croco", "age": 23},
    {"id": 98, "name": "froggy", "age": 26},
    {"id": 3333, "name": "turtle", "age": 23},
    {"id": 56565, "name": "poulpo", "age": 26},
]
RECORD_FIELDS = [
    "bizon_id",
    "bizon_extracted_at",
    "bizon_loaded_at",
    "source_record_id",
    "source_timestamp",
    "source_data",
]
STATUS_TEXT = "Error: Pipeline finished with status Failure (Producer: {}, Consumer: {})"


def generator(sync_mode="full_refresh", stream="records", **options) -> dict:
    """A generator source block; options are the generator's (count, page_size, sleep, ...)."""
    source = {"name": "generator", "stream": stream, "sync_mode": sync_mode}
    if sync_mode == "incremental":
        source["cursor_field"] = "updated_at"
    source.update(options)
    return source


def dummy(stream="creatures", **options) -> dict:
    return {"name": "dummy", "stream": stream, "authentication": DUMMY_AUTH, **options}


def file_destination(destination_id="out", **options) -> dict:
    return {"name": "file", "config": {"destination_id": destination_id, **options}}


def pipeline(name: str, source: dict, destination: dict | None = None, **root) -> str:
    """YAML text of a pipeline; `root` adds top-level keys such as engine=."""
    config = {"name": name, "source": source, "destination": destination or file_destination()}
    config.update(root)
    return yaml.safe_dump(config, sort_keys=False)


def runner(kind: str) -> dict:
    return {"runner": {"type": kind}}


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_sql_time(text: str) -> datetime:
    """A backend timestamp ('2026-10-08 09:46:55.094362', UTC without zone)."""
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def ids_in(rows: list[dict]) -> list[int]:
    """The generator record ids of file-destination rows, in file order."""
    return [int(row["source_record_id"]) for row in rows]


def payloads(rows: list[dict]) -> list[dict]:
    return [json.loads(row["source_data"]) for row in rows]


ERROR_TYPES = {
    "config": "ConfigError",
    "source": "SourceError",
    "destination": "DestinationError",
    "backend": "BackendError",
    "queue": "QueueError",
    "transform": "TransformError",
    "stream": "StreamError",
    "killed": "Killed",
    "unknown": "Error",
}


def check_one_failure_class(outcome: dict) -> None:
    """A failed run has one failure class: its error text starts with that class's error type."""
    failure_class, error = outcome.get("failure_class"), outcome.get("error")
    if failure_class and error:
        assert error.startswith(ERROR_TYPES[failure_class] + ": "), outcome


def read_result(path: Path) -> dict:
    outcome = json.loads(path.read_text())
    check_one_failure_class(outcome)
    return outcome


def line_count(path: Path) -> int:
    if not path.exists():
        return 0
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


class State:
    """Read-only view of the run's sqlite backend (./bizon.sqlite3 unless told otherwise)."""

    def __init__(self, cwd: Path, database: str = "bizon.sqlite3"):
        self.path = cwd / database

    def _query(self, sql: str, *params) -> list[dict]:
        if not self.path.exists():
            return []
        connection = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30)
        connection.row_factory = sqlite3.Row
        try:
            return [dict(row) for row in connection.execute(sql, params).fetchall()]
        finally:
            connection.close()

    def execute(self, sql: str, *params) -> None:
        """A write, for tests that stage a state the engine must cope with."""
        connection = sqlite3.connect(self.path, timeout=30)
        try:
            connection.execute(sql, params)
            connection.commit()
        finally:
            connection.close()

    def jobs(self) -> list[dict]:
        return self._query("SELECT * FROM stream_jobs ORDER BY created_at")

    def job(self, job_id: str) -> dict:
        rows = self._query("SELECT * FROM stream_jobs WHERE id = ?", job_id)
        assert rows, f"no job {job_id}"
        return rows[0]

    def destination_cursors(self, job_id: str) -> list[dict]:
        return self._query(
            "SELECT * FROM destination_cursors WHERE job_id = ? ORDER BY to_source_iteration",
            job_id,
        )

    def resets(self) -> list[dict]:
        return self._query("SELECT * FROM stream_resets ORDER BY requested_at")


def spawn(bizon, *args, env=None) -> subprocess.Popen:
    """Starts bizon without waiting, for tests that watch or kill a run."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.Popen(
        [str(bizon.binary), *map(str, args)],
        cwd=bizon.cwd,
        env=full_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def kill(process: subprocess.Popen) -> None:
    """SIGKILL: no destructor, no error path runs, as with an OOM kill or a pod deadline."""
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)


def wait_for(predicate, timeout: float = 60, interval: float = 0.02, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


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


def window_start_for(first_new_index: int, after: datetime, interval_ms: int = 1) -> str:
    """A generator `start` that puts records [0, first_new_index) at or before `after` and the
    following ones after it: record i has updated_at = start + i * interval_ms."""
    start = after - timedelta(milliseconds=interval_ms * (first_new_index - 0.5))
    return iso(start)
