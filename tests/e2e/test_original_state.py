"""State shared with the original bizon (PyPI bizon==0.6.4, in build/original-venv, made by
scripts/python-env.sh): the same YAML run alternately by the original and by ours, on one
backend (a sqlite file, and the PostgreSQL test server), continues where the other left off.
Every output file is checked record id by record id: none lost, none repeated.

The source is a custom one in the original's API (LEDGER_SOURCE below), reading a JSON-lines
ledger the test appends to between runs. On PostgreSQL the connection's search path is a schema
of the test's own (PGOPTIONS, read by libpq under both psycopg2 and ours), since the original
keeps its tables there and not in the configured `schema`."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from conftest_postgres import Postgres, postgres  # noqa: F401 (fixture)
from support.paths import ROOT
from support.processes import wait_for
from support.python import needs_custom_source
from support.servers import skip_or_fail

ORIGINAL = ROOT / "build" / "original-venv" / "bin" / "bizon"

pytestmark = [needs_custom_source]


@pytest.fixture(autouse=True)
def original_installed():
    """The original bizon runs every test here: without it they skip, or fail under CI, where
    scripts/test.sh has installed it."""
    if not ORIGINAL.exists():
        skip_or_fail(f"the original bizon is not installed at {ORIGINAL}: run scripts/python-env.sh")

LEDGER_SOURCE = '''
"""Records from a JSON-lines ledger. Incremental: get_records_after() keeps the entries whose
updated_at is in (last_run, run_started_at] and passes the previous run's state on in each record.
Stream: the position is the source's own, in an offset file commit() writes (as a Kafka consumer
group keeps its offsets); the pagination is ignored, since the original's stream runner passes none."""

import json
import os
import time
from datetime import datetime
from typing import List, Tuple

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIncrementalState, SourceIteration, SourceRecord
from bizon.source.source import AbstractSource


class LedgerConfig(SourceConfig):
    ledger: str
    page_size: int = 2
    sleep: float = 0.0
    # The original's stream runner writes each record to its destination_id (None.json without).
    route: str = ""


class LedgerSource(AbstractSource):
    def __init__(self, config: LedgerConfig):
        super().__init__(config)
        self.config: LedgerConfig = config
        self.position = None

    @staticmethod
    def streams() -> List[str]:
        return ["entries"]

    @staticmethod
    def get_config_class():
        return LedgerConfig

    def get_authenticator(self):
        return None

    def check_connection(self) -> Tuple[bool, str]:
        return True, None

    def get_total_records_count(self):
        return None

    def _entries(self):
        with open(self.config.ledger) as ledger:
            return [json.loads(line) for line in ledger if line.strip()]

    def _records(self, entries, previous_state=None):
        return [
            SourceRecord(
                id=str(entry["id"]),
                data={**entry, "previous_state": previous_state},
                destination_id=self.config.route or None,
            )
            for entry in entries
        ]

    def _page(self, entries, pagination, previous_state=None):
        if self.config.sleep:
            time.sleep(self.config.sleep)
        start = (pagination or {}).get("start", 0)
        page = entries[start : start + self.config.page_size]
        done = start + self.config.page_size >= len(entries)
        return SourceIteration(
            next_pagination={} if done else {"start": start + self.config.page_size},
            records=self._records(page, previous_state),
            next_state={"seen": len(entries)} if done else None,
        )

    def get(self, pagination: dict = None) -> SourceIteration:
        if self.config.sync_mode == "stream":
            return self._stream_page()
        return self._page(self._entries(), pagination)

    def get_records_after(self, source_state: SourceIncrementalState, pagination: dict = None) -> SourceIteration:
        newer = [
            entry
            for entry in self._entries()
            if source_state.last_run < datetime.fromisoformat(entry["updated_at"]) <= source_state.run_started_at
        ]
        return self._page(newer, pagination, source_state.state)

    def _offset_file(self):
        return self.config.ledger + ".offset"

    def _stream_page(self) -> SourceIteration:
        if self.position is None:
            try:
                with open(self._offset_file()) as committed:
                    self.position = int(committed.read())
            except FileNotFoundError:
                self.position = 0
        if self.config.sleep:
            time.sleep(self.config.sleep)
        page = self._entries()[self.position : self.position + self.config.page_size]
        self.position += len(page)
        return SourceIteration(next_pagination={"offset": self.position}, records=self._records(page))

    def commit(self):
        with open(self._offset_file() + ".tmp", "w") as offset:
            offset.write(str(self.position))
        os.replace(self._offset_file() + ".tmp", self._offset_file())
