"""The Datadog Agent's data-streams intake for tests: `POST /v0.1/pipeline_stats`, which the agent
forwards as it is to Datadog's pipeline-stats intake. The payload is what the tracers send (dd-trace-go's
`StatsPayload` in internal/datastreams/payload.go, ddtrace's processor): a MessagePack map,
gzip-compressed, whose latency and size distributions are serialized DDSketch protobuf messages
(sketches-go's DDSketch.proto). Every request is checked and anything off-contract is a violation
(answered 400):

* Content-Type `application/msgpack`; Content-Encoding `gzip` (a valid gzip member) or none;
* the body is one MessagePack value, read strictly to its end: a map with the string keys
  Service (non-empty), TracerVersion, Lang and Stats (required), Env, Version, Hostname and
  ProcessTags (optional), nothing else;
* Stats: a non-empty array of buckets, each exactly Start and Duration (unsigned nanoseconds,
  Duration > 0 and Start a multiple of it), Stats and Backlogs (arrays);
* a stats point: EdgeTags (an array of `key:value` strings with one `direction:in|out` and one
  `type:`), Hash (non-zero) and ParentHash (unsigned 64-bit), PathwayLatency and EdgeLatency
  (binary DDSketch messages holding at least one value), PayloadSize (the same, optional),
  TimestampType (`current` or `origin`) and Service (deprecated), both optional;
* a DDSketch decodes with the official message definition (no unknown field), has a mapping with
  gamma > 1, and non-negative counts;
* a backlog: Tags (strings) and Value (an integer).

    agent = FakeDataStreamsAgent().start()
    ... run bizon with DD_DATA_STREAMS_ENABLED=true and DD_TRACE_AGENT_URL=agent.url ...
    assert agent.points(direction="in")

It serves the trace intake of fake_datadog_agent.py too. The pathway hash the tracers compute
(FNV-1 64 over service, env and the sorted edge tags, chained with the parent's hash) is
`pathway_hash`, written here from that algorithm for the tests to check the hashes received.
"""

from __future__ import annotations

import gzip
import math
import struct
import zlib
from dataclasses import dataclass

from fake_datadog_agent import FakeDatadogAgent
from fake_server import OffContract, Request, Response

PAYLOAD_REQUIRED = {"Service", "TracerVersion", "Lang", "Stats"}
PAYLOAD_KEYS = PAYLOAD_REQUIRED | {"Env", "Version", "Hostname", "ProcessTags"}
BUCKET_KEYS = {"Start", "Duration", "Stats", "Backlogs"}
POINT_REQUIRED = {"EdgeTags", "Hash", "ParentHash", "PathwayLatency", "EdgeLatency"}
POINT_KEYS = POINT_REQUIRED | {"PayloadSize", "TimestampType", "Service"}
U64 = 2**64


# -- MessagePack (msgpack.org spec), decoding only --------------------------------------------

