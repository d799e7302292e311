"""Hostile destination ids through the file, postgres, bigquery and logger destinations.

An id reaches a destination two ways: from the config (destination.config.destination_id, the
postgres `table`), which `bizon config validate` and `bizon run` check with `file:line:
yaml.path`, and from data (a record's destination_id, here set by a custom Python source), which
fails the run with failure_class destination and publishes nothing. The accepted ids must land
in exactly the file or table they name, with exactly their rows.
"""

from __future__ import annotations

import json
import re
import uuid

import pytest
import yaml

from conftest_google import google_emulators  # noqa: F401 (fixture)
from conftest_postgres import pg, postgres, postgres_pipeline  # noqa: F401 (fixtures)
from support.pipelines import dummy
from support.python import needs_custom_source
from support.results import read_result

# Text that is harmless as a name, however it looks: each must name its own file or table.
ACCEPTED = ['quote"double', "quote'single", "semi;colon", "x; DROP TABLE x; --", "données_日本",
            "with space"]
# The file destination also keeps a subfolder that exists; postgres takes any printable text.
FILE_ACCEPTED = ACCEPTED + ["sub/inner"]
POSTGRES_ACCEPTED = ACCEPTED + ['x"; DROP TABLE victim; --', "a.b", "..", "/abs", "sub/inner"]
# Refused everywhere: what no file or table name holds faithfully, and what breaks a log line.
CONTROL = ["nul\0x", "line\nbreak", "tab\there"]
LONG = "l" * 59  # Its full-refresh staging table, l..._temp, is 64 bytes: one more than kept.

HOSTILE_SOURCE = '''
import json
import re
from typing import List, Tuple

from pydantic import Field

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord
from bizon.source.source import AbstractSource


class HostileConfig(SourceConfig):
    routes: str = Field(..., description="JSON list: each record's destination_id (null: none)")


class HostileSource(AbstractSource):
    """One page: record i goes to routes[i]."""

    def __init__(self, config: HostileConfig):
        super().__init__(config)
        self.routes = json.loads(config.routes)

    @staticmethod
    def streams() -> List[str]:
        return ["hostile"]

    @staticmethod
    def get_config_class():
        return HostileConfig

    def get_authenticator(self):
        return None

    def check_connection(self) -> Tuple[bool, str]:
        return True, None

    def get_total_records_count(self) -> int:
        return len(self.routes)

    def get(self, pagination: dict = None) -> SourceIteration:
        return SourceIteration(next_pagination={}, records=[
            SourceRecord(id=str(i), data={"n": i, "to": route}, destination_id=route)
            for i, route in enumerate(self.routes)])
'''


def shown(destination_id: str) -> str:
    """How bizon shows an id in an error or a log line: quoted, control characters escaped."""
    out = []
    for c in destination_id:
        escapes = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
        if c in escapes:
            out.append(escapes[c])
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    return "'" + "".join(out) + "'"


def hostile_source(bizon, routes: list) -> dict:
    path = bizon.cwd / "hostile_source.py"
    path.write_text(HOSTILE_SOURCE)
    return {"name": "hostile", "stream": "hostile", "source_file_path": str(path),
            "routes": json.dumps(routes)}


def dump(config: dict) -> str:
    return yaml.safe_dump(config, sort_keys=False, allow_unicode=True)


