"""kafka (the test broker) -> bigquery_streaming and -> bigquery_streaming_v2 (the emulator) in
stream mode, from the original's example config kafka_to_bigquery_streaming.yml with what makes
it invalid taken out (`topic`, `table_id`) and its servers pointed at the test ones: JSON and
Avro topics, raw and unnest modes. Every message lands once in the table, and the run stays up
until it is stopped.

Under CI=true a missing broker or emulator fails these tests (their fixtures)."""

from __future__ import annotations

import json
import uuid

import pytest
import yaml

from conftest_google import bigquery_emulator  # noqa: F401 (fixture)
from conftest_kafka import confluent_avro, kafka, schema_registry  # noqa: F401 (fixtures)
from support.kafka import PLAINTEXT, group
from support.paths import SHAPES
from support.pipelines import runner
from support.processes import spawn, stop, wait_for_run

SHAPE = SHAPES / "kafka_to_bigquery_streaming.yml"
COUNT = 40
ORDER = {"type": "record", "name": "Order", "namespace": "shop",
         "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}


@pytest.fixture
def dataset(bigquery_emulator) -> str:
    name = f"bq_kafka_{uuid.uuid4().hex[:10]}"
    bigquery_emulator.create_dataset(name)
    return name


def example(kafka, emulator, dataset: str, destination: str, topic: str, table: str,
            registry=None, unnest: bool = False) -> dict:
    """The original's example, edited as little as the test servers need."""
    config = yaml.safe_load(SHAPE.read_text())
    source = config["source"]
    del source["topic"]  # Not a kafka option: the topics come from `topics`.
    source.update(sync_mode="stream", bootstrap_servers=kafka.bootstrap, group_id=group(),
                  consumer_timeout=2, consumer_config=dict(PLAINTEXT),
                  topics=[{"name": topic, "destination_id": table}])
    auth = source["authentication"]
    auth["params"] = {"username": "", "password": ""}  # A plaintext broker: unused.
    del auth["schema_registry_username"], auth["schema_registry_password"]
    if registry is None:
        source["message_encoding"] = "utf-8"
        del auth["schema_registry_url"]
    else:
        source["message_encoding"] = "avro"
        auth.update(schema_registry_type="confluent", schema_registry_url=registry.url)
    settings = config["destination"]["config"]
    config["destination"]["name"] = destination
    del settings["table_id"]  # Rejected: the table is the topic's destination_id.
    settings.update(project_id=emulator.project, dataset_id=dataset, buffer_size=0)
    if unnest:
        settings.update(unnest=True, record_schemas=[{
            "destination_id": table,
            "record_schema": [{"name": "id", "type": "INTEGER", "mode": "REQUIRED"},
                              {"name": "name", "type": "STRING", "mode": "NULLABLE"}]}])
        config["transforms"] = [{"label": "value", "python": "data = data['value']\n"}]
    config["engine"] = runner("stream")
    return config


@pytest.mark.parametrize("destination", ["bigquery_streaming", "bigquery_streaming_v2"])
@pytest.mark.parametrize("encoding", ["json", "avro"])
@pytest.mark.parametrize("mode", ["raw", "unnest"])
def test_a_topic_streams_into_the_table_once(bizon, kafka, schema_registry, bigquery_emulator,
                                              dataset, destination, encoding, mode):
    emulator = bigquery_emulator
    topic = kafka.create_topic(partitions=2)
    orders = [{"id": i, "name": f"order-{i}"} for i in range(COUNT)]
    registry = schema_registry if encoding == "avro" else None
    if registry is None:
        values = orders
    else:
        schema_id = registry.register(f"{topic}-value", ORDER)
        values = [confluent_avro(schema_id, ORDER, order) for order in orders]
    kafka.produce(topic, values, keys=[{"id": order["id"]} for order in orders])
    table = f"{emulator.project}.{dataset}.orders"
    config = bizon.write("p.yml", yaml.safe_dump(example(
        kafka, emulator, dataset, destination, topic, table, registry, unnest=mode == "unnest")))

    def landed() -> int:
        tables = emulator.bq("GET", f"datasets/{dataset}/tables").get("tables", [])
        if "orders" not in {t["tableReference"]["tableId"] for t in tables}:
            return 0
        return int(emulator.query(f"SELECT COUNT(*) AS n FROM `{table}`")[0]["n"])

    log = bizon.cwd / "run.log"
    process = spawn(bizon, "run", config, log=log)
    try:
        wait_for_run(process, log, lambda: process.poll() is not None or landed() >= COUNT,
                     timeout=120, interval=0.5, what=f"{COUNT} rows in {table}")
        assert process.poll() is None, f"the stream run ended by itself\n{log.read_text()}"
    except BaseException:
        process.kill()
        process.communicate(timeout=30)
        raise
    stop(process)
    assert "stopping on signal 15" in log.read_text()
    if mode == "raw":
        found = emulator.query(f"SELECT _source_record_id, _source_data FROM `{table}`")
        values = [json.loads(row["_source_data"])["value"] for row in found]
        assert all(row["_source_record_id"].startswith("partition_") for row in found)
    else:
        values = [{"id": int(row["id"]), "name": row["name"]}
                  for row in emulator.query(f"SELECT id, name FROM `{table}`")]
    assert sorted(values, key=lambda value: value["id"]) == orders
