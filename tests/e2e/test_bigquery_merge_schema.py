"""schema_contract for the bigquery destination (unnest) against the BigQuery and GCS emulators:
records whose shape changes mid-run, made with a transform on the generator's records (four
pages, one load each).

- evolve: a new field becomes a column (ALTER TABLE ... ADD COLUMN), NULL in the rows before it;
  an integer field that receives a fraction widens to NUMERIC; the columns are recorded in the
  destination state beside the cursor.
- freeze: the run fails naming the record and the column; nothing of that write is in the table.
- discard_row: exactly the refused records go to `<table>__rejected` with the reason; the others
  are loaded.
- discard_value: the refused value goes there; its record is loaded without it."""

from __future__ import annotations

import json
import uuid

import pytest

from conftest_google import google_emulators  # noqa: F401 (fixture)
from support.pipelines import generator, pipeline
from support.python import needs_transforms
from support.results import State

pytestmark = [needs_transforms]

COUNT = 20

COLUMNS = [("id", "INTEGER", "REQUIRED"), ("name", "STRING", "NULLABLE"),
           ("updated_at", "TIMESTAMP", "NULLABLE"), ("value", "INTEGER", "NULLABLE")]


@pytest.fixture
def dataset(google_emulators) -> str:
    name = f"bq_schema_{uuid.uuid4().hex[:10]}"
    google_emulators.create_dataset(name)
    return name


def destination(emulators, dataset: str, contract: str, **config) -> dict:
    schema = [{"name": name, "type": kind, "mode": mode} for name, kind, mode in COLUMNS]
    return {"name": "bigquery", "config": {
        "project_id": emulators.project, "dataset_id": dataset,
        "gcs_buffer_bucket": emulators.bucket, "destination_id": "items", "unnest": True,
        "record_schemas": [{"destination_id": "items", "record_schema": schema}],
        "schema_contract": contract, "buffer_size": 0, **config}}


def run(bizon, name: str, dest: dict, python: str, check=0):
    source = generator(count=COUNT, page_size=5)
    config = bizon.write("p.yml", pipeline(name, source, dest,
                                           transforms=[{"label": "shape", "python": python}]))
    return bizon.run("run", config, "--result-json", "result.json", check=check)


def query(emulators, sql: str) -> tuple[list[dict], dict[str, str]]:
    """Rows and the result's column types."""
    job = emulators.run_job({"query": {"query": sql, "useLegacySql": False}})
    page = emulators.bq("GET", f"queries/{job['jobReference']['jobId']}")
    names = [field["name"] for field in page["schema"]["fields"]]
    types = {field["name"]: field["type"] for field in page["schema"]["fields"]}
    rows = [{name: cell["v"] for name, cell in zip(names, row["f"])} for row in page.get("rows", [])]
    return rows, types


# A field that appears at record 10 (third page), and an integer field that gets fractions from
# record 15 (fourth page).
EVOLVING = """
if data["id"] >= 10:
    data["nickname"] = "nick-" + str(data["id"])
if data["id"] >= 15:
    data["value"] = data["value"] + 0.25
"""


def test_evolve_adds_a_column_mid_run_and_widens_an_integer_to_numeric(
        bizon, google_emulators, dataset):
    emulators = google_emulators
    run(bizon, "bq-evolve", destination(emulators, dataset, "evolve"), EVOLVING)
    rows, types = query(emulators, f"SELECT id, nickname, value FROM "
                                   f"`{emulators.project}.{dataset}.items` ORDER BY id")
    assert types == {"id": "INTEGER", "nickname": "STRING", "value": "NUMERIC"}
    assert [int(row["id"]) for row in rows] == list(range(COUNT))
    for row in rows:
        i = int(row["id"])
        assert row["nickname"] == (f"nick-{i}" if i >= 10 else None)
        base = (i * 7919) % 1000
        assert float(row["value"]) == (base + 0.25 if i >= 15 else base)
    # The state recorded with the cursors carries the evolved columns, for a resumed run.
    [job] = State(bizon.cwd).jobs()
    states = [json.loads(cursor["destination_state"])
              for cursor in State(bizon.cwd).destination_cursors(job["id"])]
    last = states[-1]["columns"][0]
    assert last["table"] == "items"
    assert [(c["name"], c["type"]) for c in last["columns"]][-2:] == [
        ("value", "NUMERIC"), ("nickname", "STRING")]
    assert "columns" not in states[0]  # The first two pages fit the declared columns.

    # A second full refresh starts from the table's own columns: nothing to add, nothing lost.
    run(bizon, "bq-evolve", destination(emulators, dataset, "evolve"), EVOLVING)
    rows, types = query(emulators, f"SELECT COUNT(*) AS n FROM `{emulators.project}.{dataset}.items`")
    assert rows == [{"n": str(COUNT)}]


