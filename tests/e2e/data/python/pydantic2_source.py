"""A custom source written against the original bizon with pydantic 2 idioms: ConfigDict with
extra="allow", a field_validator that clamps a value, and Field(ge=...) constraints. Each record
carries the validated config values, so a test sees what the validator made of them."""

from typing import List, Tuple

from pydantic import ConfigDict, Field, field_validator

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord
from bizon.source.source import AbstractSource


class ClampedSourceConfig(SourceConfig):
    model_config = ConfigDict(extra="allow")

    count: int = Field(4, ge=1, le=1000, description="Records to emit")
    ratio: float = Field(0.5, description="Clamped into [0, 1] by the validator")

    @field_validator("ratio")
    @classmethod
    def clamp_ratio(cls, value: float) -> float:
        return min(max(value, 0.0), 1.0)


class ClampedSource(AbstractSource):
    @staticmethod
    def streams() -> List[str]:
        return ["values"]

    @staticmethod
    def get_config_class():
        return ClampedSourceConfig

    def get_authenticator(self):
        return None

    def check_connection(self) -> Tuple[bool, str]:
        return True, None

    def get_total_records_count(self) -> int:
        return self.config.count

    def get(self, pagination: dict = None) -> SourceIteration:
        import pydantic

        extra = self.config.model_extra or {}
        records = [
            SourceRecord(
                id=index,
                data={"index": index, "ratio": self.config.ratio, "label": extra.get("label"),
                      "pydantic": pydantic.VERSION},
            )
            for index in range(self.config.count)
        ]
        return SourceIteration(next_pagination={}, records=records)
