"""The Debezium transform (data/transforms/debezium.py, the one the kafka source's test runs too) on
Debezium-shaped records, through `bizon run`.

The records come from a custom Python source (data/python/debezium_source.py) emitting
{"value": {"op", "before", "after", "source": {"name", "ts_ms"}}, "partition", "offset"}, as the
kafka source delivers Debezium messages; they go to the file destination, whose source_data must
be the bytes the original writes: json.dumps with its defaults (ASCII escapes, spaced separators).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from support.paths import PYTHON_DATA
from support.pipelines import debezium_transform, pipeline
from support.python import change_events, needs_custom_source, needs_transforms
from support.results import read_result

SOURCE = {"name": "debezium_cdc", "stream": "users", "page_size": 4}

pytestmark = [needs_transforms, needs_custom_source]


def expected_row(event: dict) -> str:
    """The row the transform makes of `event`: after the change (before it, for a delete), then
    the change's metadata, in that order, as the original writes it."""
    value = event["value"]
    data = dict(value["before"] if value["op"] == "d" else value["after"])
    data["__deleted"] = value["op"] == "d"
    data["__cluster"] = value["source"]["name"].replace("_", "-")
    data["__kafka_partition"] = event["partition"]
    data["__kafka_offset"] = event["offset"]
    changed_at = datetime.fromtimestamp(value["source"]["ts_ms"] / 1000, timezone.utc)
    data["__event_timestamp"] = changed_at.strftime("%Y-%m-%d %H:%M:%S.%f")
    return json.dumps(data)


def test_seed_debezium_transform_through_a_custom_source(bizon):
    transforms = [debezium_transform()]
    config = bizon.write("debezium.yml", pipeline("debezium", SOURCE, transforms=transforms))
    bizon.run("run", config, "--custom-source", PYTHON_DATA / "debezium_source.py",
              "--result-json", "result.json", check=0)

    rows = bizon.read_ndjson("out.json")
    events = change_events()
    assert [row["source_record_id"] for row in rows] == [f"{e['partition']}-{e['offset']}" for e in events]
    assert [row["source_data"] for row in rows] == [expected_row(e) for e in events]
    # A delete became the row before the change, with its metadata; the text is ASCII-escaped.
    assert json.loads(rows[4]["source_data"]) == {
        "id": 2, "name": "Björn", "email": "bjorn@example.com", "__deleted": True,
        "__cluster": "prod-users-db", "__kafka_partition": 0, "__kafka_offset": 104,
        "__event_timestamp": "2023-11-14 22:13:24.123000"}
    assert '"name": "Bj\\u00f6rn"' in rows[4]["source_data"]
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["status"] == "success"
    assert outcome["records_written"] == len(events)


def test_enriched_debezium_transform_from_source_file_path(bizon):
    source = dict(SOURCE, source_file_path=str(PYTHON_DATA / "debezium_source.py"))
    transforms = [debezium_transform()]
    config = bizon.write("debezium.yml", pipeline("debezium", source, transforms=transforms))
    bizon.run("run", config, check=0)

    rows = bizon.read_ndjson("out.json")
    assert [row["source_data"] for row in rows] == [expected_row(e) for e in change_events()]
    first = json.loads(rows[0]["source_data"])
    assert first["__cluster"] == "prod-users-db"
    assert first["__event_timestamp"] == "2023-11-14 22:13:20.123000"
    assert [json.loads(row["source_data"])["__deleted"] for row in rows] == [False] * 4 + [True] * 2


def test_transforms_run_in_order_after_the_debezium_one(bizon):
    transforms = [
        debezium_transform(),
        {"label": "mask", "python": "data['email'] = data['email'].split('@')[0] + '@***'"},
        {"label": "drop-metadata", "python": "data = {k: v for k, v in data.items() if not k.startswith('_')}"},
    ]
    config = bizon.write("debezium.yml", pipeline("debezium", SOURCE, transforms=transforms))
    bizon.run("run", config, "--custom-source", PYTHON_DATA / "debezium_source.py", check=0)

    rows = bizon.read_ndjson("out.json")
    assert [json.loads(row["source_data"]) for row in rows][:2] == [
        {"id": 1, "name": "Zoë", "email": "zoe@***"},
        {"id": 2, "name": "Björn", "email": "bjorn@***"},
    ]
