"""A stream-mode custom source that routes each record to a table of its own, as a CDC source
routes topics: users to `shop.crm.users`, orders to `shop.crm.orders`. One page, then {}."""

from typing import List, Tuple

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord
from bizon.source.source import AbstractSource

CHANGES = [
    ("shop.crm.users", {"id": 1, "email": "ada@example.org"}),
    ("shop.crm.orders", {"id": 10, "user_id": 1, "total": 12.5}),
    ("shop.crm.users", {"id": 2, "email": "grace@example.org"}),
    ("shop.crm.orders", {"id": 11, "user_id": 2, "total": 7.0}),
]


class RoutedSource(AbstractSource):
    def __init__(self, config: SourceConfig):
        super().__init__(config)

    @staticmethod
    def streams() -> List[str]:
        return ["changes"]

    @staticmethod
    def get_config_class():
        return SourceConfig

    def get_authenticator(self):
        return None

    def check_connection(self) -> Tuple[bool, str]:
        return True, None

    def get_total_records_count(self) -> int:
        return len(CHANGES)

    def get(self, pagination: dict = None) -> SourceIteration:
        if pagination:
            return SourceIteration(next_pagination={}, records=[])
        return SourceIteration(
            next_pagination={"done": True},
            records=[
                SourceRecord(id=f"{table}:{data['id']}", data=data, destination_id=table)
                for table, data in CHANGES
            ],
        )
