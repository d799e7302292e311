"""The PostgreSQL server of the postgres, merge and members cases, named by BIZON_BENCH_POSTGRES,
reached through psql: our destination's and backend's YAML for it, and the checks of a loaded
table."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Optional

from harness.runs import RunFailed
from harness.verify import table_counts_error

# The columns of our postgres destination's published table (raw records, no unnest), in its
# order, with their types as format_type() spells them.
POSTGRES_COLUMNS = (("_bizon_id", "text"), ("_bizon_extracted_at", "timestamp with time zone"),
                    ("_bizon_loaded_at", "timestamp with time zone"), ("_source_record_id", "text"),
                    ("_source_timestamp", "timestamp with time zone"), ("_source_data", "jsonb"))


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
