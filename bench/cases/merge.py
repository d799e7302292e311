"""The `merge` case: a merge (upsert by primary key) into a table that already holds rows; ours
(our `generator` source into our `postgres` destination, `write_disposition: merge`) against dlt
(bench/peers/dlt_merge.py, `write_disposition="merge"`), the same records in the same order on
both, each strategy (delete-insert, upsert) on each side.

A run, at N records (300,000 at scale 1), into a fresh schema of its own:

  seed    untimed: the generator's records 0..S-1 (S = SEED_SHARE x N) with `start` a year before
          the timed run's, loaded by the same tool and strategy as the timed run
  timed   the generator's records 0..N-1 at its defaults (updated_at from 2024-01-01, the records
          of every other case), record i with id i + ID_OFFSET: UPDATE_SHARE of them update keys
          the seed loaded, the rest are new keys

then the table must equal the model (`expected`): one row per key, each at its last loaded
version. The generator's `id_offset` (record i carrying id i + id_offset) lets the seed hold more
keys than the timed run updates: SEED_SHARE 0.7 gives a seed of keys 0..209,999, then 90,000
updates (120,000..209,999, new names and values) and 210,000 new keys (210,000..419,999), while
120,000 seeded keys stay as they were, which tells a merge from a replace.

Here: the scenario, the model, the SQL that checks a table against it, our side's YAML, the
runs on the server (MergeRuns: the fresh schemas, the seed, the check), the sides and the plan,
and the case's table in results.md.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

from harness import BENCH
from harness.core import PROBE_N, Harness, Pending, Plan, Tier
from harness.postgres_server import PostgresServer
from harness.records import PAGE_SIZE, PAYLOAD_BYTES
from harness.report import METRICS, fmt, ratio_text
from harness.runs import Invocation, RunFailed, last_error
from harness.verify import check_generator

DLT_MERGE = BENCH / "peers" / "dlt_merge.py"

MERGE_N = 300_000
# The share of N that the timed run updates (keys the seed loaded), and the seed's size over N;
# the timed ids start at (SEED_SHARE - UPDATE_SHARE) x N (the generator's `id_offset`).
UPDATE_SHARE = 0.3
SEED_SHARE = 0.7
SEED_START = "2023-01-01T00:00:00Z"
TIMED_START = "2024-01-01T00:00:00Z"
TABLE = "items"
STRATEGIES = ("delete-insert", "upsert")
# Our destination's record_schema of the generator's records (padding: when payload_bytes > 0).
COLUMNS = (("id", "integer"), ("name", "string"), ("updated_at", "timestamp"),
           ("value", "integer"), ("padding", "string"))


@dataclass(frozen=True)
class Load:
    """One run of the generator: its records 0..count-1, record i with id i + id_offset and
    updated_at start + i ms."""

    count: int
    start: str
    id_offset: int = 0

    def start_ms(self) -> int:
        moment = dt.datetime.fromisoformat(self.start.replace("Z", "+00:00"))
        return int(moment.timestamp()) * 1000

    def spec(self, strategy: str) -> dict:
        """What the dlt side reads from its run file."""
        return {"count": self.count, "start": self.start, "id_offset": self.id_offset,
                "strategy": strategy}


def loads(n: int) -> tuple[Load, Load]:
    """The seed and the timed run at N records."""
    seed = max(1, round(n * SEED_SHARE))
    offset = seed - max(1, round(n * UPDATE_SHARE))
    return Load(seed, SEED_START), Load(n, TIMED_START, offset)


def describe(n: int, server: str) -> str:
    """The scenario at N records, for the case's label."""
    seed, timed = loads(n)
    return (f"a merge by primary key into a table that holds rows, on {server}: per run, a fresh "
            f"schema, an untimed seed of {seed.count:,} records (keys {seed.id_offset}.."
            f"{seed.id_offset + seed.count - 1}, updated_at from {seed.start}), then the timed "
            f"run of {n:,} records (keys {timed.id_offset}..{timed.id_offset + n - 1}, the "
            f"generator's records at its defaults: {UPDATE_SHARE:.0%} update seeded keys, the "
            "rest are new), by the same tool and strategy; the table is then checked against "
            "the model (one row per key at its last version, md5 of the rows; its oid unchanged "
            "since the seed) and dropped. Ours: the generator source into the postgres "
            "destination, unnest, write_disposition merge, incremental (a fresh state: every "
            "record)")


