"""The shape of an error report."""

from enum import Enum
from typing import Optional

from bizon._model import ExtraForbidModel, Field


class FailureType(str, Enum):
    SYSTEM_ERROR = "SYSTEM_ERROR"
    CONFIG_ERROR = "CONFIG_ERROR"


class ErrorTraceMessage(ExtraForbidModel):
    message: str = Field(..., description="What went wrong, for the user")
    internal_message: Optional[str] = Field(None, description="The error that caused it")
    stack_trace: Optional[str] = Field(None, description="The traceback")
    failure_type: Optional[FailureType] = Field(None, description="Whose problem it is")
