"""For tests/e2e/test_compat_api.py: a source that imports polars, one of the original's own
dependencies that our binary does not bundle. Without a python_env that has it, the run fails
and the error says what to do."""

from typing import List

import polars  # noqa: F401

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration

from compat_base import PlainSource


class NeedsPolarsSource(PlainSource):
    @staticmethod
    def streams() -> List[str]:
        return ["frames"]

    @staticmethod
    def get_config_class():
        return SourceConfig

    def get(self, pagination: dict = None) -> SourceIteration:
        return SourceIteration(next_pagination={}, records=[])
