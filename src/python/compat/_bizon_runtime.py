"""Helpers the C++ side calls (src/python/*.cc). Not part of the `bizon` API.

Everything here runs with the GIL held by the calling C++ thread. Contract violations by a
custom source raise ContractError, whose text is shown as is; any other exception is reported
with its traceback.
"""

import ast
import importlib.util
import inspect
import json
import linecache
import os
import sys
import textwrap
import traceback
from datetime import datetime, timedelta, timezone


class CallTimeout(BaseException):
    """Raised inside a Python call that ran past its deadline (BaseException: `except
    Exception` in user code does not swallow it)."""


class CallCancelled(BaseException):
    """Raised inside a Python call when the run is being stopped."""


class ContractError(Exception):
    """A custom source broke the source contract (wrong return type, bad pagination...)."""


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)

# Transforms: the original parses with json.loads and writes with json.dumps defaults
# (ASCII-escaped, ", " and ": " separators). Bound once: same bytes, less per-call overhead.
transform_loads = json.JSONDecoder().decode
transform_dumps = json.JSONEncoder().encode


def transform_codec():
    """(scan_once, c_encoder, markers): the C halves of transform_loads and transform_dumps, for
    the per-record loop in python_transforms.cc. The C++ side skips the whitespace decode() skips
    and joins the encoder's chunks as encode() does; it falls back to the full functions for the
    exact error of a payload that does not parse. `markers` is the circular-reference registry
    the encoder was built with (cleared by the caller after a failed call); None when the C
    accelerators are missing."""
    from json import decoder, encoder

    if encoder.c_make_encoder is None or decoder.c_scanstring is None:
        return None
    json_encoder = json.JSONEncoder()
    markers = {}
    c_encoder = encoder.c_make_encoder(
        markers, json_encoder.default, encoder.encode_basestring_ascii, None,
        json_encoder.key_separator, json_encoder.item_separator, False, False, True)
    return json.JSONDecoder().scan_once, c_encoder, markers


def _record_default(value):
    """What a record's data holds that json cannot write, as the original 0.6.4 writes it (its
    orjson encoder): datetimes, dates and times in ISO 8601, UUIDs as text, enum members by their
    value, dataclasses as objects, UTF-8 bytes as text, a finite Decimal as a number (an int when
    written without a point or exponent, else a float: digits past a double's are lost, where
    the original keeps them)."""
    import dataclasses
    import decimal
    import enum
    import uuid
    from datetime import date, time

    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8")
    if isinstance(value, decimal.Decimal) and value.is_finite():
        text = str(value)
        return int(text) if text.lstrip("-").isdigit() else float(text)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# Source records: json.dumps(data, ensure_ascii=False), with the original's extra types.
_record_encoder = json.JSONEncoder(ensure_ascii=False, default=_record_default)


def _make_record_dumps():
    """JSONEncoder.encode builds a new C encoder on every call (c_make_encoder, in iterencode):
    a third of the per-record cost of a custom source. This one is built once; same bytes.
    Falls back to encode() when the C accelerators are missing."""
    from json import encoder

    if encoder.c_make_encoder is None or encoder.c_encode_basestring is None:
        return _record_encoder.encode
    markers = {}
    c_encoder = encoder.c_make_encoder(
        markers, _record_encoder.default, encoder.c_encode_basestring, None,
        _record_encoder.key_separator, _record_encoder.item_separator, False, False, True)
    join = "".join

    def dumps(data):
        try:
            return join(c_encoder(data, 0))
        except BaseException:
            markers.clear()  # The circular-reference registry of the failed call.
            raise

    return dumps


record_dumps = _make_record_dumps()


def format_exception(exc, tb=None):
    """The full traceback text of `exc`, as Python prints it (`tb`: the traceback fetched with
    the exception, when it is not attached to it yet)."""
    if tb is None:
        tb = exc.__traceback__
    return "".join(traceback.format_exception(type(exc), exc, tb)).rstrip("\n")


def exception_summary(exc):
    """The last line of the traceback: "KeyError: 'value'"."""
    return "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[-1]


# --- transforms ---------------------------------------------------------------------------------

def compile_transform(label, python):
    """Compiles one snippet, common indentation removed, and registers its text for tracebacks."""
    source = textwrap.dedent(python)
    filename = f"<transform {label}>"
    code = compile(source, filename, "exec", dont_inherit=True)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return code