class _Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.at = 0

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise OffContract("msgpack: the body ends inside a value")
        chunk = self.data[self.at:self.at + n]
        self.at += n
        return chunk

    def uint(self, n: int) -> int:
        return int.from_bytes(self.take(n), "big")

    def value(self, depth: int = 0):
        if depth > 32:
            raise OffContract("msgpack: nesting deeper than 32")
        code = self.take(1)[0]
        if code <= 0x7F:
            return code
        if code >= 0xE0:
            return code - 0x100
        if 0x80 <= code <= 0x8F:
            return self.map(code & 0x0F, depth)
        if 0x90 <= code <= 0x9F:
            return [self.value(depth + 1) for _ in range(code & 0x0F)]
        if 0xA0 <= code <= 0xBF:
            return self.text(code & 0x1F)
        simple = {0xC0: None, 0xC2: False, 0xC3: True}
        if code in simple:
            return simple[code]
        sized = {0xC4: 1, 0xC5: 2, 0xC6: 4}  # bin 8/16/32
        if code in sized:
            return bytes(self.take(self.uint(sized[code])))
        if code in (0xCA, 0xCB):
            return struct.unpack(">f" if code == 0xCA else ">d", self.take(4 if code == 0xCA else 8))[0]
        unsigned = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}
        if code in unsigned:
            return self.uint(unsigned[code])
        signed = {0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8}
        if code in signed:
            return int.from_bytes(self.take(signed[code]), "big", signed=True)
        strings = {0xD9: 1, 0xDA: 2, 0xDB: 4}
        if code in strings:
            return self.text(self.uint(strings[code]))
        if code in (0xDC, 0xDD):
            return [self.value(depth + 1) for _ in range(self.uint(2 if code == 0xDC else 4))]
        if code in (0xDE, 0xDF):
            return self.map(self.uint(2 if code == 0xDE else 4), depth)
        raise OffContract(f"msgpack: type byte 0x{code:02x} is not expected in this payload")

    def text(self, n: int) -> str:
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError:
            raise OffContract("msgpack: a str is not UTF-8") from None

    def map(self, n: int, depth: int) -> dict:
        out = {}
        for _ in range(n):
            key = self.value(depth + 1)
            if not isinstance(key, str):
                raise OffContract(f"msgpack: map keys must be strings, got {key!r}")
            if key in out:
                raise OffContract(f"msgpack: key {key!r} twice in one map")
            out[key] = self.value(depth + 1)
        return out


def unpack(data: bytes):
    reader = _Reader(data)
    value = reader.value()
    if reader.at != len(data):
        raise OffContract(f"msgpack: {len(data) - reader.at} bytes after the payload")
    return value


# -- DDSketch (sketches-go pb/DDSketch.proto) --------------------------------------------------

_SKETCH_CLASS = None


