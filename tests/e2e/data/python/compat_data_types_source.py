"""Compat case (tests/e2e/test_compat_sources.py): record data holding what JSON has no type for
but the original 0.6.4 writes (datetimes, dates, times, UUIDs, enums, dataclasses, bytes,
Decimals), non-string keys, and an integer past 64 bits. Same records from the original and from
ours."""

import dataclasses
import enum
import uuid
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import List

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord

from compat_base import PlainSource


class Colour(enum.Enum):
    RED = 1
    BLUE = "blue"


@dataclasses.dataclass
class Point:
    x: int
    label: str


class DataTypesSource(PlainSource):
    @staticmethod
    def streams() -> List[str]:
        return ["typed"]

    @staticmethod
    def get_config_class():
        return SourceConfig

    def get(self, pagination: dict = None) -> SourceIteration:
        rows = {
            "datetimes": {"aware": datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=timezone.utc),
                          "offset": datetime(2024, 5, 6, 7, 8, 9, tzinfo=timezone(timedelta(hours=2))),
                          "naive": datetime(2024, 5, 6, 7, 8, 9), "date": date(2024, 2, 29), "time": time(23, 59, 1)},
            "uuid": {"id": uuid.UUID("12345678-1234-5678-1234-567812345678")},
            "enum": {"red": Colour.RED, "blue": Colour.BLUE, "in_list": [Colour.RED]},
            "dataclass": {"point": Point(3, "p"), "points": [Point(1, "a")]},
            "bytes": {"raw": b"caf\xc3\xa9", "array": bytearray(b"ok")},
            "decimal": {"whole": Decimal("42"), "negative": Decimal("-7"), "fraction": Decimal("12.50"),
                        "exponent": Decimal("1.5E+3")},
            "keys": {1: "int", 2.5: "float", False: "bool", None: "none"},
            "big_int": {"value": 2 ** 70},
        }
        return SourceIteration(next_pagination={}, records=[
            SourceRecord(id=name, data=data) for name, data in rows.items()])