def compile_hook(label, python, function):
    """Runs a hook's text (common indentation removed) as a module of its own and returns its
    top-level `function`; the text is registered for tracebacks under `label`."""
    source = textwrap.dedent(python)
    filename = f"<{label}>"
    code = compile(source, filename, "exec", dont_inherit=True)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": "bizon_hook"}
    exec(code, namespace)
    found = namespace.get(function)
    if not callable(found):
        raise ContractError(f"{label}: the code defines no function `{function}`")
    return found


def syntax_error_details(exc):
    """(line, column, message, line text) of a SyntaxError raised by compile_transform."""
    text = (exc.text or "").rstrip("\n").strip()
    return (exc.lineno or 0, exc.offset or 0, exc.msg or str(exc), text)


# --- custom sources -----------------------------------------------------------------------------

# What the hint of a failed import lists (src/python/requirements.txt installs them).
BUNDLED_PACKAGES = ("The bizon binary bundles pydantic 2, pydantic-extra-types, requests, loguru, pendulum, "
                    "python-dateutil, pytz, orjson, backoff, tenacity, dpath, PyYAML and python-dotenv")


def _module_name(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    name = stem if stem.isidentifier() else "custom_source"
    # Never shadow a module that is already imported (a file named json.py, say).
    if name in sys.modules and not getattr(sys.modules[name], "__bizon_custom_source__", False):
        name = f"bizon_custom_source_{name}"
    return name


def load_source_file(path):
    """Executes the file as a fresh module (its directory is appended to sys.path so it can
    import its neighbours) and returns it."""
    path = os.path.abspath(path)
    directory = os.path.dirname(path)
    if directory not in sys.path:
        sys.path.append(directory)
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.__bizon_custom_source__ = True
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as exc:
        sys.modules.pop(name, None)
        missing = (exc.name or "").split(".")[0]
        if not missing or missing == "bizon":
            raise
        raise ModuleNotFoundError(f"{exc} (imported by {path}). {BUNDLED_PACKAGES}; install other packages "
                                  "into a Python 3.11 virtualenv and name it in engine.runner.config.python_env",
                                  name=exc.name) from exc
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _defined_class_names(path):
    """Top-level class names of the file, in order (the original finds candidates by syntax)."""
    with open(path, "rb") as handle:
        tree = ast.parse(handle.read(), filename=path)
    return [node.name for node in tree.body if isinstance(node, ast.ClassDef)]


def _overrides(cls, method):
    """True when `cls` defines `method` itself (or through a base other than AbstractSource)."""
    from bizon.source.source import AbstractSource

    return getattr(cls, method, None) is not getattr(AbstractSource, method)


def _overrides_get_records_after(cls):
    return _overrides(cls, "get_records_after")


def source_classes(module, path):
    """[(class, streams, supports_incremental)] for every usable source class of the file, in
    file order; plus [(class name, reason)] for source classes that are not usable."""
    from bizon.source.source import AbstractSource

    usable, skipped = [], []
    for name in _defined_class_names(path):
        cls = module.__dict__.get(name)
        if not isinstance(cls, type) or not issubclass(cls, AbstractSource) or cls is AbstractSource:
            continue
        if inspect.isabstract(cls):
            missing = ", ".join(sorted(cls.__abstractmethods__))
            skipped.append((name, f"abstract: does not implement {missing}"))
            continue
        try:
            streams = cls.streams()
        except Exception as exc:
            skipped.append((name, f"streams() raised {exception_summary(exc)}"))
            continue
        if not isinstance(streams, (list, tuple)) or not all(isinstance(s, str) for s in streams):
            skipped.append((name, "streams() must return a list of strings"))
            continue
        if not streams:
            skipped.append((name, "streams() is empty"))
            continue
        usable.append((cls, list(streams), _overrides_get_records_after(cls)))
    return usable, skipped


def _no_source_message(path, skipped):
    text = (f"{path} defines no source class (a class extending "
            "bizon.source.source.AbstractSource with every abstract method and a non-empty streams())")
    if skipped:
        text += "; skipped: " + "; ".join(f"{name} ({reason})" for name, reason in skipped)
    return text


def inspect_source(path):
    """[(class name, [streams], supports_incremental)] for the usable source classes of `path`."""
    module = load_source_file(path)
    usable, skipped = source_classes(module, path)
    if not usable:
        raise ContractError(_no_source_message(path, skipped))
    return [(cls.__name__, streams, incremental) for cls, streams, incremental in usable]


def _validation_problems(exc):
    """One "source.<key>: <message>" per problem of a ValidationError (pydantic 2 or 1, or the
    fallback model's), "; "-joined. The offending values are left out: they may be secrets."""
    try:
        problems = exc.errors()
    except Exception:  # Not the shape we know: pydantic's own text.
        return str(exc)
    lines = []
    for problem in problems:
        location = ".".join(str(part) for part in problem.get("loc", ()))
        lines.append(f"source.{location}: {problem.get('msg', 'invalid value')}" if location
                     else str(problem.get("msg", "invalid value")))
    return "; ".join(lines) or str(exc)


def _warn(message):
    try:
        from loguru import logger
    except ImportError:  # pragma: no cover - loguru is bundled
        print(f"WARNING: {message}", file=sys.stderr)
        return
    logger.warning(message)


def undeclared_keys(config_class, raw):
    """The keys of `raw` that `config_class` neither declares (by name or alias) nor keeps as
    extras: the model drops them without a word, so they are worth a warning, as the original
    gives one."""
    fields = getattr(config_class, "model_fields", None)
    if isinstance(fields, dict):  # pydantic 2
        if (getattr(config_class, "model_config", None) or {}).get("extra") == "allow":
            return []
        known = set(fields)
        for field in fields.values():
            for alias in (getattr(field, "alias", None), getattr(field, "validation_alias", None)):
                if isinstance(alias, str):
                    known.add(alias)
    elif isinstance(getattr(config_class, "__fields__", None), dict):  # pydantic 1
        if str(getattr(getattr(config_class, "__config__", None), "extra", "")).endswith("allow"):
            return []
        known = set(config_class.__fields__) | {field.alias for field in config_class.__fields__.values()}
    else:  # bizon._model's fallback
        if getattr(config_class, "__bizon_extra__", "ignore") == "allow":
            return []
        known = set(getattr(config_class, "__bizon_fields__", {}))
    return sorted(key for key in raw if key not in known)


def validate_config(cls, raw):
    """Builds the class's config object from the `source:` mapping, or raises ContractError
    with the validation errors."""
    config_class = cls.get_config_class()
    if not isinstance(config_class, type):
        raise ContractError(f"{cls.__name__}.get_config_class() must return a class, got {type(config_class).__name__}")
    from bizon._model import ValidationError

    unknown = undeclared_keys(config_class, raw)
    if unknown:
        _warn(f"source keys that {config_class.__name__} does not declare are ignored: {', '.join(unknown)} "
              "(a typo, or a key in the wrong section?)")
    try:
        return config_class(**raw)
    except ValidationError as exc:
        raise ContractError(f"source config does not match {config_class.__name__}: "
                            f"{_validation_problems(exc)}") from None
    except (TypeError, ValueError) as exc:
        raise ContractError(f"source config does not match {config_class.__name__}: {exc}") from None


def stream_configs(streams):
    """The pipeline's top-level `streams:` entries as bizon.common.models.StreamConfig."""
    from bizon.common.models import StreamConfig
    from bizon._model import ValidationError

    configs = []
    for index, entry in enumerate(streams):
        try:
            configs.append(StreamConfig(**entry))
        except (ValidationError, TypeError, ValueError) as exc:
            raise ContractError(f"streams[{index}] does not match bizon.common.models.StreamConfig: {exc}") from None
    return configs


def open_source(path, stream, raw, streams=None):
    """(instance, class name, supports_incremental) for the first class serving `stream`. With
    the pipeline's `streams:` entries, the instance's set_streams_config() gets them first."""
    module = load_source_file(path)
    usable, skipped = source_classes(module, path)
    if not usable:
        raise ContractError(_no_source_message(path, skipped))
    for cls, streams_of_class, incremental in usable:
        if stream in streams_of_class:
            config = validate_config(cls, raw)
            instance = cls(config)
            # Only a source that overrides set_streams_config() reads the entries: one that does
            # not must not fail on `streams:` blocks the original's StreamConfig would refuse
            # (ours route tables with a destination block alone).
            if streams and _overrides(cls, "set_streams_config"):
                instance.set_streams_config(stream_configs(streams))
            return instance, cls.__name__, incremental
    available = [s for _, streams, _ in usable for s in streams]
    raise LookupError(f"Stream {stream} not found. Available streams are {available}")


def _micros(value, what):
    if not isinstance(value, datetime):
        raise ContractError(f"{what} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return (value - _EPOCH) // _MICROSECOND


def datetime_from_micros(micros):
    return _EPOCH + timedelta(microseconds=micros)


def incremental_state(last_run_us, run_started_at_us, state, cursor_field):
    from bizon.source.models import SourceIncrementalState

    return SourceIncrementalState(
        last_run=datetime_from_micros(last_run_us),
        state={} if state is None else state,
        cursor_field=cursor_field or None,
        run_started_at=datetime_from_micros(run_started_at_us) if run_started_at_us else None,
    )


def record_payload(record_id, data):
    """The JSON text of one record's data, or the ContractError of data that is not JSON."""
    try:
        return record_dumps(data)
    except (TypeError, ValueError) as exc:
        raise ContractError(f"record {record_id!r}: data is not JSON-serialisable: {exc}") from None


def record_micros(record_id, timestamp):
    return _micros(timestamp, f"record {record_id!r}: timestamp")


def iteration_columns(iteration, method):
    """Checks what get()/get_records_after() returned and flattens it for the RecordBatch:
    (ids, payloads, timestamps in µs, destination ids or None, next_pagination, next_state).

    The reference: python_source.cc converts the usual iteration itself (same checks, same bytes)
    and calls this for anything else, which also raises every contract error."""
    from bizon.source.models import SourceIteration, SourceRecord

    if not isinstance(iteration, SourceIteration):
        if iteration is None and method == "get_records_after":
            raise ContractError("get_records_after() returned None: the class does not implement incremental "
                                "reads (override get_records_after, or use sync_mode: full_refresh)")
        raise ContractError(f"{method}() returned {type(iteration).__name__}, expected a "
                            "bizon.source.models.SourceIteration")
    pagination = iteration.next_pagination
    if not isinstance(pagination, dict):
        raise ContractError(f"{method}() returned a SourceIteration whose next_pagination is "
                            f"{type(pagination).__name__}, expected a dict ({{}} when exhausted)")
    records = iteration.records
    if not isinstance(records, list):
        raise ContractError(f"{method}() returned a SourceIteration whose records is "
                            f"{type(records).__name__}, expected a list of SourceRecord")
    ids, payloads, stamps, destinations = [], [], [], None
    for index, record in enumerate(records):
        if not isinstance(record, SourceRecord):
            raise ContractError(f"{method}() returned a SourceIteration whose records[{index}] is "
                                f"{type(record).__name__}, expected a SourceRecord")
        record_id = record.id
        if not isinstance(record_id, str):
            if isinstance(record_id, int) and not isinstance(record_id, bool):
                record_id = str(record_id)
            else:
                raise ContractError(f"records[{index}].id must be a string, got {type(record_id).__name__}")
        data = record.data
        if not isinstance(data, dict):
            raise ContractError(f"record {record_id!r}: data must be a dict, got {type(data).__name__}")
        payloads.append(record_payload(record_id, data))
        ids.append(record_id)
        stamps.append(record_micros(record_id, record.timestamp))
        destination = record.destination_id
        if destination is not None:
            if not isinstance(destination, str):
                raise ContractError(f"record {record_id!r}: destination_id must be a string or None")
            if destinations is None:
                destinations = [None] * index
        if destinations is not None:
            destinations.append(destination)
    return ids, payloads, stamps, destinations, pagination, iteration.next_state


def check_connection(instance):
    """(ok, message) from check_connection(), which must return (bool, error or None)."""
    result = instance.check_connection()
    if isinstance(result, bool):
        return result, None
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise ContractError(f"check_connection() returned {type(result).__name__}, expected (bool, error)")
    ok, error = result
    return bool(ok), None if error is None else str(error)


def total_records_count(instance):
    count = instance.get_total_records_count()
    if count is None:
        return None
    if isinstance(count, bool) or not isinstance(count, int):
        raise ContractError(f"get_total_records_count() returned {type(count).__name__}, expected int or None")
    return count


def close_source(instance):
    session = getattr(instance, "session", None)
    close = getattr(session, "close", None)
    if callable(close):
        close()
