"""Fixtures and helpers for the PostgreSQL end-to-end tests (test_postgres_*.py).

The server is the one `scripts/test-servers.sh start postgres` runs on loopback; its settings
come from BIZON_PG_HOST, BIZON_PG_PORT, BIZON_PG_USER, BIZON_PG_PASSWORD and BIZON_PG_DATABASE.
When they are not set, the `postgres` fixture starts the server itself (the same script), so
`pytest tests/e2e` works on its own; it skips only where PostgreSQL is not installed at all.

The tests read what bizon stored through `psql` (the client of the same Debian package), so they
need no Python driver. Each test gets its own backend and destination schemas, dropped after.

Test modules import the fixtures from here (`from conftest_postgres import postgres, pg`);
listing this module in conftest.py's `pytest_plugins` would register them for every module.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.pipelines import pipeline
from support.servers import run_servers, skip_or_fail

ENV_NAMES = ("BIZON_PG_HOST", "BIZON_PG_PORT", "BIZON_PG_USER", "BIZON_PG_PASSWORD",
             "BIZON_PG_DATABASE")


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    user: str
    password: str
    database: str


def _psql() -> str | None:
    found = shutil.which("psql")
    if found:
        return found
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin/psql"), reverse=True):
        return str(candidate)
    return None


def _server_from_env(env) -> Server | None:
    if not all(env.get(name) for name in ENV_NAMES):
        return None
    return Server(env["BIZON_PG_HOST"], int(env["BIZON_PG_PORT"]), env["BIZON_PG_USER"],
                  env["BIZON_PG_PASSWORD"], env["BIZON_PG_DATABASE"])


@pytest.fixture(scope="session")
def postgres() -> Server:
    """The test server, started here when the environment names none."""
    server = _server_from_env(os.environ)
    if server is not None:
        return server
    if _psql() is None or not list(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")):
        skip_or_fail("PostgreSQL is not installed (apt-get install postgresql); "
                    "scripts/install-deps.sh --with-test-servers installs it")
    env = run_servers("start", "postgres", timeout=180)
    server = _server_from_env(env)
    if server is None:
        pytest.fail(f"scripts/test-servers.sh printed no connection settings: {env}")
    os.environ.update(env)  # For the bizon processes the tests start.
    return server


class Postgres:
    """SQL against the test server through psql, plus this test's schema names."""

    def __init__(self, server: Server, tag: str):
        self.server = server
        self.backend_schema = f"bizon_state_{tag}"
        self.destination_schema = f"bizon_dest_{tag}"

    def _env(self):
        env = dict(os.environ)
        env["PGPASSWORD"] = self.server.password
        return env

    def psql(self, sql: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [_psql(), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                   "-h", self.server.host, "-p", str(self.server.port),
                   "-U", self.server.user, "-d", self.server.database, "-c", sql]
        result = subprocess.run(command, capture_output=True, text=True, env=self._env(),
                                timeout=120)
        if check and result.returncode != 0:
            raise AssertionError(f"psql failed: {result.stderr}\nSQL: {sql}")
        return result

    def execute(self, sql: str) -> None:
        self.psql(sql)

    def query(self, sql: str) -> list[dict]:
        """Rows of `sql` as dicts (through json_agg, so types survive)."""
        text = self.psql(f"SELECT coalesce(json_agg(q), '[]') FROM ({sql}) q").stdout.strip()
        return json.loads(text)

    def scalar(self, sql: str):
        rows = self.query(sql)
        return next(iter(rows[0].values())) if rows else None

    def table_exists(self, table: str, schema: str | None = None) -> bool:
        schema = schema or self.destination_schema
        qualified = f'"{schema}"."{table}"'.replace("'", "''")
        return self.scalar(f"SELECT to_regclass('{qualified}') IS NOT NULL AS e") is True

    def ids(self, table: str = "out", schema: str | None = None) -> list[int]:
        """The _source_record_id of every row, as ints, sorted (duplicates kept)."""
        schema = schema or self.destination_schema
        rows = self.query(f'SELECT _source_record_id AS id FROM "{schema}"."{table}"')
        return sorted(int(row["id"]) for row in rows)

    def jobs(self) -> list[dict]:
        return self.query(f'SELECT * FROM "{self.backend_schema}".stream_jobs'
                          " ORDER BY created_at, insert_order")

    def resets(self) -> list[dict]:
        return self.query(f'SELECT * FROM "{self.backend_schema}".stream_resets'
                          " ORDER BY requested_at")

    def destination_cursors(self, job_id: str) -> list[dict]:
        return self.query(f'SELECT * FROM "{self.backend_schema}".destination_cursors'
                          f" WHERE job_id = '{job_id}' ORDER BY to_source_iteration")

    def connection(self) -> dict:
        return {"host": self.server.host, "port": self.server.port,
                "database": self.server.database, "username": self.server.user,
                "password": self.server.password}

    def backend(self, schema: str | None = None) -> dict:
        """An `engine.backend` block for this test's backend schema."""
        return {"type": "postgres",
                "config": {**self.connection(), "schema": schema or self.backend_schema,
                           "syncCursorInDBEvery": 1}}

    def destination(self, table: str = "out", schema: str | None = None, **options) -> dict:
        return {"name": "postgres",
                "config": {**self.connection(), "schema": schema or self.destination_schema,
                           "destination_id": table, **options}}

    def drop_schemas(self) -> None:
        for schema in (self.backend_schema, self.destination_schema):
            quoted = schema.replace('"', '""')
            self.psql(f'DROP SCHEMA IF EXISTS "{quoted}" CASCADE', check=False)


@pytest.fixture
def pg(postgres) -> Postgres:
    helper = Postgres(postgres, uuid.uuid4().hex[:10])
    yield helper
    helper.drop_schemas()


def postgres_pipeline(pg: Postgres, name: str, source: dict, destination: dict | None = None,
                      engine: dict | None = None, **root) -> str:
    """YAML of a pipeline whose backend and destination are this test's PostgreSQL schemas."""
    engine = {**(engine or {}), "backend": pg.backend()}
    return pipeline(name, source, destination or pg.destination(), engine=engine, **root)


def _servers(command: str) -> None:
    run_servers(command, "postgres", timeout=120)


def restart_postgres() -> None:
    """A fast restart: every session is cut, as when the server is restarted under a run."""
    _servers("restart")


def stop_postgres() -> None:
    _servers("stop")


def start_postgres() -> None:
    _servers("start")
