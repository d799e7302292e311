"""What a run leaves behind, read back: the `--result-json` file, the file destination's rows, and
the sqlite backend's state, read straight from the file so tests check what bizon persisted, not
only what it printed."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

STATUS_TEXT = "Error: Pipeline finished with status Failure (Producer: {}, Consumer: {})"

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
    """The `--result-json` file at `path`, checked for one failure class."""
    outcome = json.loads(path.read_text())
    check_one_failure_class(outcome)
    return outcome


def line_count(path: Path) -> int:
    if not path.exists():
        return 0
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


def ids_in(rows: list[dict]) -> list[int]:
    """The generator record ids of file-destination rows, in file order."""
    return [int(row["source_record_id"]) for row in rows]


def source_data(rows: list[dict]) -> list[dict]:
    """The records' payloads (the rows' `source_data`), parsed."""
    return [json.loads(row["source_data"]) for row in rows]


def parse_sql_time(text: str) -> datetime:
    """A backend timestamp ('2026-10-08 09:46:55.094362', UTC without zone)."""
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


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
