"""`engine.runner` settings and a run's outcome."""

from enum import Enum
from typing import Optional

from bizon._model import BaseModel, Field
from bizon.engine.pipeline.models import PipelineReturnStatus


class RunnerTypes(str, Enum):
    THREAD = "thread"
    PROCESS = "process"
    STREAM = "stream"


class LoggerLevel(str, Enum):
    TRACE = "TRACE"
    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"
    CRITICAL = "CRITICAL"


class RunnerFuturesConfig(BaseModel):
    max_workers: Optional[int] = Field(2, description="Workers of the runner")
    consumer_start_delay: Optional[int] = Field(2, description="Seconds before the consumer starts")
    is_alive_check_interval: Optional[int] = Field(2, description="Seconds between liveness checks")


class RunnerConfig(BaseModel):
    type: RunnerTypes = Field(RunnerTypes.THREAD, description="Runner of the pipeline")
    config: Optional[RunnerFuturesConfig] = Field(default_factory=RunnerFuturesConfig, description="Runner settings")
    log_level: LoggerLevel = Field(LoggerLevel.INFO, description="Logging level")


class RunnerStatus(BaseModel):
    """A run's outcome: producer and consumer statuses, or the stream runner's one status."""

    producer: Optional[PipelineReturnStatus] = None
    consumer: Optional[PipelineReturnStatus] = None
    stream: Optional[PipelineReturnStatus] = None
    job_id: Optional[str] = None

    def __init__(self, **data):
        super().__init__(**data)
        if self.stream is None and (self.producer is None or self.consumer is None):
            raise ValueError("Either both producer and consumer must be set, or stream must be set")

    @property
    def is_success(self):
        if self.stream is not None:
            return self.stream == PipelineReturnStatus.SUCCESS
        return self.producer == PipelineReturnStatus.SUCCESS and self.consumer == PipelineReturnStatus.SUCCESS

    def to_string(self):
        verdict = "Success" if self.is_success else "Failure"
        if self.stream is not None:
            return f"Pipeline finished with status {verdict} (Stream: {self.stream.value})"
        return (f"Pipeline finished with status {verdict} "
                f"(Producer: {self.producer.value}, Consumer: {self.consumer.value})")
