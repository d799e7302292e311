"""What a source returns: SourceRecord, SourceIteration, and what incremental gets:
SourceIncrementalState.

Plain classes with keyword construction and the original's validation rules (an integer id
becomes a string, data must be a mapping, next_pagination must be a dict): a source builds one
SourceRecord per row, so they are kept cheaper than model instances.
"""

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, List, Optional

_REQUIRED = object()


def _timestamp(value, owner):
    if value is None:
        return datetime.now(timezone.utc)
    if isinstance(value, datetime):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, tz=timezone.utc)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
    raise ValueError(f"{owner}.timestamp must be a datetime, got {type(value).__name__} {value!r}")


class SourceRecord:
    """One row: `id` (a string; an int is converted), `data` (a JSON-serialisable mapping),
    `timestamp` (default: now, UTC) and `destination_id` (stream routing, default None)."""

    __slots__ = ("id", "data", "timestamp", "destination_id")

    def __init__(self, *, id=_REQUIRED, data=_REQUIRED, timestamp=None, destination_id=None):  # noqa: A002
        if id is _REQUIRED or data is _REQUIRED:
            missing = [name for name, v in (("id", id), ("data", data)) if v is _REQUIRED]
            raise ValueError(f"SourceRecord: missing required field(s) {', '.join(missing)}")
        if isinstance(id, int) and not isinstance(id, bool):
            id = str(id)  # noqa: A001
        elif not isinstance(id, str):
            raise ValueError(f"SourceRecord.id must be a string or an integer, got {type(id).__name__} {id!r}")
        if not isinstance(data, Mapping):
            raise ValueError(f"SourceRecord.data must be a mapping (a dict), got {type(data).__name__}")
        if destination_id is not None and not isinstance(destination_id, str):
            raise ValueError(f"SourceRecord.destination_id must be a string or None, got {type(destination_id).__name__}")
        self.id = id
        self.data = data
        self.timestamp = _timestamp(timestamp, "SourceRecord")
        self.destination_id = destination_id

    def model_dump(self):
        return {"id": self.id, "data": self.data, "timestamp": self.timestamp, "destination_id": self.destination_id}

    dict = model_dump

    def __eq__(self, other):
        # This class, also when the name SourceRecord is the C type's (below).
        return isinstance(other, _PythonSourceRecord) and self.model_dump() == other.model_dump()

    def __repr__(self):
        return (f"SourceRecord(id={self.id!r}, data={self.data!r}, timestamp={self.timestamp!r}, "
                f"destination_id={self.destination_id!r})")


# The reference above; bizon's binary replaces it with the C type of the same behaviour
# (src/python/source_record.cc), which costs a fraction per record. A plain Python importing
# this package keeps the class above.
_PythonSourceRecord = SourceRecord


def _first_not_instance(items, cls):
    """The index of the first of `items` that is not a `cls`, or -1 (a loop in C in the binary)."""
    for index, item in enumerate(items):
        if not isinstance(item, cls):
            return index
    return -1


try:
    from _bizon_native import SourceRecord  # noqa: F811
    from _bizon_native import first_not_instance as _first_not_instance  # noqa: F811
except ImportError:
    pass


_RECORD_FIELDS = ("id", "data", "timestamp", "destination_id")


def _convert_mappings(records, start):
    """Replaces, from `start` on, each mapping of `records` by the SourceRecord of its id, data,
    timestamp and destination_id (other keys ignored), as the original's model does; anything
    else that is not a SourceRecord is a ValueError."""
    for index in range(start, len(records)):
        item = records[index]
        if isinstance(item, SourceRecord):
            continue
        if not isinstance(item, Mapping):
            raise ValueError(f"SourceIteration.records[{index}] must be a SourceRecord, got {type(item).__name__}")
        try:
            records[index] = SourceRecord(**{key: item[key] for key in _RECORD_FIELDS if key in item})
        except ValueError as exc:
            raise ValueError(f"SourceIteration.records[{index}]: {exc}") from None


