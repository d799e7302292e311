"""SourceConfig: the common `source:` keys every source's config class extends."""

from enum import Enum
from typing import List, Optional, Tuple, Union

from bizon._model import BaseModel, Field
from bizon.source.auth.config import AuthConfig


class SourceSyncModes(str, Enum):
    FULL_REFRESH = "full_refresh"
    INCREMENTAL = "incremental"
    STREAM = "stream"


class APIConfig(BaseModel):
    retry_limit: Optional[int] = Field(100, description="Retries before giving up on an API call")


class HttpRetryConfig(BaseModel):
    """`source.http.retries`: the CappedRetry of the default session."""

    total: int = Field(10, description="Retries of one request, all causes together")
    backoff_factor: float = Field(2, description="Exponential backoff factor, in seconds")
    status_forcelist: List[int] = Field([429, 500, 502, 503, 504, 520, 522, 524],
                                        description="Statuses retried, with or without Retry-After")
    allowed_methods: List[str] = Field(["GET", "POST"], description="Methods that may be retried")
    retry_after_max: Optional[float] = Field(120, description="Longest Retry-After wait honoured, in seconds "
                                                              "(None: as sent)")


class HttpConfig(BaseModel):
    """`source.http`: the policy of the default session (unset: the legacy policy)."""

    timeout: Optional[Union[float, Tuple[float, float]]] = Field(
        (10, 60), description="(connect, read) timeout of a request that sets none, in seconds")
    retries: HttpRetryConfig = Field(default_factory=HttpRetryConfig, description="Retry policy")
    raise_for_status: bool = Field(True, description="Raise on 4xx/5xx responses")


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
    http: Optional[HttpConfig] = Field(None, description="HTTP policy of the default session (unset: legacy)")
