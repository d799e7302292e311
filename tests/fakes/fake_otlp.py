"""An OTLP/HTTP receiver for tests, built on the official message definitions (the
opentelemetry-proto package): `POST /v1/metrics` and `POST /v1/traces` with the JSON encoding the
OTLP specification defines, which is the protobuf JSON mapping with these differences: traceId
and spanId are hex strings (not base64), enums are integers, and keys are lowerCamelCase.

Each body is decoded into ExportMetricsServiceRequest / ExportTraceServiceRequest with unknown
fields refused; anything that does not decode, an id of the wrong length, a non-hex id, a zero
id, a wrong Content-Type or method is a violation answered 400, as a collector would. A body
decoded is kept as the protobuf message (`metric_requests`, `trace_requests`).

    otlp = FakeOtlpReceiver().start()
    ... run bizon with OTEL_EXPORTER_OTLP_ENDPOINT=otlp.url ...
    assert otlp.sum("bizon_pipeline.records_synced") == 100
"""

from __future__ import annotations

import base64
import json
import re

from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from fake_server import FakeServer, OffContract, Request, Response

HEX = re.compile(r"[0-9a-fA-F]*")
ID_DIGITS = {"traceId": 32, "spanId": 16, "parentSpanId": 16}


def _hex_ids_to_base64(node, path="$"):
    """OTLP JSON ids are hex; protobuf's JSON reader wants base64 for bytes fields."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            _hex_ids_to_base64(item, f"{path}[{i}]")
    elif isinstance(node, dict):
        for key, value in list(node.items()):
            if key in ID_DIGITS:
                if value == "" and key == "parentSpanId":
                    continue
                if not isinstance(value, str) or len(value) != ID_DIGITS[key] or not HEX.fullmatch(
                    value
                ):
                    raise OffContract(
                        f"{path}.{key}: want {ID_DIGITS[key]} hex digits, got {value!r}"
                    )
                if set(value) == {"0"}:
                    raise OffContract(f"{path}.{key}: an all-zero id is invalid")
                node[key] = base64.b64encode(bytes.fromhex(value)).decode()
            else:
                _hex_ids_to_base64(value, f"{path}.{key}")


def attributes(items) -> dict:
    out = {}
    for kv in items:
        which = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, which) if which else None
    return out


class FakeOtlpReceiver(FakeServer):
    gzip = False

    def __init__(self):
        super().__init__()
        self.metric_requests: list[ExportMetricsServiceRequest] = []
        self.trace_requests: list[ExportTraceServiceRequest] = []
        self.route("POST", "/v1/metrics", self._metrics)
        self.route("POST", "/v1/traces", self._traces)

    def _decode(self, request: Request, message):
        content_type = request.headers.get("content-type", "").split(";")[0].strip()
        if content_type != "application/json":
            raise OffContract(f"Content-Type must be application/json, got {content_type!r}")
        if request.query:
            raise OffContract(f"unexpected query {request.query}")
        try:
            body = json.loads(request.body)
        except ValueError as error:
            raise OffContract(f"body is not JSON: {error}") from None
        _hex_ids_to_base64(body)
        try:
            json_format.ParseDict(body, message, ignore_unknown_fields=False)
        except json_format.ParseError as error:
            raise OffContract(f"not a valid {type(message).__name__}: {error}") from None
        return message

    def _metrics(self, request: Request) -> Response:
        decoded = self._decode(request, ExportMetricsServiceRequest())
        for resource_metrics in decoded.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    kind = metric.WhichOneof("data")
                    if kind is None:
                        raise OffContract(f"metric {metric.name!r} has no data")
                    data = getattr(metric, kind)
                    if kind in ("sum", "histogram") and data.aggregation_temporality == 0:
                        raise OffContract(f"metric {metric.name!r}: unspecified temporality")
                    for point in data.data_points:
                        if point.time_unix_nano == 0:
                            raise OffContract(f"metric {metric.name!r}: a point without time")
                        if kind == "histogram" and len(point.bucket_counts) != len(
                            point.explicit_bounds
                        ) + 1:
                            raise OffContract(f"metric {metric.name!r}: bucket counts != bounds+1")
                        if kind == "histogram" and sum(point.bucket_counts) != point.count:
                            raise OffContract(f"metric {metric.name!r}: buckets do not add up")
        with self._lock:
            self.metric_requests.append(decoded)
        return Response(200, {})

    def _traces(self, request: Request) -> Response:
        decoded = self._decode(request, ExportTraceServiceRequest())
        for resource_spans in decoded.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    if not span.name:
                        raise OffContract("a span without a name")
                    if span.end_time_unix_nano < span.start_time_unix_nano:
                        raise OffContract(f"span {span.name!r} ends before it starts")
        with self._lock:
            self.trace_requests.append(decoded)
        return Response(200, {})

    # -- helpers for tests -------------------------------------------------------------------

    def resources(self) -> list[dict]:
        with self._lock:
            requests = [r.resource_metrics for r in self.metric_requests] + [
                r.resource_spans for r in self.trace_requests
            ]
        return [attributes(item.resource.attributes) for group in requests for item in group]

    def spans(self) -> list:
        with self._lock:
            return [
                span
                for request in self.trace_requests
                for resource_spans in request.resource_spans
                for scope_spans in resource_spans.scope_spans
                for span in scope_spans.spans
            ]

    def points(self, name: str) -> list:
        """The data points of metric `name` in the last export that has it."""
        with self._lock:
            requests = list(self.metric_requests)
        for request in reversed(requests):
            found = [
                (metric, point)
                for resource_metrics in request.resource_metrics
                for scope_metrics in resource_metrics.scope_metrics
                for metric in scope_metrics.metrics
                if metric.name == name
                for point in getattr(metric, metric.WhichOneof("data")).data_points
            ]
            if found:
                return found
        return []

    def sum(self, name: str, **attrs) -> int:
        """The cumulative value of a sum across the points matching `attrs` (last export)."""
        total = 0
        for _, point in self.points(name):
            if all(attributes(point.attributes).get(k) == v for k, v in attrs.items()):
                total += point.as_int
        return total
