"""A custom source whose streams each break the contract one way (unit tests only)."""

import time
from typing import List

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord
from bizon.source.source import AbstractSource


class MisbehavingConfig(SourceConfig):
    pass


class HelperNotASource:
    """Not a source: ignored by discovery."""


class MisbehavingSource(AbstractSource):
    @staticmethod
    def streams() -> List[str]:
        return ["raises", "wrong_type", "bad_record", "bad_pagination", "hangs", "unserialisable"]

    @staticmethod
    def get_config_class():
        return MisbehavingConfig

    def get_authenticator(self):
        return None

    def check_connection(self):
        if self.config.stream == "raises":
            return False, "the fake API is down"
        return True, None

    def get_total_records_count(self):
        if self.config.stream == "raises":
            raise RuntimeError("no count today")
        return "many"

    def get(self, pagination: dict = None):
        stream = self.config.stream
        if stream == "raises":
            return self._fetch_page()
        if stream == "wrong_type":
            return {"records": [], "next_pagination": {}}
        if stream == "bad_record":
            iteration = SourceIteration(next_pagination={}, records=[])
            iteration.records.append({"id": 1})
            return iteration
        if stream == "bad_pagination":
            return SourceIteration(next_pagination={"since": time}, records=[])
        if stream == "hangs":
            while True:
                pass
        if stream == "unserialisable":
            return SourceIteration(next_pagination={}, records=[SourceRecord(id="x", data={"when": time})])
        raise AssertionError(stream)

    def _fetch_page(self):
        raise ValueError("API answered 500")
