"""A custom source that imports `humps` (PyPI: pyhumps), which Debian does not ship and bizon
does not bundle: it only loads from the user's virtualenv. Records carry camelized keys."""

from typing import List, Tuple

import humps

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord
from bizon.source.source import AbstractSource

ROWS = [{"row_id": 1, "first_name": "ada"}, {"row_id": 2, "first_name": "grace"}]


class HumpsSource(AbstractSource):
    @staticmethod
    def streams() -> List[str]:
        return ["people"]

    @staticmethod
    def get_config_class():
        return SourceConfig

    def get_authenticator(self):
        return None

    def check_connection(self) -> Tuple[bool, str]:
        return True, None

    def get_total_records_count(self) -> int:
        return len(ROWS)

    def get(self, pagination: dict = None) -> SourceIteration:
        return SourceIteration(
            next_pagination={},
            records=[SourceRecord(id=row["row_id"], data=humps.camelize(row)) for row in ROWS],
        )
