"""Records of every shape a custom source may return, for the unit tests of python_source.cc's
conversion (PythonSourceTest.ConversionMatchesTheReference): each get() also stores what the
reference, _bizon_runtime.iteration_columns, makes of the same iteration in REFERENCE."""

from datetime import datetime, timedelta, timezone
from typing import List

import _bizon_runtime
from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord
from bizon.source.source import AbstractSource

REFERENCE = {}


class Tagged(dict):
    pass


class Count(int):
    pass


class Ratio(float):
    pass


class TaggedRecord(SourceRecord):
    pass


class MixedRecordsConfig(SourceConfig):
    pass


class MixedRecordsSource(AbstractSource):
    @staticmethod
    def streams() -> List[str]:
        return ["mixed", "subclassed"]

    @staticmethod
    def get_config_class():
        return MixedRecordsConfig

    def get_authenticator(self):
        return None

    def check_connection(self):
        return True, None

    def get_total_records_count(self):
        return None

    def get(self, pagination: dict = None):
        paris = timezone(timedelta(hours=1))
        records = [
            SourceRecord(id=1, data={"a": 1.5, "u": "é\u2028😀", "c": "\x00\x1f\"\\\n\x7f", "n": None,
                                     "l": [1, (2, 3.0)], 10**30: True, -2**70: [], "f": 1e16, "z": -0.0,
                                     "inf": float("inf"), "nan": float("nan"), 2.5: False, None: 0}),
            SourceRecord(id="naive", data={"when": 1}, timestamp=datetime(2024, 1, 2, 3, 4, 5, 6)),
            SourceRecord(id="utc", data={}, timestamp=datetime(1969, 12, 31, 23, 59, 59, 999999,
                                                                tzinfo=timezone.utc)),
            SourceRecord(id="paris", data={"k": "v"}, timestamp=datetime(2024, 1, 1, tzinfo=paris),
                         destination_id="elsewhere"),
            SourceRecord(id="subclass-in-data", data={"d": Tagged(k=1), "s": [Tagged()]},
                         timestamp=1700000000.5),
            SourceRecord(id="number-subclasses", data={"i": Count(7), "f": Ratio(2.5), "t": (Count(1),)},
                         timestamp="2024-05-01T00:00:00Z", destination_id=""),
            SourceRecord(id="dict-subclass", data=Tagged(x=[1, 2]),
                         timestamp=datetime(9999, 12, 31, 23, 59, 59, 999999)),
            SourceRecord(id=10**20, data={"deep": [[[[{"x": "y"}]]]]},
                         timestamp=datetime(1, 1, 1, tzinfo=timezone.utc)),
        ]
        records[6].timestamp = datetime(2000, 2, 29, 12, 0, 0, 1, tzinfo=timezone.utc)
        if self.config.stream == "subclassed":
            records.append(TaggedRecord(id="tagged", data={"t": 1}, timestamp=datetime(2024, 1, 1)))
        iteration = SourceIteration(records=records, next_pagination={}, next_state={"done": True})
        REFERENCE[self.config.stream] = _bizon_runtime.iteration_columns(iteration, "get")
        return iteration