def _polars(name):
    try:
        import polars
    except ImportError:
        from bizon._original import not_provided

        raise not_provided(f"{__name__}.{name}", "it needs polars, which the binary does not bundle: install "
                           "polars into a Python 3.11 virtualenv and name it in engine.runner.config.python_env"
                           ) from None
    return polars


def source_records_to_df(records):
    """A polars DataFrame of `records` in the original's queue layout: id, data (its JSON text),
    timestamp (µs, UTC) and destination_id."""
    pl = _polars("source_records_to_df")
    try:
        import orjson

        def encode(data):
            return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")
    except ImportError:  # pragma: no cover - orjson is bundled
        import json

        def encode(data):
            return json.dumps(data, ensure_ascii=False)

    return pl.DataFrame(
        {
            "id": [record.id for record in records],
            "data": [encode(record.data) for record in records],
            "timestamp": [record.timestamp for record in records],
            "destination_id": [record.destination_id for record in records],
        },
        schema=_record_schema(pl),
    )


def _record_schema(pl):
    return pl.Schema([("id", pl.String), ("data", pl.String),
                      ("timestamp", pl.Datetime(time_unit="us", time_zone="UTC")), ("destination_id", pl.String)])


def __getattr__(name):
    if name == "source_record_schema":
        return _record_schema(_polars(name))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class SourceIteration:
    """One page: `records` and `next_pagination` ({} when the stream is exhausted), plus an
    optional `next_state` handed to the next incremental run as `source_state.state`."""

    __slots__ = ("next_pagination", "records", "next_state")

    def __init__(self, *, next_pagination=_REQUIRED, records=_REQUIRED, next_state=None):
        if next_pagination is _REQUIRED or records is _REQUIRED:
            missing = [name for name, v in (("next_pagination", next_pagination), ("records", records))
                       if v is _REQUIRED]
            raise ValueError(f"SourceIteration: missing required field(s) {', '.join(missing)}")
        if not isinstance(next_pagination, Mapping):
            raise ValueError("SourceIteration.next_pagination must be a dict (use {} when the stream is exhausted), "
                             f"got {type(next_pagination).__name__}")
        if not isinstance(records, (list, tuple)):
            raise ValueError(f"SourceIteration.records must be a list of SourceRecord, got {type(records).__name__}")
        records = list(records)
        index = _first_not_instance(records, SourceRecord)
        if index >= 0:
            _convert_mappings(records, index)
        self.next_pagination = dict(next_pagination)
        self.records: List[SourceRecord] = records
        self.next_state: Optional[Any] = next_state

    def model_dump(self):
        return {"next_pagination": self.next_pagination, "records": [r.model_dump() for r in self.records],
                "next_state": self.next_state}

    dict = model_dump

    def __repr__(self):
        return f"SourceIteration(next_pagination={self.next_pagination!r}, records=<{len(self.records)} records>)"


def _utc(moment):
    """A naive datetime taken as UTC (the backend's job times are UTC)."""
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


class SourceIncrementalState:
    """The window of an incremental run: `last_run` (start of the previous successful run) and
    `run_started_at` (start of this one), timezone-aware UTC; `state` (the previous run's
    next_state, {} when none) and `cursor_field` (source.cursor_field, not interpreted)."""

    __slots__ = ("last_run", "state", "cursor_field", "run_started_at")

    def __init__(self, *, last_run, state=None, cursor_field=None, run_started_at=None):
        self.last_run: datetime = _utc(_timestamp(last_run, "SourceIncrementalState"))
        self.state: dict = {} if state is None else state
        self.cursor_field: Optional[str] = cursor_field
        self.run_started_at: Optional[datetime] = (
            None if run_started_at is None else _utc(_timestamp(run_started_at, "SourceIncrementalState")))

    def model_dump(self):
        return {"last_run": self.last_run, "state": self.state, "cursor_field": self.cursor_field,
                "run_started_at": self.run_started_at}

    dict = model_dump

    def __repr__(self):
        return (f"SourceIncrementalState(last_run={self.last_run!r}, state={self.state!r}, "
                f"cursor_field={self.cursor_field!r}, run_started_at={self.run_started_at!r})")
