"""Benchmark source: the records of our built-in `generator` source, made in memory by Python.

Record i is {"id": i, "name": "record-<i>", "updated_at": start + i * interval_ms,
"value": (i * 7919) % 1000[, "padding": "x" * payload_bytes]}, with id str(i), in pages of
page_size records paginated by {"offset": n}. These are byte for byte the payloads of
`bizon run` with `source.name: generator`, `stream: records`, so the same YAML runs it
with `--custom-source bench/sources/generator_source.py` on both implementations.

Written against the original's source contract (connectors spec 4.2 and 5.1): one class, a
config class extending SourceConfig, `get()` returning `{}` as next pagination when done.
"""

from datetime import datetime, timedelta, timezone
from typing import List, Optional, Tuple

from pydantic import Field

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord
from bizon.source.source import AbstractSource


class GeneratorBenchConfig(SourceConfig):
    count: int = Field(1000, ge=0, description="How many records the stream holds.")
    page_size: int = Field(1000, ge=1, description="Records per iteration.")
    payload_bytes: int = Field(0, ge=0, description="Extra padding characters in each record.")
    start: str = Field("2024-01-01T00:00:00Z", description="updated_at of record 0 (UTC).")
    interval_ms: int = Field(1, ge=1, description="Milliseconds between consecutive updated_at.")


class GeneratorBenchSource(AbstractSource):
    def __init__(self, config: GeneratorBenchConfig):
        super().__init__(config)
        self.config: GeneratorBenchConfig = config
        self.start = datetime.fromisoformat(config.start.replace("Z", "+00:00")).astimezone(timezone.utc)
        self.padding = "x" * config.payload_bytes

    @staticmethod
    def streams() -> List[str]:
        return ["records"]

    @staticmethod
    def get_config_class():
        return GeneratorBenchConfig

    def get_authenticator(self):
        return None

    def check_connection(self) -> Tuple[bool, Optional[str]]:
        return True, None

    def get_total_records_count(self) -> Optional[int]:
        return self.config.count

    def get(self, pagination: dict = None) -> SourceIteration:
        offset = (pagination or {}).get("offset", 0)
        stop = min(self.config.count, offset + self.config.page_size)
        interval = timedelta(milliseconds=self.config.interval_ms)
        records = []
        for i in range(offset, stop):
            data = {
                "id": i,
                "name": f"record-{i}",
                "updated_at": (self.start + i * interval).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "value": (i * 7919) % 1000,
            }
            if self.padding:
                data["padding"] = self.padding
            records.append(SourceRecord(id=str(i), data=data))
        next_pagination = {"offset": stop} if stop < self.config.count else {}
        return SourceIteration(
            records=records, next_pagination=next_pagination, next_state={"max_id": stop - 1}
        )
