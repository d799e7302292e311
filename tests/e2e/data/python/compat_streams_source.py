"""Compat case (tests/e2e/test_compat_sources.py): a stream source that reads the pipeline's
top-level `streams:` through set_streams_config(). What it received is kept in the process's
environment (the original calls it on an instance made for the purpose, of a class loaded anew
for each instance, not on the one that reads) and emitted with each page's records, routed to
`out`. Same records from the original 0.6.4 and from ours."""

import json
import os
from typing import List

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord

from compat_base import PlainSource


RECEIVED = "BIZON_COMPAT_STREAMS_RECEIVED"


class RoutedStreamSource(PlainSource):
    @staticmethod
    def streams() -> List[str]:
        return ["events"]

    @staticmethod
    def get_config_class():
        return SourceConfig

    def set_streams_config(self, streams: list) -> None:
        os.environ[RECEIVED] = json.dumps([
            {"name": stream.name, "class": type(stream).__name__, "topic": stream.source.topic,
             "endpoint": stream.source.endpoint, "extra": getattr(stream.source, "partitions", None),
             "table_id": stream.destination.table_id,
             "clustering_keys": stream.destination.clustering_keys,
             "columns": [[column.name, column.type, column.mode] for column in stream.destination.record_schema or []]}
            for stream in streams])

    def get(self, pagination: dict = None) -> SourceIteration:
        # The original's stream runner passes no pagination: count the calls instead.
        self.calls = getattr(self, "calls", 0) + 1
        received = json.loads(os.environ.get(RECEIVED, "null"))
        return SourceIteration(next_pagination={"call": self.calls}, records=[
            SourceRecord(id=f"call-{self.calls}", data={"received": received}, destination_id="out")])