# --------------------------------------------------------------------------------------------
# The model and the check


@dataclass(frozen=True)
class Expected:
    """What a merged table holds: rows (one per key), keys low..high, the rows still at their
    seed version, and the md5 of every row's text (row_text) in key order."""

    rows: int
    low: int
    high: int
    stale: int
    digest: str


def row_text(key: int, i: int, start_ms: int, payload_bytes: int) -> str:
    """Record i of a load whose updated_at starts at start_ms, as check_sql spells a row:
    id|name|value|updated_at in epoch ms[|padding length]."""
    text = f"{key}|record-{i}|{(i * 7919) % 1000}|{start_ms + i}"
    return f"{text}|{payload_bytes}" if payload_bytes else text


@functools.lru_cache(maxsize=8)
def expected(runs: tuple[Load, ...], payload_bytes: int) -> Expected:
    """The table after `runs` merged one after the other: each key at its last version."""
    rows: dict[int, tuple[str, int]] = {}
    for index, load in enumerate(runs):
        start_ms = load.start_ms()
        for i in range(load.count):
            key = i + load.id_offset
            rows[key] = (row_text(key, i, start_ms, payload_bytes), index)
    last = len(runs) - 1
    digest = hashlib.md5("\n".join(rows[key][0] for key in sorted(rows)).encode()).hexdigest()
    return Expected(len(rows), min(rows), max(rows),
                    sum(1 for _, index in rows.values() if index != last), digest)


def check_sql(qualified: str, newest: Load, payload_bytes: int) -> str:
    """The query whose one row (psql -A -t) table_error reads: rows, distinct ids, lowest and
    highest id, rows older than the newest load, md5 of the rows' text in id order."""
    fields = ["id", "name", "value", "(extract(epoch FROM updated_at) * 1000)::bigint"]
    if payload_bytes:
        fields.append("length(padding)")
    return (f"SELECT count(*), count(DISTINCT id), min(id), max(id), "
            f"count(*) FILTER (WHERE updated_at < timestamptz '{newest.start}'), "
            f"md5(string_agg(concat_ws('|', {', '.join(fields)}), E'\\n' ORDER BY id)) "
            f"FROM {qualified}")


def table_error(name: str, found: str, want: Expected) -> Optional[str]:
    """check_sql's answer against the model: an error, or None."""
    cells = found.split("|")
    try:
        rows, distinct, low, high, stale = (int(cell) for cell in cells[:5])
    except ValueError:
        return f"{name}: unexpected answer {found[:200]!r}"
    if (rows, distinct, low, high, stale) != (want.rows, want.rows, want.low, want.high,
                                              want.stale):
        return (f"{name}: {rows:,} rows, {distinct:,} distinct ids in [{low}, {high}], "
                f"{stale:,} still at an older version; expected {want.rows:,} rows, ids "
                f"{want.low}..{want.high}, {want.stale:,} at an older version")
    if cells[5] != want.digest:
        return (f"{name}: the rows' contents differ from the model (md5 {cells[5]}, expected "
                f"{want.digest}): some key does not hold its last version")
    return None


# --------------------------------------------------------------------------------------------
# Our side


def ours_yaml(load: Load, strategy: str, connection: str, schema: str, page_size: int,
              payload_bytes: int) -> str:
    """Our pipeline of `load` merged into `schema`.`TABLE` (`connection`: the destination's
    connection settings, indented by four spaces). Incremental, so that the load merges into the
    table the seed made (merge on full_refresh replaces the table); its first run in a fresh
    state fetches every record."""
    offset = f"  id_offset: {load.id_offset}\n" if load.id_offset else ""
    columns = "".join(f"            - {{name: {name}, type: {kind}}}\n" for name, kind in COLUMNS
                      if name != "padding" or payload_bytes)
    return f"""\
name: bench-merge
source:
  name: generator
  stream: records
  sync_mode: incremental
  count: {load.count}
  page_size: {page_size}
  payload_bytes: {payload_bytes}
  start: "{load.start}"
{offset}destination:
  name: postgres
  config:
{connection}    schema: {schema}
    table: {TABLE}
    unnest: true
    write_disposition: merge
    primary_key: [id]
    merge_strategy: {strategy}
    record_schemas:
      - destination_id: {TABLE}
        record_schema:
{columns}"""


