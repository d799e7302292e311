"""Loopback HTTP server serving N generator records as paged JSON, for the `rest` case.

GET /items?offset=<o>&limit=<l> returns
    {"data": [<record>, ...], "total": N, "next": "http://127.0.0.1:<port>/items?offset=..&limit=.."}
with "next": null on the last page. The records are those of `bench/sources/generator_source.py`
(and of our built-in `generator` source). Every page is rendered once, before the server starts
listening, so a request costs a dictionary lookup and a socket write: the server is the same
for both implementations and stays out of the way. HTTP/1.1 with keep-alive.

Usage: paged_server.py --count N [--payload-bytes B] [--page-size L]; prints the port on stdout.
"""

import argparse
import json
import sys
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

START = datetime(2024, 1, 1, tzinfo=timezone.utc)


def record(i: int, padding: str, start: datetime = START) -> dict:
    """Record i of the generator whose record 0 has updated_at `start` (1 ms apart)."""
    data = {
        "id": i,
        "name": f"record-{i}",
        "updated_at": (start + timedelta(milliseconds=i)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "value": (i * 7919) % 1000,
    }
    if padding:
        data["padding"] = padding
    return data


def pages(count: int, padding: str, size: int = 1000):
    """Records 0..count-1 in lists of `size`: what the dlt peers' resources yield."""
    for offset in range(0, count, size):
        yield [record(i, padding) for i in range(offset, min(count, offset + size))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--payload-bytes", type=int, default=0)
    parser.add_argument("--page-size", type=int, default=1000)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    padding = "x" * args.payload_bytes
    pages: dict[tuple[int, int], bytes] = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *unused):  # Quiet: one line per request would cost more than the page.
            pass

        def do_GET(self):  # noqa: N802 (http.server API)
            url = urlsplit(self.path)
            if url.path != "/items":
                self.send_error(404)
                return
            query = parse_qs(url.query)
            offset = int(query.get("offset", ["0"])[0])
            limit = int(query.get("limit", [str(args.page_size)])[0])
            body = pages.get((offset, limit))
            if body is None:
                body = render(offset, limit)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            # A client that exits closes its keep-alive connection: not an error worth a trace.
            if not isinstance(sys.exc_info()[1], (ConnectionError, BrokenPipeError)):
                super().handle_error(request, client_address)

    server = Server(("127.0.0.1", args.port), Handler)
    port = server.server_address[1]

    def render(offset: int, limit: int) -> bytes:
        stop = min(args.count, offset + limit)
        nxt = f"http://127.0.0.1:{port}/items?offset={stop}&limit={limit}" if stop < args.count else None
        page = {"data": [record(i, padding) for i in range(offset, stop)], "total": args.count, "next": nxt}
        return json.dumps(page, separators=(",", ":")).encode()

    for offset in range(0, max(args.count, 1), args.page_size):
        pages[(offset, args.page_size)] = render(offset, args.page_size)
    print(port, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
