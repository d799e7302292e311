"""The Datadog Agent's trace intake for tests: `PUT /v0.3/traces` with a JSON body, as the
agent's "send traces to the Agent by API" documentation describes it. Every request is checked
and anything off-contract is a violation (answered 400):

* Content-Type application/json; X-Datadog-Trace-Count, when sent, equals the number of traces;
* the body is an array of traces, each a non-empty array of spans sharing one trace_id;
* a span has exactly the documented fields: trace_id, span_id, parent_id (unsigned 64-bit
  integers; trace_id and span_id non-zero and different), name (at most 100 characters),
  resource (at most 5000), service (at most 100), type (string), start (ns since the epoch),
  duration (ns, not negative), error (0 or 1), meta (string to string; `_dd.p.tid`, when present,
  is 16 lowercase hex digits) and metrics (string to number).

    agent = FakeDatadogAgent().start()
    ... run bizon with DD_TRACE_AGENT_URL=agent.url ...
    assert len(agent.spans()) == iterations
"""

from __future__ import annotations

import json
import re

from fake_server import FakeServer, OffContract, Request, Response

U64 = 2**64
FIELDS = {
    "trace_id", "span_id", "parent_id", "name", "resource", "service", "type", "start",
    "duration", "error", "meta", "metrics",
}
REQUIRED = {"trace_id", "span_id", "name", "resource", "service", "start", "duration"}
HEX16 = re.compile(r"[0-9a-f]{16}")


def _uint64(span: dict, key: str, nonzero: bool):
    value = span.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < U64:
        raise OffContract(f"{key} must be an unsigned 64-bit integer, got {value!r}")
    if nonzero and value == 0:
        raise OffContract(f"{key} must not be 0")
    return value


def check_span(span) -> None:
    if not isinstance(span, dict):
        raise OffContract(f"a span must be an object, got {type(span).__name__}")
    unknown = set(span) - FIELDS
    if unknown:
        raise OffContract(f"unknown span fields {sorted(unknown)}")
    missing = REQUIRED - set(span)
    if missing:
        raise OffContract(f"missing span fields {sorted(missing)}")
    trace_id = _uint64(span, "trace_id", True)
    span_id = _uint64(span, "span_id", True)
    _uint64(span, "parent_id", False)
    if trace_id == span_id:
        raise OffContract("trace_id and span_id must differ")
    for key, limit in (("name", 100), ("resource", 5000), ("service", 100), ("type", 100)):
        if key not in span:
            continue
        value = span[key]
        if not isinstance(value, str) or not value or len(value) > limit:
            raise OffContract(f"{key} must be a string of 1 to {limit} characters, got {value!r}")
    for key in ("start", "duration"):
        value = span[key]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise OffContract(f"{key} must be a non-negative int64 of nanoseconds, got {value!r}")
    if span["start"] < 10**18:
        raise OffContract(f"start {span['start']} is not in nanoseconds since the epoch")
    if span.get("error", 0) not in (0, 1) or isinstance(span.get("error", 0), bool):
        raise OffContract(f"error must be 0 or 1, got {span.get('error')!r}")
    meta = span.get("meta", {})
    if not isinstance(meta, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in meta.items()
    ):
        raise OffContract("meta must map strings to strings")
    if "_dd.p.tid" in meta and not HEX16.fullmatch(meta["_dd.p.tid"]):
        raise OffContract(f"_dd.p.tid must be 16 lowercase hex digits, got {meta['_dd.p.tid']!r}")
    metrics = span.get("metrics", {})
    if not isinstance(metrics, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)
        for k, v in metrics.items()
    ):
        raise OffContract("metrics must map strings to numbers")


class FakeDatadogAgent(FakeServer):
    gzip = False

    def __init__(self):
        super().__init__()
        self.traces: list[list[dict]] = []
        self.route("PUT", "/v0.3/traces", self._traces)

    def _traces(self, request: Request) -> Response:
        content_type = request.headers.get("content-type", "")
        if content_type.split(";")[0].strip() != "application/json":
            raise OffContract(f"Content-Type must be application/json, got {content_type!r}")
        try:
            body = json.loads(request.body)
        except ValueError as error:
            raise OffContract(f"body is not JSON: {error}") from None
        if not isinstance(body, list):
            raise OffContract("the body must be an array of traces")
        count = request.headers.get("x-datadog-trace-count")
        if count is not None and count != str(len(body)):
            raise OffContract(f"X-Datadog-Trace-Count {count} but {len(body)} traces")
        for trace in body:
            if not isinstance(trace, list) or not trace:
                raise OffContract("a trace must be a non-empty array of spans")
            for span in trace:
                check_span(span)
            if len({span["trace_id"] for span in trace}) != 1:
                raise OffContract("the spans of one trace must share its trace_id")
        with self._lock:
            self.traces.extend(body)
        return Response(200, "OK", {"Content-Type": "text/plain"})

    def spans(self) -> list[dict]:
        with self._lock:
            return [span for trace in self.traces for span in trace]
