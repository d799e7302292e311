"""Loopback HTTP server of parents and their children, for the `rest-children` case.

    GET /parents?page=<p>&per_page=<n>
        -> {"data": [<parent>, ...], "next": "http://127.0.0.1:<port>/parents?page=<p+1>&per_page=<n>" | null}
    GET /parents/<id>/children
        -> {"data": [<child>, ...]}   (one page: every child of the parent)

Parent i (0 <= i < parents): {"id": i, "name": "parent-<i>", "updated_at": ...}; child k of
parent i: {"id": i * children + k, "parent_id": i, "name": "child-<i>-<k>", "value": ...,
"padding": "x" * payload_bytes}. Every page is rendered before the server listens, so a request
costs a dictionary lookup and a socket write, the same for every client. HTTP/1.1, keep-alive,
one thread per connection, TCP_NODELAY (small answers are not held back for a delayed ACK).

Usage: parent_child_server.py --parents N --children M [--payload-bytes B] [--per-page P];
prints the port on stdout.
"""

import argparse
import json
import sys
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

START = datetime(2024, 1, 1, tzinfo=timezone.utc)


def parent(i: int) -> dict:
    return {"id": i, "name": f"parent-{i}",
            "updated_at": (START + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ")}


def child(i: int, k: int, children: int, padding: str) -> dict:
    return {"id": i * children + k, "parent_id": i, "name": f"child-{i}-{k}",
            "value": (i * 7919 + k) % 1000, "padding": padding}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--parents", type=int, required=True)
    parser.add_argument("--children", type=int, required=True)
    parser.add_argument("--payload-bytes", type=int, default=0)
    parser.add_argument("--per-page", type=int, default=100)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    padding = "x" * args.payload_bytes
    pages: dict[str, bytes] = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out as two writes: with Nagle's algorithm the body would wait for
        # the client's delayed ACK of the headers (40 ms a request, whoever the client is).
        disable_nagle_algorithm = True

        def log_message(self, *unused):
            pass

        def do_GET(self):  # noqa: N802 (http.server API)
            url = urlsplit(self.path)
            key = url.path
            if url.path == "/parents":
                query = parse_qs(url.query)
                key = f"/parents?page={query.get('page', ['1'])[0]}"
            body = pages.get(key)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            if not isinstance(sys.exc_info()[1], (ConnectionError, BrokenPipeError)):
                super().handle_error(request, client_address)

    server = Server(("127.0.0.1", args.port), Handler)
    port = server.server_address[1]
    page_count = (args.parents + args.per_page - 1) // args.per_page
    for p in range(1, page_count + 1):
        rows = [parent(i) for i in range((p - 1) * args.per_page,
                                         min(args.parents, p * args.per_page))]
        nxt = (f"http://127.0.0.1:{port}/parents?page={p + 1}&per_page={args.per_page}"
               if p < page_count else None)
        pages[f"/parents?page={p}"] = json.dumps({"data": rows, "next": nxt}).encode()
    for i in range(args.parents):
        rows = [child(i, k, args.children, padding) for k in range(args.children)]
        pages[f"/parents/{i}/children"] = json.dumps({"data": rows}).encode()
    print(port, flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