# --------------------------------------------------------------------------------------------
# The sides' keys and the case's table


def side_key(tool: str, strategy: str) -> str:
    """The key of a side's measurements in a pair: ours_delete_insert, dlt_upsert, ..."""
    return f"{tool}_{strategy.replace('-', '_')}"


# Ratio rows (name, numerator side, denominator side): ours over dlt, strategy by strategy.
RATIOS = tuple((f"ratio_{side_key('ours', s)}", side_key("ours", s), side_key("dlt", s))
               for s in STRATEGIES)


# The case's table: no first record (it writes no file).
MERGE_METRICS = [m for m in METRICS if m[0] != "first_record_s"]


def table_rows(summary: dict, n: int, dlt_name: str) -> list[str]:
    """A tier's rows of the case's table, strategy by strategy: ours, dlt, ours/dlt."""
    lines = []
    for strategy, (ratio, ours, dlt) in zip(STRATEGIES, RATIOS):
        shown = ((ours, f"ours {strategy}"), (dlt, f"{dlt_name} {strategy}"))
        for side, label in shown:
            if summary.get(side, {}).get("wall_s", {}).get("median") is None:
                continue
            head = f"| {n:,} |" if not lines else "| |"
            lines.append(f"{head} {label} | " + " | ".join(
                fmt(summary[side][k]["median"], f) for k, _, f, _ in MERGE_METRICS) + " |")
        if summary.get(ratio, {}).get("wall_s", {}).get("median") is not None:
            lines.append(f"| | ours/{dlt_name} {strategy} | " + " | ".join(
                ratio_text(summary[ratio][k]) for k, *_ in MERGE_METRICS) + " |")
    return lines


def results_table(case: dict) -> list[str]:
    """The case's table in results.md, from its entry in the report."""
    lines = ["", "Merge: a timed merge into a seeded table, each strategy on each side, medians "
                 "(CPU and peak RSS of the tool's process; the server's in neither); the ratio "
                 "rows are ours/dlt per pair and strategy, as min – **median** – max:", "",
             "| N | side | " + " | ".join(m[1] for m in MERGE_METRICS) + " |",
             "|---:|---|" + "---:|" * len(MERGE_METRICS)]
    for tier in case["tiers"]:
        lines += table_rows(tier["summary"], tier["n"], case["peer_name"])
    return lines


# --------------------------------------------------------------------------------------------
# The runs on the server, the sides' invocations and the plan


class MergeRuns:
    """The merge case's runs on one server: a fresh schema per run, the untimed seed the run
    merges into (checked, then VACUUM ANALYZE), the check of the merged table against the model
    (expected, check_sql), and every schema dropped."""

    def __init__(self, server: PostgresServer, timeout_s: float):
        self.server = server
        self.timeout_s = timeout_s
        self.schemas: dict[str, str] = {}  # side key -> the schema of its current run
        self.oids: dict[str, str] = {}  # side key -> the oid of its seeded table
        self.made: list[str] = []  # every schema made (and dlt's staging ones), for cleanup
        self.runs = iter(range(1_000_000))

    def ours_yaml(self, load: Load, strategy: str, schema: str) -> str:
        return ours_yaml(load, strategy, self.server.connection_yaml("    "), schema, PAGE_SIZE,
                         PAYLOAD_BYTES)

    def table(self, key: str) -> str:
        return f'"{self.schemas[key]}"."{TABLE}"'

    def fresh_schema(self, key: str) -> str:
        schema = f"bizon_bench_{os.getpid()}_merge_{next(self.runs)}"
        self.schemas[key] = schema
        self.made += [schema, f"{schema}_staging"]
        self.server.psql(f'CREATE SCHEMA "{schema}"')
        return schema

    def seed(self, key: str, argv: Callable[[Path, str, Load], list[str]],
             own_directory: bool) -> Callable[[Path, Invocation], None]:
        """The `before` of a side: a fresh schema, then the seed run (argv(directory, schema,
        load)) in the run's directory or, with own_directory, in its seed/ (a state of its own,
        so that the timed run is a first incremental run too)."""
        def before(directory: Path, inv: Invocation) -> None:
            schema = self.fresh_schema(key)
            load = loads(inv.n)[0]
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

    def check(self, table: str, runs: tuple[Load, ...]) -> Optional[str]:
        """`table` against the model of `runs` merged in turn: an error, or None."""
        try:
            found = self.server.psql(check_sql(table, runs[-1], PAYLOAD_BYTES))
        except RunFailed as error:
            return str(error)
        return table_error(table, found, expected(runs, PAYLOAD_BYTES))

    def verify(self, key: str) -> Callable[[Path, Invocation], Optional[str]]:
        """The `verify` of a side: the seeded table, merged into (the same oid), equals the
        model of the seed and the timed run; then the run's schemas are dropped."""
        def verify(_: Path, inv: Invocation) -> Optional[str]:
            try:
                if self.oid(key) != self.oids[key]:
                    return (f"{self.table(key)} is a new table since the seed: it was replaced, "
                            "not merged into")
                return self.check(self.table(key), loads(inv.n))
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


