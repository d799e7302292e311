"""A Debezium topic merged into PostgreSQL with no user transform: `change_format: debezium`
takes each change event's after image as the row (the before image of a delete, which deletes
the key), merged by primary key, so the table ends equal to the source table the events describe.

The events are produced into the real broker as Debezium's JSON converter writes them, keyed by
the row's key (so one key's changes stay in order in one partition); some carry the converter's
schema wrapper ({"schema", "payload"}), as with `value.converter.schemas.enable=true`.
"""

from __future__ import annotations

import random

from conftest_kafka import kafka  # noqa: F401 (fixture)
from conftest_postgres import pg, postgres, postgres_pipeline  # noqa: F401 (fixtures)
from support.kafka import kafka_source
from support.processes import spawn, stop, wait_for

COLUMNS = [{"name": "id", "type": "integer"}, {"name": "name", "type": "string"},
           {"name": "email", "type": "string"}]


def change_events(keys: int, rounds: int, rng: random.Random):
    """Debezium events for `keys` rows over `rounds` rounds of changes, and the table they leave:
    (key, event) pairs in production order, and {id: row}."""
    table: dict[int, dict] = {}
    events = []
    for round_number in range(rounds):
        for key in range(keys):
            before = table.get(key)
            if before is not None and rng.random() < 0.2:
                # Default replica identity: a delete's before image holds only the key.
                event = {"op": "d", "before": {"id": key, "name": None, "email": None},
                         "after": None}
                del table[key]
            elif before is None and (round_number == 0 or rng.random() < 0.5):
                row = {"id": key, "name": f"user-{key}-{round_number}",
                       "email": f"u{key}@example.com"}
                event = {"op": "c", "before": None, "after": row}
                table[key] = row
            elif before is not None:
                row = dict(before, name=f"user-{key}-{round_number}")
                event = {"op": "u", "before": before, "after": row}
                table[key] = row
            else:
                continue
            event["source"] = {"name": "prod_users_db", "ts_ms": 1_700_000_000_000 + len(events)}
            event["ts_ms"] = event["source"]["ts_ms"]
            if len(events) % 3 == 0:
                event = {"schema": {"type": "struct", "name": "users.Envelope"}, "payload": event}
            events.append(({"id": key}, event))
    return events, table


def test_a_debezium_topic_merges_into_a_table_equal_to_the_source(bizon, pg, kafka):
    events, source_table = change_events(keys=300, rounds=4, rng=random.Random(7))
    topic = kafka.create_topic(partitions=2)
    kafka.produce(topic, [event for _, event in events], keys=[key for key, _ in events])

    destination = pg.destination("users", unnest=True, write_disposition="merge",
                                 primary_key=["id"], change_format="debezium",
                                 record_schemas=[{"destination_id": "users",
                                                  "record_schema": COLUMNS}])
    source = kafka_source(kafka, {topic: "users"})
    config = bizon.write("p.yml", postgres_pipeline(pg, "debezium", source, destination,
                                                     engine={"runner": {"type": "stream"}}))
    process = spawn(bizon, "run", config)

    def table():
        if not pg.table_exists("users"):
            return None
        rows = pg.query(f'SELECT id, name, email FROM "{pg.destination_schema}".users')
        return {row["id"]: row for row in rows}

    try:
        wait_for(lambda: table() == source_table, timeout=90, what="the table equal to the source")
    finally:
        stderr = stop(process)
    rows = pg.query(f'SELECT id FROM "{pg.destination_schema}".users')
    assert len(rows) == len(source_table) == len({row["id"] for row in rows})
    assert "Traceback" not in stderr
    assert any(event["op"] == "d" if "op" in event else event["payload"]["op"] == "d"
               for _, event in events)
