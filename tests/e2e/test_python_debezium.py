"""The README's `debezium` transform on Debezium-shaped records, through `bizon run`.

The records come from a custom Python source (data/python/debezium_source.py) emitting
{"value": {"op", "before", "after", "source": {"name", "ts_ms"}}, "partition", "offset"}, as the
kafka source delivers Debezium messages; they go to the file destination, whose source_data must
be the bytes the original writes: json.dumps with its defaults (ASCII escapes, spaced separators).
"""

from __future__ import annotations

import json
from datetime import datetime

from test_python_support import DATA, change_events, needs_custom_source, needs_transforms, pipeline

# Verbatim from the README's Transforms section.
SEED_DEBEZIUM = """\
from datetime import datetime

cluster = data['value']['source']['name'].replace('_', '-')
partition = data['partition']
offset = data['offset']
kafka_timestamp = datetime.utcfromtimestamp(
    data['value']['source']['ts_ms'] / 1000
).strftime('%Y-%m-%d %H:%M:%S.%f')

deleted = False
if data['value']['op'] == 'd':
    data = data['value']['before']
    deleted = True
"""

# The same, finished the way such a transform is used: the metadata lands in the record.
ENRICHED_DEBEZIUM = SEED_DEBEZIUM.replace(
    "deleted = False\nif data['value']['op'] == 'd':\n    data = data['value']['before']\n    deleted = True\n",
    """deleted = False
if data['value']['op'] == 'd':
    data = data['value']['before']
    deleted = True
else:
    data = data['value']['after']

data['_cluster'] = cluster
data['_partition'] = partition
data['_offset'] = offset
data['_kafka_timestamp'] = kafka_timestamp
data['_deleted'] = deleted
""",
)

SOURCE = {"name": "debezium_cdc", "stream": "users", "page_size": 4}

pytestmark = [needs_transforms, needs_custom_source]


def expected_seed(event: dict) -> str:
    data = event["value"]["before"] if event["value"]["op"] == "d" else event
    return json.dumps(data)


def expected_enriched(event: dict) -> str:
    value = event["value"]
    data = dict(value["before"] if value["op"] == "d" else value["after"])
    data["_cluster"] = value["source"]["name"].replace("_", "-")
    data["_partition"] = event["partition"]
    data["_offset"] = event["offset"]
    data["_kafka_timestamp"] = datetime.utcfromtimestamp(value["source"]["ts_ms"] / 1000).strftime(
        "%Y-%m-%d %H:%M:%S.%f"
    )
    data["_deleted"] = value["op"] == "d"
    return json.dumps(data)


def test_seed_debezium_transform_through_a_custom_source(bizon):
    config = bizon.write("debezium.yml", pipeline("debezium", SOURCE, [{"label": "debezium", "python": SEED_DEBEZIUM}]))
    bizon.run("run", config, "--custom-source", DATA / "debezium_source.py", "--result-json", "result.json", check=0)

    rows = bizon.read_ndjson("out.json")
    events = change_events()
    assert [row["source_record_id"] for row in rows] == [f"{e['partition']}-{e['offset']}" for e in events]
    assert [row["source_data"] for row in rows] == [expected_seed(e) for e in events]
    # Deletes became the row before the change; everything else is untouched, ASCII-escaped.
    assert json.loads(rows[4]["source_data"]) == {"id": 2, "name": "Björn", "email": "bjorn@example.com"}
    assert '"name": "Bj\\u00f6rn"' in rows[4]["source_data"]
    outcome = json.loads((bizon.cwd / "result.json").read_text())
    assert outcome["status"] == "success"
    assert outcome["records_written"] == len(events)


def test_enriched_debezium_transform_from_source_file_path(bizon):
    source = dict(SOURCE, source_file_path=str(DATA / "debezium_source.py"))
    config = bizon.write("debezium.yml", pipeline("debezium", source, [{"label": "debezium", "python": ENRICHED_DEBEZIUM}]))
    bizon.run("run", config, check=0)

    rows = bizon.read_ndjson("out.json")
    assert [row["source_data"] for row in rows] == [expected_enriched(e) for e in change_events()]
    first = json.loads(rows[0]["source_data"])
    assert first["_cluster"] == "prod-users-db"
    assert first["_kafka_timestamp"] == "2023-11-14 22:13:20.123000"
    assert [json.loads(row["source_data"])["_deleted"] for row in rows] == [False] * 4 + [True] * 2


def test_transforms_run_in_order_after_the_debezium_one(bizon):
    transforms = [
        {"label": "debezium", "python": ENRICHED_DEBEZIUM},
        {"label": "mask", "python": "data['email'] = data['email'].split('@')[0] + '@***'"},
        {"label": "drop-metadata", "python": "data = {k: v for k, v in data.items() if not k.startswith('_')}"},
    ]
    config = bizon.write("debezium.yml", pipeline("debezium", SOURCE, transforms))
    bizon.run("run", config, "--custom-source", DATA / "debezium_source.py", check=0)

    rows = bizon.read_ndjson("out.json")
    assert [json.loads(row["source_data"]) for row in rows][:2] == [
        {"id": 1, "name": "Zoë", "email": "zoe@***"},
        {"id": 2, "name": "Björn", "email": "bjorn@***"},
    ]
