"""A full-refresh custom source in the original's documented style: offset pagination over a
fixed list of animals, `page_size` records per page, {} when done."""

from typing import List, Tuple

from pydantic import Field

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord
from bizon.source.source import AbstractSource

ANIMALS = [
    {"id": 1, "name": "bizon", "habitat": "prairie"},
    {"id": 2, "name": "élan", "habitat": "forêt"},
    {"id": 3, "name": "lynx", "habitat": "taïga"},
    {"id": 4, "name": "北极熊", "habitat": "arctic"},
    {"id": 5, "name": "wolf", "habitat": "tundra"},
]


class PaginatedSourceConfig(SourceConfig):
    page_size: int = Field(2, description="Records per page")


class PaginatedSource(AbstractSource):
    def __init__(self, config: PaginatedSourceConfig):
        super().__init__(config)
        self.config: PaginatedSourceConfig = config

    @staticmethod
    def streams() -> List[str]:
        return ["animals"]

    @staticmethod
    def get_config_class():
        return PaginatedSourceConfig

    def get_authenticator(self):
        return None

    def check_connection(self) -> Tuple[bool, str]:
        return True, None

    def get_total_records_count(self) -> int:
        return len(ANIMALS)

    def get(self, pagination: dict = None) -> SourceIteration:
        offset = (pagination or {}).get("offset", 0)
        page = ANIMALS[offset : offset + self.config.page_size]
        next_offset = offset + len(page)
        return SourceIteration(
            next_pagination={"offset": next_offset} if next_offset < len(ANIMALS) else {},
            records=[SourceRecord(id=animal["id"], data=animal) for animal in page],
        )