def line_of(text: str, key: str) -> int:
    """The 1-based line where `key:` first appears in the YAML text."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith(f"{key}:"):
            return number
    raise AssertionError(f"{key} not in\n{text}")


def expected_rows(routes: list, destination_id, default=None) -> list[tuple[str, dict]]:
    """(source_record_id, data) of the records routed to `destination_id`, in order."""
    return [(str(i), {"n": i, "to": route}) for i, route in enumerate(routes)
            if (route if route is not None else default) == destination_id]


def file_rows(bizon, destination_id: str) -> list[tuple[str, dict]]:
    return [(row["source_record_id"], json.loads(row["source_data"]))
            for row in bizon.read_ndjson(f"{destination_id}.json")]


def json_files(bizon) -> set[str]:
    return {str(p.relative_to(bizon.cwd)) for p in bizon.cwd.rglob("*.json") if p.name != "r.json"}


def assert_refused_config(result, text: str, path: str, destination_id: str, key="destination_id"):
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert f"p.yml:{line_of(text, key)}: {path}: " in output, output
    assert shown(destination_id) in output, output


def assert_refused_by_validate_and_run(bizon, text: str, path: str, destination_id: str,
                                       key="destination_id"):
    """`config validate` and `run` both refuse the id at its line, the run as a config failure."""
    config = bizon.write("p.yml", text)
    assert_refused_config(bizon.run("config", "validate", config), text, path, destination_id, key)
    result = bizon.run("run", config, "--result-json", "r.json")
    assert_refused_config(result, text, path, destination_id, key)
    assert read_result(bizon.cwd / "r.json")["failure_class"] == "config"
    return result


def assert_routed_refusal_fails_the_run(bizon, text: str, refused: str):
    """A run whose source routes a record to `refused` passes validation (the id comes from
    data) and fails as a destination failure that names the id."""
    config = bizon.write("p.yml", text)
    bizon.run("config", "validate", config, check=0)
    result = bizon.run("run", config, "--result-json", "r.json")
    assert result.returncode != 0
    outcome = read_result(bizon.cwd / "r.json")
    assert outcome["failure_class"] == "destination"
    assert shown(refused) in outcome["error"], outcome["error"]
    return outcome


# ---------------------------------------------------------------------------------------------
# file


@pytest.mark.parametrize("destination_id", FILE_ACCEPTED)
def test_file_static_id_writes_exactly_its_own_file(bizon, destination_id):
    (bizon.cwd / "sub").mkdir()
    config = bizon.write("p.yml", dump({"name": "f", "source": dummy(), "destination": {
        "name": "file", "config": {"destination_id": destination_id}}}))
    bizon.run("config", "validate", config, check=0)
    bizon.run("run", config, check=0)
    assert json_files(bizon) == {f"{destination_id}.json"}
    rows = bizon.read_ndjson(f"{destination_id}.json")
    assert [row["source_record_id"] for row in rows] == ["9898", "88787", "98", "3333", "56565"]


@pytest.mark.parametrize("destination_id", ["..", "../escaped", "a/../../escaped", "ABSOLUTE"]
                         + CONTROL)
def test_file_static_id_leaving_its_directory_is_a_config_error(bizon, destination_id):
    outside = bizon.cwd.parent / f"escaped-{uuid.uuid4().hex}"
    if destination_id == "ABSOLUTE":
        destination_id = str(outside)
    text = dump({"name": "f", "source": dummy(), "destination": {
        "name": "file", "config": {"destination_id": destination_id}}})
    assert_refused_by_validate_and_run(bizon, text, "destination.config.destination_id",
                                       destination_id)
    assert json_files(bizon) == set()
    assert not outside.with_suffix(".json").exists()
    assert not (bizon.cwd.parent / "escaped.json").exists()


@needs_custom_source
def test_file_routed_ids_land_in_exactly_their_files(bizon):
    (bizon.cwd / "sub").mkdir()
    routes = [None] + FILE_ACCEPTED + [None, FILE_ACCEPTED[0]]
    config = bizon.write("p.yml", dump({"name": "f", "source": hostile_source(bizon, routes),
                                        "destination": {"name": "file",
                                                        "config": {"destination_id": "out"}}}))
    bizon.run("run", config, "--result-json", "r.json", check=0)
    assert read_result(bizon.cwd / "r.json")["records_written"] == len(routes)
    assert json_files(bizon) == {"out.json"} | {f"{d}.json" for d in FILE_ACCEPTED}
    assert file_rows(bizon, "out") == expected_rows(routes, "out", default="out")
    for destination_id in FILE_ACCEPTED:
        assert file_rows(bizon, destination_id) == expected_rows(routes, destination_id)


@needs_custom_source
@pytest.mark.parametrize("refused", ["..", "../escaped", "sub/../../escaped", "ABSOLUTE"] + CONTROL)
def test_file_refused_routed_id_fails_the_run_and_publishes_nothing(bizon, refused):
    (bizon.cwd / "sub").mkdir()
    outside = bizon.cwd.parent / f"escaped-{uuid.uuid4().hex}"
    if refused == "ABSOLUTE":
        refused = str(outside)
    destination = {"name": "file", "config": {"destination_id": "out"}}
    good = bizon.write("good.yml", dump({"name": "f", "source": hostile_source(bizon, [None]),
                                         "destination": destination}))
    bizon.run("run", good, check=0)
    published = (bizon.cwd / "out.json").read_bytes()

    routes = [None, "fine", refused, "after"]
    outcome = assert_routed_refusal_fails_the_run(
        bizon, dump({"name": "f", "source": hostile_source(bizon, routes),
                     "destination": destination}), refused)
    assert "\n" not in outcome["error"]
    # The previous full refresh is what readers still see; nothing of this run is published.
    assert (bizon.cwd / "out.json").read_bytes() == published
    published_files = {p for p in json_files(bizon) if not p.endswith("_temp.json")}
    assert published_files == {"out.json"}
    assert not (bizon.cwd / "fine_temp.json").exists()  # Its batch was refused whole.
    assert not outside.with_suffix(".json").exists()
    assert not outside.with_name(outside.name + "_temp.json").exists()
    assert not (bizon.cwd.parent / "escaped_temp.json").exists()


# ---------------------------------------------------------------------------------------------
# postgres


def pg_table_names(pg) -> set[str]:
    rows = pg.query("SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n"
                    " ON n.oid = c.relnamespace WHERE c.relkind = 'r'"
                    f" AND n.nspname = '{pg.destination_schema}'")
    return {row["name"] for row in rows}


def pg_rows(pg, table: str) -> list[tuple[str, dict]]:
    quoted = table.replace('"', '""')
    rows = pg.query(f'SELECT _source_record_id AS id, _source_data AS data'
                    f' FROM "{pg.destination_schema}"."{quoted}" ORDER BY _source_record_id::int')
    return [(row["id"], row["data"]) for row in rows]


def make_bystander(pg):
    pg.execute(f'CREATE SCHEMA IF NOT EXISTS "{pg.destination_schema}";'
               f' CREATE TABLE "{pg.destination_schema}".victim (id int);'
               f' INSERT INTO "{pg.destination_schema}".victim VALUES (1)')


@pytest.mark.parametrize("key", ["destination_id", "table"])
def test_postgres_static_hostile_id_is_one_quoted_table(bizon, pg, key):
    make_bystander(pg)
    table = 'x"; DROP TABLE victim; --'
    destination = pg.destination("unused")
    destination["config"].pop("destination_id")
    destination["config"][key] = table
    config = bizon.write("p.yml", postgres_pipeline(pg, "pf", dummy(), destination))
    bizon.run("config", "validate", config, check=0)
    bizon.run("run", config, check=0)
    bizon.run("run", config, check=0)  # A second full refresh swaps the table again.
    assert pg_table_names(pg) == {"victim", "_bizon_loads", table}
    assert [row[0] for row in pg_rows(pg, table)] == ["98", "3333", "9898", "56565", "88787"]
    assert pg.scalar(f'SELECT count(*) AS n FROM "{pg.destination_schema}".victim') == 1


@pytest.mark.parametrize("key", ["destination_id", "table"])
@pytest.mark.parametrize("table", [LONG] + CONTROL)
def test_postgres_static_id_that_cannot_be_a_table_is_a_config_error(bizon, pg, key, table):
    destination = pg.destination("unused")
    destination["config"].pop("destination_id")
    destination["config"][key] = table
    text = postgres_pipeline(pg, "pf", dummy(), destination)
    result = assert_refused_by_validate_and_run(bizon, text, f"destination.config.{key}", table,
                                                key)
    if table == LONG:
        assert "63 bytes" in result.stdout + result.stderr
    assert pg_table_names(pg) == set()  # Not even the schema's bookkeeping: nothing ran.


def test_postgres_long_id_is_accepted_where_its_table_fits(bizon, pg):
    # Stream mode writes in place: 59 bytes fit; only the full refresh's staging suffix did not.
    source = {**dummy(), "sync_mode": "stream"}
    config = bizon.write("p.yml", postgres_pipeline(pg, "ps", source, pg.destination(LONG)))
    bizon.run("config", "validate", config, check=0)


@needs_custom_source
def test_postgres_routed_hostile_ids_land_in_exactly_their_tables(bizon, pg):
    make_bystander(pg)
    routes = [None] + POSTGRES_ACCEPTED + [None, POSTGRES_ACCEPTED[0]]
    config = bizon.write("p.yml", postgres_pipeline(pg, "pr", hostile_source(bizon, routes)))
    bizon.run("run", config, "--result-json", "r.json", check=0)
    assert read_result(bizon.cwd / "r.json")["records_written"] == len(routes)
    assert pg_table_names(pg) == {"victim", "_bizon_loads", "out"} | set(POSTGRES_ACCEPTED)
    assert pg_rows(pg, "out") == expected_rows(routes, "out", default="out")
    for table in POSTGRES_ACCEPTED:
        assert pg_rows(pg, table) == expected_rows(routes, table)
    assert pg.scalar(f'SELECT count(*) AS n FROM "{pg.destination_schema}".victim') == 1


@needs_custom_source
@pytest.mark.parametrize("refused", [LONG, "_bizon_loads", "out_temp"] + CONTROL)
def test_postgres_refused_routed_id_fails_the_run_and_publishes_nothing(bizon, pg, refused):
    good = bizon.write("good.yml", postgres_pipeline(pg, "pr", hostile_source(bizon, [None])))
    bizon.run("run", good, check=0)
    before = pg_rows(pg, "out")
    assert before == [("0", {"n": 0, "to": None})]

    routes = [None, None, "fine", refused]
    assert_routed_refusal_fails_the_run(
        bizon, postgres_pipeline(pg, "pr", hostile_source(bizon, routes)), refused)
    assert pg_rows(pg, "out") == before  # The previous full refresh stays published.
    published = {t for t in pg_table_names(pg) if not t.endswith("_temp")}
    assert published == {"_bizon_loads", "out"}  # No "fine", no truncated name.
    assert pg.scalar(f"SELECT count(*) AS n FROM \"{pg.destination_schema}\"._bizon_loads"
                     " WHERE kind = 'publish'") == 1


# ---------------------------------------------------------------------------------------------
# bigquery: a destination id is a bare table name of BigQuery's character set (letters, digits,
# '_', '-', spaces and non-ASCII letters); every other ASCII character is refused.

# Real BigQuery also takes spaces and non-ASCII letters ("données 日本", accepted by
# CheckBigqueryTableName in its unit test); the emulator holds only [A-Za-z0-9_-].
BIGQUERY_ACCEPTED = ["dash-name", "Mixed_Case9", "x_1-y"]
BIGQUERY_REFUSED = ['quote"double', "quote'single", "semi;colon", "x; DROP TABLE x; --", "a.b",
                    "sub/inner", "back`tick"]


@pytest.fixture
def bq_dataset(google_emulators) -> str:
    name = f"bq_ids_{uuid.uuid4().hex[:10]}"
    google_emulators.create_dataset(name)
    return name


def bigquery_pipeline(emulators, dataset: str, source: dict, destination_id: str = "out") -> str:
    return dump({"name": "bq", "source": source, "destination": {"name": "bigquery", "config": {
        "project_id": emulators.project, "dataset_id": dataset,
        "gcs_buffer_bucket": emulators.bucket, "destination_id": destination_id}}})


def bq_tables(emulators, dataset: str) -> set[str]:
    answer = emulators.bq("GET", f"datasets/{dataset}/tables")
    return {table["tableReference"]["tableId"] for table in answer.get("tables", [])}


def bq_rows(emulators, dataset: str, table: str) -> list[tuple[str, dict]]:
    found = emulators.query(f"SELECT _source_record_id, _source_data"
                            f" FROM `{emulators.project}.{dataset}.{table}`")
    return sorted(((row["_source_record_id"], json.loads(row["_source_data"])) for row in found),
                  key=lambda row: int(row[0]))


@pytest.mark.parametrize("destination_id", BIGQUERY_REFUSED + CONTROL)
def test_bigquery_static_id_outside_its_character_set_is_a_config_error(
        bizon, google_emulators, bq_dataset, destination_id):
    text = bigquery_pipeline(google_emulators, bq_dataset, dummy(), destination_id)
    assert_refused_by_validate_and_run(bizon, text, "destination.config.destination_id",
                                       destination_id)
    assert bq_tables(google_emulators, bq_dataset) == set()


@needs_custom_source
def test_bigquery_routed_ids_land_in_exactly_their_tables(bizon, google_emulators, bq_dataset):
    routes = [None] + BIGQUERY_ACCEPTED + [None, BIGQUERY_ACCEPTED[0]]
    config = bizon.write("p.yml", bigquery_pipeline(google_emulators, bq_dataset,
                                                    hostile_source(bizon, routes)))
    bizon.run("run", config, "--result-json", "r.json", check=0)
    assert read_result(bizon.cwd / "r.json")["records_written"] == len(routes)
    assert bq_tables(google_emulators, bq_dataset) == {"out"} | set(BIGQUERY_ACCEPTED)
    assert bq_rows(google_emulators, bq_dataset, "out") == expected_rows(routes, "out", "out")
    for table in BIGQUERY_ACCEPTED:
        assert bq_rows(google_emulators, bq_dataset, table) == expected_rows(routes, table)


@needs_custom_source
@pytest.mark.parametrize("refused", ["semi;colon", "x; DROP TABLE x; --", "a.b", "line\nbreak"])
def test_bigquery_refused_routed_id_fails_the_run_and_publishes_nothing(
        bizon, google_emulators, bq_dataset, refused):
    good = bizon.write("good.yml", bigquery_pipeline(google_emulators, bq_dataset,
                                                     hostile_source(bizon, [None])))
    bizon.run("run", good, check=0)
    before = bq_rows(google_emulators, bq_dataset, "out")
    assert before == [("0", {"n": 0, "to": None})]

    routes = [None, None, "fine", refused]
    assert_routed_refusal_fails_the_run(
        bizon, bigquery_pipeline(google_emulators, bq_dataset, hostile_source(bizon, routes)),
        refused)
    assert bq_rows(google_emulators, bq_dataset, "out") == before  # The old table stays.
    published = {t for t in bq_tables(google_emulators, bq_dataset) if not t.endswith("_temp")}
    assert published == {"out"}  # No "fine", no table of the refused id.


# ---------------------------------------------------------------------------------------------
# logger


def test_logger_static_hostile_id_does_not_touch_the_log(bizon):
    config = bizon.write("p.yml", dump({"name": "l", "source": dummy(), "destination": {
        "name": "logger", "config": {"destination_id": "x; DROP TABLE x; --\nforged"}}}))
    bizon.run("config", "validate", config, check=0)
    result = bizon.run("run", config, check=0)
    lines = [line for line in (result.stdout + result.stderr).splitlines()
             if "[full_refresh] " in line]
    assert len(lines) == 5
    assert not any("forged" in line for line in (result.stdout + result.stderr).splitlines())


@needs_custom_source
def test_logger_prints_each_routed_id_escaped_on_its_own_line(bizon):
    routes = [None] + ACCEPTED + CONTROL + ["fake\n[2099-01-01] [info] forged line"]
    config = bizon.write("p.yml", dump({"name": "l", "source": hostile_source(bizon, routes),
                                        "destination": {"name": "logger", "config": {}}}))
    result = bizon.run("run", config, check=0)
    output = (result.stdout + result.stderr).splitlines()
    lines = [line for line in output if "[full_refresh] " in line]
    assert len(lines) == len(routes), "\n".join(output)
    for i, (line, route) in enumerate(zip(lines, routes)):
        payload = json.dumps({"n": i, "to": route}, ensure_ascii=False)
        if route is None:
            assert line.endswith(f"[full_refresh] {payload}"), line
        else:
            assert line.endswith(f"[full_refresh] {shown(route)}: {payload}"), line
    assert not any(line.startswith("[2099-01-01]") for line in output)


# ---------------------------------------------------------------------------------------------
# ids the config routes to: kafka topics and the streams block


def item_line(result, text: str, path: str) -> str:
    """The line a `path` error names, checked to lie inside the config's text."""
    match = re.search(rf"p\.yml:(\d+): {re.escape(path)}: ", result.stdout + result.stderr)
    assert match, result.stdout + result.stderr
    number = int(match.group(1))
    assert 1 <= number <= len(text.splitlines())
    return text.splitlines()[number - 1]