'''


class Store:
    """The backend both implementations share, and how to read it."""

    def __init__(self, block: dict, env: dict, jobs, cursors, layout=lambda: None):
        self.block = block
        self.env = env
        self.jobs = jobs  # () -> [{"id", "status", "sync_mode"}] in creation order.
        self.cursors = cursors  # (job id) -> its number of destination cursors.
        # PostgreSQL: (kind of stream_jobs in the search path, is it in the configured schema).
        self.layout = layout


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, bizon):
    if request.param == "sqlite":
        # The original opens `<database>.sqlite3` whatever the name ends with.
        path = bizon.cwd / "state.db.sqlite3"

        def sqlite_jobs():
            with sqlite3.connect(path) as db:
                db.row_factory = sqlite3.Row
                return [dict(row) for row in db.execute(
                    "SELECT id, status, sync_mode FROM stream_jobs ORDER BY created_at, rowid")]

        def sqlite_cursors(job_id):
            with sqlite3.connect(path) as db:
                return db.execute("SELECT count(*) FROM destination_cursors WHERE job_id = ?",
                                  (job_id,)).fetchone()[0]

        yield Store({"type": "sqlite", "config": {"database": "state.db", "schema": "public"}}, {},
                    sqlite_jobs, sqlite_cursors)
        assert path.exists() and not (bizon.cwd / "state.db").exists()
        return
    server = request.getfixturevalue("postgres")
    pg = Postgres(server, uuid.uuid4().hex[:10])
    search_path = f"bizon_orig_{uuid.uuid4().hex[:10]}"
    # The original refuses a configured schema that does not exist; its tables go to the path.
    pg.execute(f'CREATE SCHEMA "{search_path}"; CREATE SCHEMA "{pg.backend_schema}"')
    block = pg.backend()

    def pg_jobs():
        # Through the search path: the original's tables, or the views of ours.
        return pg.query(f'SELECT id, status, sync_mode FROM "{search_path}".stream_jobs'
                        " ORDER BY created_at")

    def pg_cursors(job_id):
        return pg.scalar(f'SELECT count(*) AS n FROM "{search_path}".destination_cursors'
                         f" WHERE job_id = '{job_id}'")

    def pg_layout():
        kind = pg.scalar("SELECT c.relkind::text AS k FROM pg_class c JOIN pg_namespace n ON"
                         f" n.oid = c.relnamespace WHERE n.nspname = '{search_path}'"
                         " AND c.relname = 'stream_jobs'")
        return {"r": "table", "v": "view"}.get(kind, kind), pg.table_exists("stream_jobs", pg.backend_schema)

    try:
        yield Store(block, {"PGOPTIONS": f"-c search_path={search_path}"}, pg_jobs, pg_cursors,
                    pg_layout)
    finally:
        pg.psql(f'DROP SCHEMA IF EXISTS "{search_path}" CASCADE', check=False)
        pg.drop_schemas()


class Ledger:
    def __init__(self, path: Path):
        self.path = path
        path.write_text("")

    def add(self, *ids: int, updated_at: str | None = None) -> None:
        with self.path.open("a") as ledger:
            for record_id in ids:
                moment = updated_at or datetime.now(timezone.utc).isoformat()
                ledger.write(json.dumps({"id": record_id, "updated_at": moment}) + "\n")


def write_pipeline(bizon, store: Store, name: str, sync_mode: str, destination: dict | None = None,
                   **source) -> Path:
    source_path = bizon.cwd / "ledger_source.py"
    source_path.write_text(LEDGER_SOURCE)
    config = {
        "name": name,
        "source": {"name": "ledger", "stream": "entries", "sync_mode": sync_mode,
                   "source_file_path": str(source_path), "ledger": str(bizon.cwd / "ledger.jsonl"),
                   **source},
        "destination": {"name": "file", "config": {"destination_id": "out", **(destination or {})}},
        "engine": {"backend": store.block},
    }
    if sync_mode == "incremental":
        config["source"]["cursor_field"] = "updated_at"
    else:
        config["engine"]["runner"] = {"type": "stream"}
    return bizon.write(f"{name}.yml", yaml.safe_dump(config, sort_keys=False))


def original_command(config: Path, sync_mode: str) -> list[str]:
    # The original's --runner default (thread) overrides engine.runner.type: name it.
    return [str(ORIGINAL), "run", str(config), *(["--runner", "stream"] if sync_mode == "stream" else [])]


def original_env(store: Store) -> dict:
    # Its stream runner commits the source only in "production".
    return {**os.environ, **store.env, "ENVIRONMENT": "production"}


def run(bizon, store: Store, who: str, config: Path, sync_mode: str) -> None:
    if who == "ours":
        bizon.run("run", config, env=store.env, check=0, timeout=180)
        return
    result = subprocess.run(original_command(config, sync_mode), cwd=bizon.cwd, env=original_env(store),
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, f"the original failed:\n{result.stdout}\n{result.stderr}"


def output(bizon) -> list[tuple[int, dict | None]]:
    """(record id, the previous run's state the source saw) of every line of out.json."""
    rows = bizon.read_ndjson("out.json")
    return [(int(row["source_record_id"]), json.loads(row["source_data"])["previous_state"]) for row in rows]


OTHER = {"original": "ours", "ours": "original"}


@pytest.mark.parametrize("first", ["original", "ours"])
def test_incremental_runs_alternate_between_the_two(bizon, store, first):
    ledger = Ledger(bizon.cwd / "ledger.jsonl")
    ledger.add(1, 2, 3, updated_at="2024-01-01T00:00:00+00:00")
    config = write_pipeline(bizon, store, "swap_incremental", "incremental")
    order = [first, OTHER[first], first]

    run(bizon, store, order[0], config, "incremental")  # First run: everything, by get().
    ledger.add(4, 5)
    run(bizon, store, order[1], config, "incremental")  # Window after the other's run.
    ledger.add(6)
    run(bizon, store, order[2], config, "incremental")

    # Each window read only the newer entries, and received the state the other stored.
    assert output(bizon) == [(1, None), (2, None), (3, None), (4, {"seen": 3}), (5, {"seen": 3}),
                             (6, {"seen": 2})]
    assert not (bizon.cwd / "out_incremental.json").exists()
    assert [job["status"] for job in store.jobs()] == ["succeeded"] * 3
    if store.layout() is not None:
        # The original first: its tables in the search path stay the store. Ours first: ours in
        # the configured schema, which the original used through views in its search path.
        assert store.layout() == (("table", False) if first == "original" else ("view", True))


@pytest.mark.parametrize("flushed", [False, True], ids=["nothing-flushed", "pages-flushed"])
def test_original_killed_mid_run_is_continued_by_ours(bizon, store, flushed):
    ledger = Ledger(bizon.cwd / "ledger.jsonl")
    ledger.add(1, 2, 3, updated_at="2024-01-01T00:00:00+00:00")
    config = write_pipeline(bizon, store, "swap_killed", "incremental")
    run(bizon, store, "original", config, "incremental")
    ledger.add(4, 5, 6, 7, 8, 9)

    # A slow source: the original is killed while its job is running, before it published. With
    # buffer_size 0 it flushed pages to its staging file (and cursors) first.
    slow = write_pipeline(bizon, store, "swap_killed", "incremental", sleep=1.0,
                          destination={"buffer_size": 0} if flushed else None)
    process = subprocess.Popen(original_command(slow, "incremental"), cwd=bizon.cwd,
                               env=original_env(store), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        jobs = wait_for(lambda: [job for job in store.jobs() if job["status"] == "running"],
                        timeout=60, what="the original's second job running")
        if flushed:
            wait_for(lambda: store.cursors(jobs[0]["id"]) >= 2, timeout=60,
                     what="two flushed pages of the original")
    finally:
        process.kill()
        process.wait(timeout=30)
    killed = jobs[0]["id"]
    assert (bizon.cwd / "out_incremental.json").exists() == flushed

    run(bizon, store, "ours", config, "incremental")
    assert output(bizon) == [(1, None), (2, None), (3, None)] + [(n, {"seen": 3}) for n in range(4, 10)]
    assert not (bizon.cwd / "out_incremental.json").exists()
    statuses = [(job["id"] == killed, job["status"]) for job in store.jobs()[1:]]
    if flushed:
        # What the original staged cannot be checked: a new job reads the window into fresh staging.
        assert statuses == [(True, "cancelled"), (False, "succeeded")]
    else:
        # Nothing written yet: ours resumed the original's job (its window).
        assert statuses == [(True, "succeeded")]


@pytest.mark.parametrize("first", ["original", "ours"])
def test_stream_runs_alternate_between_the_two(bizon, store, first):
    ledger = Ledger(bizon.cwd / "ledger.jsonl")
    ledger.add(1, 2, 3, 4, 5)
    # Iterations 0..2 a run: at most 6 records, then the run ends.
    config = write_pipeline(bizon, store, "swap_stream", "stream", max_iterations=2, route="out")
    order = [first, OTHER[first], first, OTHER[first]]

    run(bizon, store, order[0], config, "stream")
    ledger.add(6, 7, 8)
    run(bizon, store, order[1], config, "stream")
    ledger.add(9)
    run(bizon, store, order[2], config, "stream")
    ledger.add(10, 11)
    run(bizon, store, order[3], config, "stream")

    assert [record_id for record_id, _ in output(bizon)] == list(range(1, 12))
    # One stream job stays open; ours replaces one the original wrote to last (see job.cc).
    assert [job["status"] for job in store.jobs()].count("running") == 1
    assert {job["sync_mode"] for job in store.jobs()} == {"stream"}
