"""Cursor: where a read stands (iteration, records fetched, the next pagination, the job's
status). The binary keeps its own cursors; this class is for sources and tools that use it."""

from datetime import datetime, timezone
from typing import Optional

from bizon.engine.backend.models import JobStatus


def _log(message):
    try:
        from loguru import logger
    except ImportError:  # pragma: no cover - loguru is bundled
        return
    logger.info(message)


class Cursor:
    def __init__(self, source_name: str, stream_name: str, job_id: str, total_records: int = None):
        self.source_name = source_name
        self.stream_name = stream_name
        self._job_id = job_id
        self.iteration = 0
        self.rows_fetched = 0
        self.total_records = total_records
        self.job_status = JobStatus.STARTED
        self.created_at = datetime.now(timezone.utc)
        self._pagination: dict = {}

    @classmethod
    def from_db(cls, source_name: str, stream_name: str, job_id: str, total_records: int, iteration: int,
                rows_fetched: int, pagination: dict):
        """A cursor resumed from a recorded position."""
        cursor = cls(source_name=source_name, stream_name=stream_name, job_id=job_id, total_records=total_records)
        cursor.iteration = iteration
        cursor.rows_fetched = rows_fetched
        cursor._pagination = pagination
        return cursor

    @property
    def job_id(self) -> str:
        return self._job_id

    @property
    def pagination(self) -> dict:
        """The pagination of the next read: {} before the first, and an error after a read that
        left none (the stream was exhausted)."""
        if self._pagination:
            return self._pagination
        if self.iteration == 0:
            return {}
        raise ValueError("Pagination is empty")

    @property
    def is_finished(self) -> bool:
        return self.job_status == JobStatus.SUCCEEDED

    @property
    def percentage_fetched(self) -> Optional[float]:
        return None if self.total_records is None else self.rows_fetched / self.total_records

    @property
    def avg_records_per_iteration(self) -> Optional[float]:
        return None if self.iteration == 0 else int(self.rows_fetched / self.iteration)

    @property
    def source_full_name(self) -> str:
        return f"{self.source_name}.{self.stream_name}"

    def update_state(self, pagination_dict: dict, nb_records_fetched: int):
        """Records one read: its next pagination and record count. An empty pagination marks the
        job succeeded, anything else running."""
        self._pagination = pagination_dict
        self.iteration += 1
        self.rows_fetched += nb_records_fetched
        share = f" ({self.percentage_fetched:.3%})" if self.percentage_fetched else ""
        _log(f"Source: {self.source_full_name} - Iteration {self.iteration} - Fetched: {self.rows_fetched}{share}")
        self.job_status = JobStatus.SUCCEEDED if not pagination_dict else JobStatus.RUNNING