def test_kafka_topic_route_leaving_the_directory_is_a_config_error(bizon):
    source = {"name": "kafka", "stream": "topic", "sync_mode": "stream",
              "bootstrap_servers": "127.0.0.1:1", "group_id": "g",
              "topics": [{"name": "fine", "destination_id": "fine"},
                         {"name": "evil", "destination_id": "../../etc/evil"}]}
    text = dump({"name": "k", "source": source,
                 "destination": {"name": "file", "config": {"destination_id": "out"}}})
    config = bizon.write("p.yml", text)
    result = bizon.run("config", "validate", config)
    assert result.returncode != 0
    assert "name: evil" in item_line(result, text, "source.topics[1].destination_id")
    assert shown("../../etc/evil") in result.stdout + result.stderr
    assert "source.topics[0]" not in result.stdout + result.stderr


def test_streams_block_table_id_is_checked_by_the_destination(bizon, pg):
    source = {**dummy(), "sync_mode": "stream"}
    streams = [{"name": "s", "source": {"topic": "t"},
                "destination": {"table_id": "p.d." + "t" * 62}}]
    text = postgres_pipeline(pg, "st", source, streams=streams)
    config = bizon.write("p.yml", text)
    result = bizon.run("config", "validate", config)
    assert result.returncode != 0
    assert "name: s" in item_line(result, text, "streams[0].destination.table_id")
    assert "63 bytes" in result.stdout + result.stderr
