"""The base of the fake API servers: a threaded HTTP/1.1 server on loopback that records every
request, answers 400 to anything off-contract, and injects faults on demand.

A fake runs inside the pytest process (one thread per connection), so a test configures it and
reads what it received directly:

    server = FakePokeApi().start()          # port 0: the OS picks a free port
    server.inject("/api/v2/pokemon", Fault(status=503), times=2)
    ... run bizon against server.url ...
    assert [r.path for r in server.requests] == [...]
    server.stop()

Faults (one is consumed per matching request, in order):

* ``Fault(status=503, headers={"Retry-After": "1"}, body=...)``: answer that instead;
* ``Fault(delay=3)``: wait before answering (past a client's read timeout), then answer normally
  (or with ``status`` when set);
* ``Fault(truncate=True)``: send the normal answer's headers with its full Content-Length, half
  of the body, then close the connection;
* ``Fault(invalid_json=True)``: answer 200 with a body that is not JSON.

Off-contract requests (unknown path, parameter, header or body field) get a 400 and are listed in
``server.violations``; the fixtures assert it is empty when a test ends.

Standard library only.
"""

from __future__ import annotations

import gzip
import os
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class OffContract(Exception):
    """Raised by a route for a request the documented API would reject."""

    def __init__(self, message: str, status: int = 400, body: dict | None = None):
        super().__init__(message)
        self.status = status
        self.body = body


@dataclass
class Fault:
    status: int | None = None
    headers: dict = field(default_factory=dict)
    body: object = None
    delay: float = 0.0
    truncate: bool = False
    invalid_json: bool = False


@dataclass
class Request:
    method: str
    path: str
    query: dict  # name -> list of values
    headers: dict  # lower-case name -> value
    body: bytes
    time: float
    client: tuple

    @property
    def json(self):
        return json.loads(self.body) if self.body else None

    def param(self, name: str, default=None):
        values = self.query.get(name)
        return values[-1] if values else default


@dataclass
class Response:
    status: int = 200
    body: object = None  # dict/list (JSON), str or bytes
    headers: dict = field(default_factory=dict)