def side_invocation(h: Harness, tool: str, strategy: str, merges: MergeRuns,
                    n: int) -> Invocation:
    """One side of the merge case: `tool` (ours or dlt) merging N records with `strategy`."""
    key = side_key(tool, strategy)
    if tool == "ours":
        def seed_argv(directory: Path, schema: str, load: Load) -> list[str]:
            config = directory / "config.yml"
            config.write_text(merges.ours_yaml(load, strategy, schema))
            return [h.ours, "run", str(config)]

        return Invocation(
            "ours", [h.ours, "run", "{config}"],
            lambda count: merges.ours_yaml(loads(count)[1], strategy, merges.schemas[key]),
            n, check_generator, verify=merges.verify(key),
            before=merges.seed(key, seed_argv, own_directory=True), side=key)

    def dlt_argv(spec: str, schema: str) -> list[str]:
        return [h.args.dlt_python, str(DLT_MERGE), merges.server.url, schema, spec,
                str(PAYLOAD_BYTES)]

    def dlt_seed_argv(directory: Path, schema: str, load: Load) -> list[str]:
        spec = directory / "seed.json"
        spec.write_text(json.dumps(load.spec(strategy)))
        return dlt_argv(str(spec), schema)

    return Invocation(
        "peer", lambda: dlt_argv("{config}", merges.schemas[key]),
        lambda count: json.dumps(loads(count)[1].spec(strategy)) + "\n",
        n, check_generator, verify=merges.verify(key),
        before=merges.seed(key, dlt_seed_argv, own_directory=False), side=key)


def plan(h: Harness) -> Plan | Pending:
    server = PostgresServer.from_env()
    if isinstance(server, str):
        return Pending(server)
    merges = MergeRuns(server, h.args.timeout)
    strategies, skipped = [], []
    with merges.cleanup():
        for strategy in STRATEGIES:
            tiny = side_invocation(h, "ours", strategy, merges, PROBE_N)
            why = h.probe(f"merge-{strategy}", tiny)
            if why:
                skipped.append(f"{strategy}: {why}")
            else:
                strategies.append(strategy)
    if not strategies:
        return Pending("our postgres destination cannot merge yet: " + "; ".join(skipped))
    n = h.scaled(MERGE_N)
    sides = [side_invocation(h, tool, strategy, merges, n) for strategy in strategies
             for tool in ("ours", "dlt") if tool == "ours" or h.dlt_version]
    return Plan(label=describe(n, f"{server.host}:{server.port}")
                      + (f"; peer: dlt {h.dlt_version} (bench/peers/dlt_merge.py), "
                         "write_disposition merge, primary_key id, at its defaults otherwise"
                         if h.dlt_version else "; no peer: dlt is not installed (bench/run.sh "
                         "makes bench/.venv-dlt)")
                      + (f"; not measured: {'; '.join(skipped)}" if skipped else ""),
                same_yaml=False,
                tiers=[Tier(n, sides[0], None, others=tuple(sides[1:]))],
                setup=merges.cleanup, warmup=merges.cleanup,
                peer_name=h.dlt_peer_name(),
                ratios=RATIOS)