def _sketch_class():
    """The DDSketch message class, built from the .proto's definition with the protobuf runtime."""
    global _SKETCH_CLASS
    if _SKETCH_CLASS is not None:
        return _SKETCH_CLASS
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="fake_ddsketch.proto", package="fakeddsketch",
                                               syntax="proto3")
    sketch = proto.message_type.add(name="DDSketch")
    for name, number, type_name in (("mapping", 1, "IndexMapping"), ("positiveValues", 2, "Store"),
                                    ("negativeValues", 3, "Store")):
        sketch.field.add(name=name, number=number, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                         type_name=f".fakeddsketch.{type_name}")
    sketch.field.add(name="zeroCount", number=4, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    mapping = proto.message_type.add(name="IndexMapping")
    mapping.field.add(name="gamma", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    mapping.field.add(name="indexOffset", number=2, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    mapping.field.add(name="interpolation", number=3, type=F.TYPE_ENUM, label=F.LABEL_OPTIONAL,
                      type_name=".fakeddsketch.IndexMapping.Interpolation")
    interpolation = mapping.enum_type.add(name="Interpolation")
    for number, name in enumerate(("NONE", "LINEAR", "QUADRATIC", "CUBIC")):
        interpolation.value.add(name=name, number=number)
    store = proto.message_type.add(name="Store")
    entry = store.nested_type.add(name="BinCountsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_SINT32, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    store.field.add(name="binCounts", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                    type_name=".fakeddsketch.Store.BinCountsEntry")
    packed = store.field.add(name="contiguousBinCounts", number=2, type=F.TYPE_DOUBLE,
                             label=F.LABEL_REPEATED)
    packed.options.packed = True
    store.field.add(name="contiguousBinIndexOffset", number=3, type=F.TYPE_SINT32,
                    label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    _SKETCH_CLASS = message_factory.GetMessageClass(pool.FindMessageTypeByName("fakeddsketch.DDSketch"))
    return _SKETCH_CLASS


@dataclass
class Sketch:
    """A decoded DDSketch: its bins as (representative value, count), zero count included."""

    bins: list[tuple[float, float]]

    @property
    def count(self) -> float:
        return sum(count for _, count in self.bins)

    @property
    def min(self) -> float:
        return min(value for value, count in self.bins if count > 0)

    @property
    def max(self) -> float:
        return max(value for value, count in self.bins if count > 0)


def decode_sketch(data: bytes, what: str) -> Sketch:
    from google.protobuf.message import DecodeError
    from google.protobuf.unknown_fields import UnknownFieldSet

    message = _sketch_class()()
    try:
        message.ParseFromString(data)
    except DecodeError as error:
        raise OffContract(f"{what}: not a DDSketch message: {error}") from None
    for part in (message, message.mapping, message.positiveValues, message.negativeValues):
        if len(UnknownFieldSet(part)):
            raise OffContract(f"{what}: fields the DDSketch message does not define")
    gamma, offset = message.mapping.gamma, message.mapping.indexOffset
    if not message.HasField("mapping") or not gamma > 1:
        raise OffContract(f"{what}: the mapping's gamma must be > 1, got {gamma}")
    bins = [(0.0, message.zeroCount)]
    for sign, store in ((1, message.positiveValues), (-1, message.negativeValues)):
        indexed = [(store.contiguousBinIndexOffset + i, count)
                   for i, count in enumerate(store.contiguousBinCounts)]
        indexed += list(store.binCounts.items())
        for index, count in indexed:
            # The bin's lower bound, gamma^(index - offset): the value the bin stands for.
            bins.append((sign * math.pow(gamma, index - offset), count))
    if any(count < 0 or not math.isfinite(count) for _, count in bins):
        raise OffContract(f"{what}: negative or non-finite bin counts")
    return Sketch([bin for bin in bins if bin[1] > 0])


# -- the payload's schema ----------------------------------------------------------------------

def _uint(value, what: str, bits: int = 64) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**bits:
        raise OffContract(f"{what} must be an unsigned {bits}-bit integer, got {value!r}")
    return value


def _strings(value, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise OffContract(f"{what} must be an array of strings, got {value!r}")
    return value


def _keys(value, what: str, required: set[str], allowed: set[str]) -> dict:
    if not isinstance(value, dict):
        raise OffContract(f"{what} must be a map, got {type(value).__name__}")
    if missing := required - set(value):
        raise OffContract(f"{what}: missing {sorted(missing)}")
    if unknown := set(value) - allowed:
        raise OffContract(f"{what}: unknown keys {sorted(unknown)}")
    return value


def check_point(point, what: str) -> dict:
    _keys(point, what, POINT_REQUIRED, POINT_KEYS)
    tags = _strings(point["EdgeTags"], f"{what}.EdgeTags")
    if not all(":" in tag and tag.split(":", 1)[0] for tag in tags):
        raise OffContract(f"{what}.EdgeTags must be key:value tags, got {tags}")
    directions = [tag for tag in tags if tag.startswith("direction:")]
    if len(directions) > 1 or any(tag not in ("direction:in", "direction:out") for tag in directions):
        raise OffContract(f"{what}.EdgeTags: at most one direction:in|out, got {directions}")
    if not any(tag.startswith("type:") for tag in tags):
        raise OffContract(f"{what}.EdgeTags: no type: tag in {tags}")
    if _uint(point["Hash"], f"{what}.Hash") == 0:
        raise OffContract(f"{what}.Hash must not be 0")
    _uint(point["ParentHash"], f"{what}.ParentHash")
    if point.get("TimestampType", "current") not in ("current", "origin"):
        raise OffContract(f"{what}.TimestampType must be current or origin")
    if not isinstance(point.get("Service", ""), str):
        raise OffContract(f"{what}.Service must be a string")
    sketches = {}
    for key in ("PathwayLatency", "EdgeLatency", "PayloadSize"):
        if key not in point:
            continue
        if not isinstance(point[key], bytes):
            raise OffContract(f"{what}.{key} must be msgpack bin, got {type(point[key]).__name__}")
        sketches[key] = decode_sketch(point[key], f"{what}.{key}")
    if sketches["PathwayLatency"].count <= 0 or sketches["EdgeLatency"].count <= 0:
        raise OffContract(f"{what}: a stats point without any checkpoint")
    return {"edge_tags": tags, "hash": point["Hash"], "parent_hash": point["ParentHash"],
            **{key: sketch for key, sketch in sketches.items()}}


def check_bucket(bucket, what: str) -> list[dict]:
    _keys(bucket, what, BUCKET_KEYS, BUCKET_KEYS)
    duration = _uint(bucket["Duration"], f"{what}.Duration")
    start = _uint(bucket["Start"], f"{what}.Start")
    if duration == 0 or start % duration:
        raise OffContract(f"{what}: Start {start} is not a multiple of Duration {duration}")
    if start < 10**18:
        raise OffContract(f"{what}.Start {start} is not in nanoseconds since the epoch")
    if not isinstance(bucket["Stats"], list) or not isinstance(bucket["Backlogs"], list):
        raise OffContract(f"{what}: Stats and Backlogs must be arrays")
    for index, backlog in enumerate(bucket["Backlogs"]):
        _keys(backlog, f"{what}.Backlogs[{index}]", {"Tags", "Value"}, {"Tags", "Value"})
        _strings(backlog["Tags"], f"{what}.Backlogs[{index}].Tags")
        if not isinstance(backlog["Value"], int) or isinstance(backlog["Value"], bool):
            raise OffContract(f"{what}.Backlogs[{index}].Value must be an integer")
    return [dict(check_point(point, f"{what}.Stats[{index}]"), start=start)
            for index, point in enumerate(bucket["Stats"])]


def check_payload(payload) -> list[dict]:
    _keys(payload, "payload", PAYLOAD_REQUIRED, PAYLOAD_KEYS)
    for key in PAYLOAD_KEYS - {"Stats", "ProcessTags"}:
        if key in payload and not isinstance(payload[key], str):
            raise OffContract(f"payload.{key} must be a string, got {payload[key]!r}")
    if not payload["Service"]:
        raise OffContract("payload.Service must not be empty")
    if "ProcessTags" in payload:
        _strings(payload["ProcessTags"], "payload.ProcessTags")
    if not isinstance(payload["Stats"], list) or not payload["Stats"]:
        raise OffContract("payload.Stats must be a non-empty array of buckets")
    points = []
    for index, bucket in enumerate(payload["Stats"]):
        points += check_bucket(bucket, f"payload.Stats[{index}]")
    return points


def fnv1_64(data: bytes) -> int:
    value = 0xCBF29CE484222325
    for byte in data:
        value = (value * 0x100000001B3) % U64
        value ^= byte
    return value


def pathway_hash(service: str, env: str, edge_tags: list[str], parent_hash: int) -> int:
    node = fnv1_64((service + env + "".join(sorted(edge_tags))).encode())
    return fnv1_64(struct.pack("<QQ", node, parent_hash))


class FakeDataStreamsAgent(FakeDatadogAgent):
    def __init__(self):
        super().__init__()
        self.payloads: list[dict] = []
        self._points: list[dict] = []
        self.route("POST", "/v0.1/pipeline_stats", self._pipeline_stats)

    def _pipeline_stats(self, request: Request) -> Response:
        content_type = request.headers.get("content-type", "")
        if content_type != "application/msgpack":
            raise OffContract(f"Content-Type must be application/msgpack, got {content_type!r}")
        encoding = request.headers.get("content-encoding")
        body = request.body
        if encoding == "gzip":
            try:
                body = gzip.decompress(body)
            except (OSError, EOFError, zlib.error) as error:
                raise OffContract(f"the body is not gzip: {error}") from None
        elif encoding is not None:
            raise OffContract(f"Content-Encoding must be gzip or absent, got {encoding!r}")
        payload = unpack(body)
        points = check_payload(payload)
        with self._lock:
            self.payloads.append(payload)
            self._points += [dict(point, service=payload["Service"], env=payload.get("Env"))
                             for point in points]
        return Response(202, "", {"Content-Type": "text/plain"})

    def points(self, direction: str | None = None) -> list[dict]:
        """Every stats point received, with its decoded sketches, optionally of one direction."""
        with self._lock:
            return [point for point in self._points
                    if direction is None or f"direction:{direction}" in point["edge_tags"]]
