"""For tests/e2e/test_compat_api.py: a source file that imports the original's RunnerFactory
(as an Airflow-style wrapper does), which our binary refuses with the reason."""

from typing import List

from bizon.engine.engine import RunnerFactory  # noqa: F401
from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration

from compat_base import PlainSource


class WrapperSource(PlainSource):
    @staticmethod
    def streams() -> List[str]:
        return ["runs"]

    @staticmethod
    def get_config_class():
        return SourceConfig

    def get(self, pagination: dict = None) -> SourceIteration:
        return SourceIteration(next_pagination={}, records=[])
