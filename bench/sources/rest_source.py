"""Benchmark source for the original in the `rest` case: pages of JSON from the loopback
server (`bench/servers/paged_server.py`) fetched with the source's `requests` session.

GET <base_url>/items?offset=0&limit=<page_size>, then follow the page's "next" URL until it is
null. Record id = the record's "id", payload = the record as received. This is what a user of
the original writes for a paged JSON API (connectors spec 5.1, URL pagination).
"""

from typing import List, Optional, Tuple

from pydantic import Field

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord
from bizon.source.source import AbstractSource


class RestBenchConfig(SourceConfig):
    base_url: str = Field(..., description="Server root, e.g. http://127.0.0.1:8080")
    page_size: int = Field(1000, ge=1, description="Records per page (limit).")


class RestBenchSource(AbstractSource):
    def __init__(self, config: RestBenchConfig):
        super().__init__(config)
        self.config: RestBenchConfig = config

    @staticmethod
    def streams() -> List[str]:
        return ["items"]

    @staticmethod
    def get_config_class():
        return RestBenchConfig

    def get_authenticator(self):
        return None

    def check_connection(self) -> Tuple[bool, Optional[str]]:
        return True, None

    def get_total_records_count(self) -> Optional[int]:
        return None

    def get(self, pagination: dict = None) -> SourceIteration:
        url = (pagination or {}).get("next") or (
            f"{self.config.base_url.rstrip('/')}/items?offset=0&limit={self.config.page_size}"
        )
        response = self.session.get(url)
        response.raise_for_status()
        page = response.json()
        records = [SourceRecord(id=str(item["id"]), data=item) for item in page["data"]]
        return SourceIteration(records=records, next_pagination={"next": page["next"]} if page["next"] else {})
