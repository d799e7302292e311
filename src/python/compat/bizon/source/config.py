"""SourceConfig: the common `source:` keys every source's config class extends."""

from enum import Enum
from typing import Any, Optional

from bizon._model import BaseModel, Field
from bizon.source.auth.config import AuthConfig


class SourceSyncModes(str, Enum):
    FULL_REFRESH = "full_refresh"
    INCREMENTAL = "incremental"
    STREAM = "stream"


class APIConfig(BaseModel):
    retry_limit: int = Field(100, description="Retries before giving up on an API call")


class SourceConfig(BaseModel):
    name: str = Field(..., description="Name of the source")
    stream: str = Field(..., description="Stream to sync")
    source_file_path: Optional[str] = Field(None, description="Path of a custom source file")
    sync_mode: SourceSyncModes = Field(SourceSyncModes.FULL_REFRESH, description="full_refresh, incremental or stream")
    cursor_field: Optional[str] = Field(None, description="Handed to get_records_after as source_state.cursor_field")
    force_ignore_checkpoint: bool = Field(False, description="Restart from iteration 0")
    reset: bool = Field(False, description="Stream reset (incremental only)")
    authentication: Optional[AuthConfig] = Field(None, description="Authentication")
    max_iterations: Optional[int] = Field(None, description="Stop after this iteration index")
    api_config: APIConfig = Field(default_factory=lambda: APIConfig(retry_limit=10), description="API settings")
    init_pipeline: bool = Field(True, description="Kept for compatibility")
    http: Optional[Any] = Field(None, description="HTTP policy of the default session")
