"""A custom source that emits the records of a JSON file, a page at a time, as they are: any
shape, so that tests can make a field appear, change type or go missing mid-stream (schema
contracts). Record ids are their positions in the file."""

import json
from typing import List

from pydantic import Field

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord
from bizon.source.source import AbstractSource


class ListedRecordsConfig(SourceConfig):
    records_file: str = Field(..., description="A JSON file holding a list of objects")
    page_size: int = Field(2, description="Records per page")


class ListedRecordsSource(AbstractSource):
    def __init__(self, config: ListedRecordsConfig):
        super().__init__(config)
        self.config: ListedRecordsConfig = config
        with open(config.records_file) as file:
            self.records = json.load(file)

    @staticmethod
    def streams() -> List[str]:
        return ["records"]

    @staticmethod
    def get_config_class():
        return ListedRecordsConfig

    def get_authenticator(self):
        return None

    def check_connection(self):
        return True, None

    def get_total_records_count(self):
        return len(self.records)

    def get(self, pagination: dict = None) -> SourceIteration:
        start = (pagination or {}).get("offset", 0)
        page = self.records[start : start + self.config.page_size]
        end = start + len(page)
        return SourceIteration(
            next_pagination={"offset": end} if end < len(self.records) else {},
            records=[SourceRecord(id=str(start + i), data=record) for i, record in enumerate(page)],
        )

    def get_records_after(self, source_state, pagination: dict = None) -> SourceIteration:
        # Every run reads the whole file: enough for tests of what a load does to its table.
        return self.get(pagination)
