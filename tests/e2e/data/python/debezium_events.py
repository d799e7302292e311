"""The change events debezium_source.py emits, shared with the end-to-end test that checks the
transformed output (plain Python: no bizon or pydantic import)."""

USERS = [
    {"id": 1, "name": "Zoë", "email": "zoe@example.com"},
    {"id": 2, "name": "Björn", "email": "bjorn@example.com"},
    {"id": 3, "name": "Chloé", "email": "chloe@example.com"},
]


def change_events():
    """Three creates, an update, then two deletes: six events over two partitions, shaped as the
    kafka source delivers Debezium messages."""
    changes = [("c", None, user) for user in USERS]
    changes.append(("u", USERS[0], dict(USERS[0], email="zoe@bizon.dev")))
    changes.append(("d", USERS[1], None))
    changes.append(("d", USERS[2], None))
    events = []
    for offset, (op, before, after) in enumerate(changes):
        events.append(
            {
                "value": {
                    "op": op,
                    "before": before,
                    "after": after,
                    "source": {"name": "prod_users_db", "ts_ms": 1700000000123 + offset * 1000},
                },
                "partition": offset % 2,
                "offset": 100 + offset,
            }
        )
    return events