def test_freeze_fails_naming_the_record_and_the_column_and_writes_nothing_of_that_load(
        bizon, google_emulators, dataset):
    emulators = google_emulators
    result = run(bizon, "bq-freeze", destination(emulators, dataset, "freeze", write_disposition="append"),
                 EVOLVING, check=1)
    assert "record '10' does not fit table" in result.stderr, result.stderr
    assert "column 'nickname' is not in the table (schema_contract: freeze)" in result.stderr
    assert "nothing of this write was written" in result.stderr
    outcome = json.loads((bizon.cwd / "result.json").read_text())
    assert outcome["failure_class"] == "destination"
    # A full refresh publishes nothing of a failed run; the staging table holds the first two
    # loads only.
    staged, _ = query(emulators, f"SELECT id FROM `{emulators.project}.{dataset}.items_temp` "
                                 f"ORDER BY id")
    assert [int(row["id"]) for row in staged] == list(range(10))


# Records 3, 8 and 13 carry a value their column cannot hold; 13 also a key that is no column.
REFUSING = """
if data["id"] in (3, 8, 13):
    data["value"] = "n/a"
if data["id"] == 13:
    data["color"] = "red"
"""


def test_discard_row_puts_exactly_the_refused_records_into_rejected(
        bizon, google_emulators, dataset):
    emulators = google_emulators
    run(bizon, "bq-discard-row", destination(emulators, dataset, "discard_row"), REFUSING)
    rows, _ = query(emulators, f"SELECT id FROM `{emulators.project}.{dataset}.items` ORDER BY id")
    assert [int(row["id"]) for row in rows] == [i for i in range(COUNT) if i not in (3, 8, 13)]
    rejected, _ = query(emulators, f"SELECT _source_record_id, _bizon_column, _bizon_reason, "
                                   f"_source_data FROM `{emulators.project}.{dataset}.items__rejected` "
                                   f"ORDER BY _source_record_id")
    assert [row["_source_record_id"] for row in rejected] == ["13", "3", "8"]
    by_id = {row["_source_record_id"]: row for row in rejected}
    assert by_id["3"]["_bizon_column"] == "value"
    assert by_id["3"]["_bizon_reason"] == "string 'n/a' does not fit column 'value' (INTEGER)"
    assert json.loads(by_id["3"]["_source_data"])["value"] == "n/a"
    assert by_id["13"]["_bizon_column"] == "value, color"
    assert by_id["13"]["_bizon_reason"] == (
        "string 'n/a' does not fit column 'value' (INTEGER); column 'color' is not in the table")


def test_discard_value_loads_the_record_without_the_refused_value(
        bizon, google_emulators, dataset):
    emulators = google_emulators
    run(bizon, "bq-discard-value", destination(emulators, dataset, "discard_value"), REFUSING)
    rows, _ = query(emulators, f"SELECT id, value FROM `{emulators.project}.{dataset}.items` "
                               f"ORDER BY id")
    assert [int(row["id"]) for row in rows] == list(range(COUNT))
    values = {int(row["id"]): row["value"] for row in rows}
    assert values[3] is None and values[8] is None and values[13] is None
    assert values[4] == str((4 * 7919) % 1000)
    rejected, _ = query(emulators, f"SELECT _source_record_id, _bizon_column, _bizon_value FROM "
                                   f"`{emulators.project}.{dataset}.items__rejected` "
                                   f"ORDER BY _source_record_id, _bizon_column")
    assert [(row["_source_record_id"], row["_bizon_column"], row["_bizon_value"])
            for row in rejected] == [("13", "color", '"red"'), ("13", "value", '"n/a"'),
                                     ("3", "value", '"n/a"'), ("8", "value", '"n/a"')]


def test_evolve_infers_the_columns_of_a_table_without_a_record_schema(
        bizon, google_emulators, dataset):
    emulators = google_emulators
    dest = destination(emulators, dataset, "evolve")
    # The entries name other tables: `items` takes its columns from its records.
    dest["config"]["record_schemas"] = [
        {"destination_id": name, "record_schema": [{"name": "x", "type": "STRING",
                                                    "mode": "NULLABLE"}]}
        for name in ("other_a", "other_b")]
    run(bizon, "bq-inferred", dest, "data['ratio'] = data['value'] / 7")
    rows, types = query(emulators, f"SELECT * FROM `{emulators.project}.{dataset}.items` "
                                   f"ORDER BY id")
    assert types == {"id": "INTEGER", "name": "STRING", "updated_at": "STRING",
                     "value": "INTEGER", "ratio": "FLOAT"}
    assert [int(row["id"]) for row in rows] == list(range(COUNT))
    assert rows[3]["name"] == "record-3"
    assert abs(float(rows[3]["ratio"]) - ((3 * 7919) % 1000) / 7) < 1e-9
