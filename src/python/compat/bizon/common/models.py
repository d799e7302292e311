"""The top-level `streams:` entries a source's set_streams_config() receives, and a sync's
metadata. BizonConfig, the whole pipeline's model, is not provided: the binary validates the
pipeline (`bizon config validate`)."""

from enum import Enum
from typing import Any, List, Optional

from bizon._model import BaseModel, ExtraAllowModel, ExtraForbidModel, Field
from bizon._original import refuse_names
from bizon.source.config import SourceSyncModes

# Destinations whose full refresh appends instead of replacing, so a reset cannot run on them.
RESET_UNSUPPORTED_DESTINATIONS = {"bigquery_streaming"}
BIGQUERY_DESTINATIONS = {"bigquery", "bigquery_streaming", "bigquery_streaming_v2"}


class StreamSourceConfig(ExtraAllowModel):
    """`streams[].source`: any keys; these three are named."""

    name: Optional[str] = Field(None, description="Stream identifier within the source")
    topic: Optional[str] = Field(None, description="Kafka topic")
    endpoint: Optional[str] = Field(None, description="API endpoint path")


class BigQueryColumnType(str, Enum):
    BOOLEAN = "BOOLEAN"
    BYTES = "BYTES"
    DATE = "DATE"
    DATETIME = "DATETIME"
    FLOAT = "FLOAT"
    FLOAT64 = "FLOAT64"
    GEOGRAPHY = "GEOGRAPHY"
    INTEGER = "INTEGER"
    INT64 = "INT64"
    NUMERIC = "NUMERIC"
    BIGNUMERIC = "BIGNUMERIC"
    JSON = "JSON"
    RECORD = "RECORD"
    STRING = "STRING"
    TIME = "TIME"
    TIMESTAMP = "TIMESTAMP"


class BigQueryColumnMode(str, Enum):
    NULLABLE = "NULLABLE"
    REQUIRED = "REQUIRED"
    REPEATED = "REPEATED"


class StreamColumn(BaseModel):
    """One column of `streams[].destination.record_schema`: the keys and enums of the original's
    BigQueryColumn (whose module, a destination's, is not provided)."""

    name: str = Field(..., description="Column name")
    type: BigQueryColumnType = Field(..., description="Column type")
    mode: BigQueryColumnMode = Field(..., description="NULLABLE, REQUIRED or REPEATED")
    description: Optional[str] = Field(None, description="Column description")
    default_value_expression: Optional[str] = Field(None, description="Default value expression")


class StreamDestinationConfig(ExtraAllowModel):
    """`streams[].destination`: the table and its schema; other keys kept."""

    table_id: str = Field(..., description="Destination identifier (project.dataset.table)")
    record_schema: Optional[List[StreamColumn]] = Field(None, description="Columns of the table")
    clustering_keys: Optional[List[str]] = Field(None, description="Clustering keys of the table")


class StreamConfig(ExtraForbidModel):
    """One `streams:` entry."""

    name: str = Field(..., description="Logical name of the stream")
    source: StreamSourceConfig = Field(..., description="Source-side routing")
    destination: StreamDestinationConfig = Field(..., description="Destination table and schema")


class SyncMetadata(BaseModel):
    """Who and what a sync is."""

    name: str
    job_id: str
    job_name: Optional[str] = None
    source_name: str
    stream_name: str
    sync_mode: SourceSyncModes
    destination_name: str
    destination_alias: str
    reset: bool = False

    @classmethod
    def from_bizon_config(cls, job_id: str, config: Any) -> "SyncMetadata":
        """From a pipeline model with the original's attributes; a reset is materialised as a
        full refresh."""
        source = config.source
        sync_mode = source.sync_mode
        if source.reset and sync_mode == SourceSyncModes.INCREMENTAL:
            sync_mode = SourceSyncModes.FULL_REFRESH
        return cls(name=config.name, job_id=job_id, job_name=getattr(config, "job_name", None) or config.name,
                   source_name=source.name, stream_name=source.stream, sync_mode=sync_mode,
                   destination_name=config.destination.name, destination_alias=config.destination.alias,
                   reset=source.reset)


__getattr__ = refuse_names(__name__, {
    "BizonConfig": "the binary validates the whole pipeline itself (`bizon config validate`, "
                   "`bizon config schema`)",
})
