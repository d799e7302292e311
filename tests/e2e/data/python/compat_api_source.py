"""Compat case (tests/e2e/test_compat_sources.py): what a source sees of the original's public
API beyond the source classes: the config models' defaults, the Cursor, the engine's enums and
runner models, the stream routing models, the error types. One record per topic. Same records
from the original 0.6.4 and from ours."""

from datetime import datetime, timezone
from typing import List

import requests

from bizon.common.errors.backoff import DefaultBackoffException
from bizon.common.errors.errors import ErrorTraceMessage, FailureType
from bizon.common.models import StreamConfig, SyncMetadata
from bizon.engine.backend.models import TABLE_STREAM_INFO, CursorStatus, JobStatus, generate_uuid
from bizon.engine.engine import replace_env_variables_in_config
from bizon.engine.pipeline.models import PipelineReturnStatus
from bizon.engine.runner.config import LoggerLevel, RunnerConfig, RunnerStatus, RunnerTypes
from bizon.source.auth.config import AuthConfig, AuthType
from bizon.source.callback import NoOpSourceCallback
from bizon.source.config import APIConfig, HttpConfig, SourceConfig, SourceSyncModes
from bizon.source.cursor import Cursor
from bizon.source.models import SourceIncrementalState, SourceIteration, SourceRecord

from compat_base import PlainSource


def _enum(cls):
    return {member.name: member.value for member in cls}


class ApiSource(PlainSource):
    @staticmethod
    def streams() -> List[str]:
        return ["values"]

    @staticmethod
    def get_config_class():
        return SourceConfig

    def get(self, pagination: dict = None) -> SourceIteration:
        config = self.config
        cursor = Cursor(source_name="api", stream_name="values", job_id="job-1", total_records=8)
        progress = [cursor.pagination, cursor.job_status.value]
        cursor.update_state({"page": 2}, 5)
        progress += [cursor.pagination, cursor.job_status.value, cursor.rows_fetched, cursor.percentage_fetched,
                     cursor.avg_records_per_iteration, cursor.is_finished, cursor.source_full_name]
        cursor.update_state({}, 3)
        progress += [cursor.job_status.value, cursor.is_finished, cursor.iteration]
        try:
            cursor.pagination
        except ValueError as error:
            progress.append(str(error))
        resumed = Cursor.from_db("api", "values", "job-2", 10, 4, 40, {"page": 5})
        progress += [resumed.job_id, resumed.pagination, resumed.iteration]

        state = SourceIncrementalState(last_run=datetime(2024, 1, 1), state={"k": 1})
        stream = StreamConfig(name="users", source={"topic": "t.users", "partition_hint": 3},
                              destination={"table_id": "p.d.users", "clustering_keys": ["id"], "record_schema": [
                                  {"name": "id", "type": "INTEGER", "mode": "REQUIRED"},
                                  {"name": "email", "type": "STRING", "mode": "NULLABLE", "description": "e"}]})
        sync = SyncMetadata(name="n", job_id="j", source_name="s", stream_name="st", sync_mode="incremental",
                            destination_name="file", destination_alias="file")
        response = requests.Response()
        response.status_code = 503
        response._content = b"busy"
        response.url = "http://api.example/x"
        request = requests.Request("GET", "http://api.example/x").prepare()
        error = DefaultBackoffException(request=request, response=response)
        env = replace_env_variables_in_config({"a": {"b": "BIZON_ENV_COMPAT_SET"}, "c": "BIZON_ENV_COMPAT_UNSET",
                                               "d": "plain"})

        values = {
            "source_config": {"sync_mode": config.sync_mode.value, "retry_limit": config.api_config.retry_limit,
                              "http": config.http, "max_iterations": config.max_iterations,
                              "force_ignore_checkpoint": config.force_ignore_checkpoint, "reset": config.reset,
                              "init_pipeline": config.init_pipeline, "authentication": config.authentication,
                              "default_api_config": APIConfig().retry_limit},
            "http_defaults": {"timeout": list(HttpConfig().timeout), "total": HttpConfig().retries.total,
                              "raise_for_status": HttpConfig().raise_for_status,
                              "retry_after_max": HttpConfig().retries.retry_after_max},
            "auth_config": {"type": AuthConfig(type="bearer", params={"token": "t"}).type.value,
                            "params": type(AuthConfig(type="basic", params={"username": "u"}).params).__name__,
                            "types": _enum(AuthType)},
            "cursor": progress,
            "enums": {"job": _enum(JobStatus), "cursor": _enum(CursorStatus), "pipeline": _enum(PipelineReturnStatus),
                      "runner": _enum(RunnerTypes), "log": _enum(LoggerLevel), "sync": _enum(SourceSyncModes),
                      "failure": _enum(FailureType)},
            "runner": {"default": [RunnerConfig().type.value, RunnerConfig().config.max_workers,
                                   RunnerConfig().log_level.value],
                       "stream": RunnerStatus(stream="success").to_string(),
                       "split": RunnerStatus(producer="success", consumer="source_error").to_string(),
                       "split_success": RunnerStatus(producer="success", consumer="success").is_success},
            "state": {"last_run": state.last_run.isoformat(), "state": state.state, "cursor_field": state.cursor_field},
            "streams": {"name": stream.name, "topic": stream.source.topic, "extra": stream.source.partition_hint,
                        "table_id": stream.destination.table_id, "keys": stream.destination.clustering_keys,
                        "columns": [[column.name, column.type.value, column.mode.value, column.description, str(column.type)]
                                    for column in stream.destination.record_schema]},
            "sync_metadata": {"sync_mode": sync.sync_mode.value, "reset": sync.reset, "job_name": sync.job_name},
            "errors": {"backoff": str(error), "is_http_error": isinstance(error, requests.exceptions.HTTPError),
                       "trace": ErrorTraceMessage(message="m", failure_type="CONFIG_ERROR").failure_type.value},
            "backend": {"table": TABLE_STREAM_INFO, "uuid_length": len(generate_uuid())},
            "env": env,
            "callback": type(self.get_source_callback_instance()).__name__ == NoOpSourceCallback.__name__,
            "retry_policy": self.get_retry_policy(),
        }
        return SourceIteration(next_pagination={}, records=[
            SourceRecord(id=name, data={"value": value}) for name, value in values.items()])
