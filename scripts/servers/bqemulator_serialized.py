"""Starts bqemulator (the BigQuery emulator of the tests) with its DuckDB connection used by one
side at a time; takes bqemulator's own command line (`start --rest-port ...`).

bqemulator 1.4 shares one DuckDB connection between its REST handlers, which run on the asyncio
event loop, and its Storage Write gRPC handlers, which run on a thread pool, and each side locks
only against itself. When a REST call reaches the connection while an append is inserting rows,
it waits for the connection holding the GIL, which the append needs to read those rows: both
stop for good, and so does every later request. py-spy showed it on a test run: the event loop
in DuckDBEngine.execute under delete_table, the append in _flush_to_target.

Here one process-wide lock is held for each REST request and for each step of a gRPC call.
Threading locks release the GIL while they wait, so the side that holds the connection always
finishes. The emulator served requests one at a time before; it still does, but no longer
deadlocks."""

import functools
import sys
import threading

from bqemulator import server
from bqemulator.grpc_api import write_servicer
from bqemulator.cli import main

LOCK = threading.RLock()


class SerializedRequests:
    """ASGI middleware: each HTTP request holds LOCK from start to end. REST requests run on the
    event loop's one thread, so they still overlap one another (the lock is reentrant), as they
    did; only the gRPC threads wait for them, and they for the gRPC threads."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        LOCK.acquire()
        try:
            await self.app(scope, receive, send)
        finally:
            LOCK.release()


def with_lock(function):
    @functools.wraps(function)
    def locked(*args, **kwargs):
        with LOCK:
            return function(*args, **kwargs)

    return locked


# Every BigQueryWriteHandler step that reaches DuckDB. AppendRows is a stream that stays open
# for a whole run, so its messages take the lock one at a time (_perform_append and the lookups
# before it), never the stream as a whole.
for name in ("_handle_create_write_stream", "_handle_get_write_stream",
             "_handle_finalize_write_stream", "_handle_batch_commit_write_streams",
             "_handle_flush_rows", "_ensure_stream_bound", "_bind_stream_to_target",
             "_perform_append", "_resolve_append_stream", "_flush_to_target"):
    setattr(write_servicer.BigQueryWriteHandler, name,
            with_lock(getattr(write_servicer.BigQueryWriteHandler, name)))

_create_app = server.create_app


def create_app(context):
    app = _create_app(context)
    app.add_middleware(SerializedRequests)  # Added last: the outermost.
    return app


server.create_app = create_app

if __name__ == "__main__":
    sys.argv[0] = "bqemulator"
    sys.exit(main())
