"""Compat case (tests/e2e/test_compat_sources.py): records returned as plain dicts, which the
original's SourceIteration converts into SourceRecords: an int id, an ISO timestamp, a key the
record does not have (ignored), and a page mixing dicts and SourceRecords. Same records from the
original 0.6.4 and from ours."""

from datetime import datetime, timezone
from typing import List

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord

from compat_base import PlainSource


class DictRecordsSource(PlainSource):
    @staticmethod
    def streams() -> List[str]:
        return ["rows"]

    @staticmethod
    def get_config_class():
        return SourceConfig

    def get_total_records_count(self):
        return 4

    def get(self, pagination: dict = None) -> SourceIteration:
        if not pagination:
            return SourceIteration(next_pagination={"page": 2}, records=[
                {"id": 1, "data": {"name": "élan", "tags": ["a", "b"]}, "timestamp": "2024-03-01T10:00:00+00:00"},
                {"id": "two", "data": {"nested": {"n": 2}}, "timestamp": "2024-03-02T11:30:00+00:00",
                 "comment": "not a record field"},
            ])
        return SourceIteration(next_pagination={}, records=[
            SourceRecord(id="3", data={"from": "model"}, timestamp=datetime(2024, 3, 3, tzinfo=timezone.utc)),
            {"id": 4, "data": {"from": "dict"}, "timestamp": datetime(2024, 3, 4, 8, 15, tzinfo=timezone.utc)},
        ])