class FakeServer:
    """Routes are methods registered with `route(method, path_prefix, handler)`; a handler gets a
    Request and returns a Response (or a dict/list, answered as 200 JSON)."""

    #: Compress JSON answers with gzip when the client accepts it.
    gzip = True

    def __init__(self):
        self._routes: list[tuple[str, str, object]] = []
        self._faults: list[tuple[str, list]] = []  # (path prefix, [Fault or (Fault, None)])
        self._lock = threading.Lock()
        self.requests: list[Request] = []
        self.violations: list[str] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> "FakeServer":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # Quiet.
                pass

            def do_GET(self):
                fake._handle(self)

            def do_POST(self):
                fake._handle(self)

            def do_PATCH(self):
                fake._handle(self)

            def do_PUT(self):
                fake._handle(self)

            def do_DELETE(self):
                fake._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- configuration -----------------------------------------------------------------------

    def route(self, method: str, prefix: str, handler):
        self._routes.append((method, prefix, handler))

    def inject(self, prefix: str, fault: Fault, times: int | None = 1, when=None):
        """Answers the next `times` requests whose path starts with `prefix` (and for which
        `when(request)` is true, when given) with `fault` (None: every one until
        `clear_faults`)."""
        with self._lock:
            self._faults.append((prefix, [fault, times, when]))

    def clear_faults(self):
        with self._lock:
            self._faults.clear()

    def requests_to(self, prefix: str, method: str | None = None) -> list[Request]:
        with self._lock:
            return [
                r
                for r in self.requests
                if r.path.startswith(prefix) and (method is None or r.method == method)
            ]

    # -- handling ----------------------------------------------------------------------------

    def _take_fault(self, request: Request) -> Fault | None:
        with self._lock:
            for entry in self._faults:
                prefix, slot = entry
                if not request.path.startswith(prefix):
                    continue
                fault, times, when = slot
                if when is not None and not when(request):
                    continue
                if times is None:
                    return fault
                if times > 0:
                    slot[1] = times - 1
                    return fault
        return None

    def _handle(self, handler: BaseHTTPRequestHandler):
        split = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        request = Request(
            method=handler.command,
            path=split.path,
            query=parse_qs(split.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=body,
            time=time.monotonic(),
            client=handler.client_address,
        )
        with self._lock:
            self.requests.append(request)

        fault = self._take_fault(request)
        if fault is not None and fault.delay:
            time.sleep(fault.delay)
        try:
            if fault is not None and fault.invalid_json:
                self._send(handler, request, Response(200, b'{"results": [{"id": 1}, {"id": '))
                return
            if fault is not None and fault.status is not None:
                self._send(handler, request, Response(fault.status, fault.body, dict(fault.headers)))
                return
            response = self._dispatch(request)
            self._send(handler, request, response, truncate=bool(fault and fault.truncate))
        except (BrokenPipeError, ConnectionResetError):
            pass  # The client gave up (a read timeout): nothing to answer.

    def _dispatch(self, request: Request) -> Response:
        for method, prefix, route in self._routes:
            if request.method == method and (
                request.path == prefix or request.path.startswith(prefix.rstrip("/") + "/")
            ):
                try:
                    result = route(request)
                except OffContract as error:
                    with self._lock:
                        self.violations.append(f"{request.method} {request.path}: {error}")
                    return self.error_response(error)
                return result if isinstance(result, Response) else Response(200, result)
        with self._lock:
            self.violations.append(f"{request.method} {request.path}: no such endpoint")
        return self.error_response(OffContract("no such endpoint", status=404))

    def error_response(self, error: OffContract) -> Response:
        """The API's error shape; fakes override it."""
        return Response(error.status, error.body or {"error": str(error)})

    def _send(self, handler, request: Request, response: Response, truncate: bool = False):
        body = response.body
        headers = dict(response.headers)
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        elif isinstance(body, str):
            body = body.encode()
        elif body is None:
            body = b""
        if (
            self.gzip
            and body
            and "gzip" in request.headers.get("accept-encoding", "")
            and headers.get("Content-Type") == "application/json"
            and not truncate
        ):
            body = gzip.compress(body)
            headers["Content-Encoding"] = "gzip"
        handler.send_response(response.status)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        if truncate:
            handler.send_header("Connection", "close")
        handler.end_headers()
        if truncate:
            handler.wfile.write(body[: len(body) // 2])
            handler.wfile.flush()
            handler.close_connection = True
            return
        handler.wfile.write(body)

    # -- helpers for routes ------------------------------------------------------------------

    @staticmethod
    def only_params(request: Request, allowed: set[str]):
        unknown = set(request.query) - allowed
        if unknown:
            raise OffContract(f"unknown query parameters {sorted(unknown)}")

    @staticmethod
    def int_param(request: Request, name: str, default: int, low: int = 0, high: int | None = None):
        text = request.param(name)
        if text is None:
            return default
        try:
            value = int(text)
        except ValueError:
            raise OffContract(f"{name} must be an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise OffContract(f"{name} out of range: {value}")
        return value

    def connections(self) -> int:
        """How many distinct client connections the requests came over."""
        with self._lock:
            return len({r.client for r in self.requests})


def serve_as_process(fake: FakeServer, stopped: threading.Event) -> None:
    """Runs `fake` for a test in another language (the C++ unit tests start the script with
    popen): prints its base URL on the first line of stdout, then serves until the `stopped`
    event is set (a POST /_fake/stop) or the parent process goes away."""
    fake.start()
    print(fake.url, flush=True)
    parent = os.getppid()
    while not stopped.wait(0.2):
        if os.getppid() != parent:
            break
    time.sleep(0.1)  # Lets the answer to /_fake/stop go out.
    fake.stop()
