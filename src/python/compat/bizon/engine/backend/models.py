"""The backend's table names and statuses. The tables' SQLAlchemy classes are not provided: the
binary's backend is C++ (its tables keep these names and statuses)."""

from enum import Enum
from uuid import uuid4

from bizon._original import refuse_names

TABLE_STREAM_INFO = "stream_jobs"
TABLE_SOURCE_CURSOR = "source_cursors"
TABLE_DESTINATION_CURSOR = "destination_cursors"
TABLE_STREAM_RESET = "stream_resets"


def generate_uuid():
    """A new id as 32 hex digits (the ids of jobs and cursors)."""
    return uuid4().hex


class JobStatus(str, Enum):
    STARTED = "started"
    RUNNING = "running"
    FAILED = "failed"
    CANCELED = "cancelled"
    SUCCEEDED = "succeeded"


class CursorStatus(str, Enum):
    STARTED = "started"
    PULLING = "pulling"
    PULLED = "pulled"
    WRITTEN_IN_DESTINATION = "written_in_destination"
    FAILED = "failed"


_ORM = ("the backend's SQLAlchemy tables belong to the original's Python engine; this binary's backend "
        "is C++ (read its tables with SQL, or use `bizon stream list`)")
__getattr__ = refuse_names(__name__, {name: _ORM for name in
                                      ("Base", "StreamJob", "SourceCursor", "DestinationCursor", "StreamReset")})
