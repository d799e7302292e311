"""A custom source that emits Debezium change events as the kafka source delivers them:
{"value": {"op", "before", "after", "source": {"name", "ts_ms"}}, "partition", "offset"}.
Used to run the README's `debezium` transform end to end (the generator source cannot emit
this shape)."""

from typing import List, Optional

from pydantic import Field

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord
from bizon.source.source import AbstractSource

# A neighbour module: bizon puts a custom source's directory on sys.path.
from debezium_events import change_events


class DebeziumSourceConfig(SourceConfig):
    page_size: int = Field(4, description="Events per page")
    destination_id: Optional[str] = Field(None, description="Routing key set on every record")


class DebeziumSource(AbstractSource):
    def __init__(self, config: DebeziumSourceConfig):
        super().__init__(config)
        self.config: DebeziumSourceConfig = config

    @staticmethod
    def streams() -> List[str]:
        return ["users"]

    @staticmethod
    def get_config_class():
        return DebeziumSourceConfig

    def get_authenticator(self):
        return None

    def check_connection(self):
        return True, None

    def get_total_records_count(self):
        return len(change_events())

    def get(self, pagination: dict = None) -> SourceIteration:
        events = change_events()
        start = (pagination or {}).get("offset", 0)
        page = events[start : start + self.config.page_size]
        end = start + len(page)
        return SourceIteration(
            next_pagination={"offset": end} if end < len(events) else {},
            records=[
                SourceRecord(
                    id=f"{event['partition']}-{event['offset']}",
                    data=event,
                    destination_id=self.config.destination_id,
                )
                for event in page
            ],
        )
