"""A fake of the GCS JSON API v1 objects resource, for what the emulator cannot show: a
connection dropped in the middle of a resumable upload, after which the server has kept only part
of what was sent.

Follows Google's documented protocols (cloud.google.com/storage/docs/performing-resumable-uploads,
/uploading-objects, json_api/v1/objects):

* resumable: ``POST /upload/storage/v1/b/B/o?uploadType=resumable&name=N`` with
  ``X-Upload-Content-Length`` opens a session, answered 200 with its URI in ``Location``; each
  ``PUT <session>`` carries ``Content-Range: bytes F-L/T`` and exactly L-F+1 bytes, F must be the
  persisted offset, every chunk but the last a multiple of 256 KiB; answered ``308`` with
  ``Range: bytes=0-P`` (no Range when nothing is persisted), or 200 with the object after the
  last byte. ``Content-Range: bytes */T`` with no body asks for the status. An unknown session is
  404;
* multipart: ``POST /upload/storage/v1/b/B/o?uploadType=multipart``, ``multipart/related`` with a
  JSON part then the media part;
* ``GET /storage/v1/b/B/o/N`` (``alt=media`` for the bytes), ``DELETE`` (204), and
  ``GET /storage/v1/b/B/o`` with ``prefix``, ``maxResults`` and ``pageToken``.

Faults: ``drops`` is a list of absolute byte offsets. A chunk that reaches past one of them is
read whole, then only the bytes before the offset (rounded down to 256 KiB, as GCS persists) are
kept, and the connection is closed with no answer: the client cannot know how much arrived until
it asks. Each drop fires once.

Run by the C++ unit tests (src/google/gcs_client_test.cc) as a process: it prints its base URL on
the first line of stdout, takes ``POST /_fake/drops`` ``{"offsets": [...]}``, answers
``GET /_fake/report`` with its violations and requests, and exits on ``POST /_fake/stop`` or when
its parent process goes away.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import unquote

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_server import FakeServer, OffContract, Response, serve_as_process  # noqa: E402

QUANTUM = 256 * 1024
DROP = Response(status=-1)  # Close the connection without answering.


class FakeGcsResumable(FakeServer):
    gzip = False

    def __init__(self):
        super().__init__()
        self.objects: dict[tuple[str, str], bytes] = {}
        self.sessions: dict[str, dict] = {}
        self.drops: list[int] = []
        self.generation = 1000
        self.route("POST", "/upload/storage/v1/b", self.insert)
        self.route("PUT", "/upload/storage/v1/b", self.put_chunk)
        self.route("GET", "/storage/v1/b", self.get)
        self.route("DELETE", "/storage/v1/b", self.delete)
        self.route("POST", "/_fake/drops", self.set_drops)
        self.route("GET", "/_fake/report", self.report)
        self.stopped = threading.Event()
        self.route("POST", "/_fake/stop", self.stop_request)

    # -- the API's error shape -------------------------------------------------------------

    def error_response(self, error: OffContract) -> Response:
        return Response(error.status, error.body or {
            "error": {"code": error.status, "message": str(error), "errors": [
                {"message": str(error), "domain": "global", "reason": "invalid"}]}})

    def _send(self, handler, request, response, truncate=False):
        if response is DROP:
            handler.close_connection = True
            return
        super()._send(handler, request, response, truncate)

    # -- helpers ---------------------------------------------------------------------------

    def resource(self, bucket: str, name: str) -> dict:
        data = self.objects[(bucket, name)]
        return {"kind": "storage#object", "bucket": bucket, "name": name,
                "size": str(len(data)), "generation": str(self.generation),
                "contentType": "application/octet-stream",
                "md5Hash": hashlib.md5(data).hexdigest(),
                "updated": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())}

    @staticmethod
    def bucket_and_rest(path: str, prefix: str) -> tuple[str, str]:
        match = re.fullmatch(re.escape(prefix) + r"/([^/]+)/o(?:/(.+))?", path)
        if not match:
            raise OffContract(f"not an objects path: {path}", status=404)
        return unquote(match.group(1)), unquote(match.group(2) or "")

    def store(self, bucket: str, name: str, data: bytes) -> dict:
        with self._lock:
            self.objects[(bucket, name)] = data
            self.generation += 1
        return self.resource(bucket, name)

    # -- uploads ---------------------------------------------------------------------------

    def insert(self, request):
        bucket, rest = self.bucket_and_rest(request.path, "/upload/storage/v1/b")
        if rest:
            raise OffContract("uploads go to the bucket's /o collection", status=404)
        kind = request.param("uploadType")
        if kind == "multipart":
            self.only_params(request, {"uploadType"})
            return self.multipart(bucket, request)
        if kind != "resumable":
            raise OffContract(f"unsupported uploadType {kind!r}")
        self.only_params(request, {"uploadType", "name"})
        name = request.param("name")
        metadata = request.json or {}
        if not name or metadata.get("name", name) != name:
            raise OffContract("the object name is missing or differs between query and metadata")
        if not request.headers.get("content-type", "").startswith("application/json"):
            raise OffContract("resumable metadata must be application/json")
        length = request.headers.get("x-upload-content-length")
        if length is None or not length.isdigit():
            raise OffContract("X-Upload-Content-Length missing")
        upload_id = uuid.uuid4().hex
        with self._lock:
            self.sessions[upload_id] = {"bucket": bucket, "name": name, "size": int(length),
                                        "data": bytearray()}
        location = (f"{self.url}/upload/storage/v1/b/{bucket}/o?uploadType=resumable"
                    f"&upload_id={upload_id}")
        return Response(200, {}, {"Location": location})

    def multipart(self, bucket, request):
        content_type = request.headers.get("content-type", "")
        match = re.fullmatch(r"multipart/related; boundary=(\S+)", content_type)
        if not match:
            raise OffContract(f"multipart upload with Content-Type {content_type!r}")
        boundary = match.group(1).encode()
        parts = request.body.split(b"--" + boundary)
        # ["", part1, part2, "--\r\n"]
        if len(parts) != 4 or parts[0] != b"" or parts[3] != b"--\r\n":
            raise OffContract("multipart body is not two parts framed by the boundary")
        head, _, metadata = parts[1].partition(b"\r\n\r\n")
        media_head, _, media = parts[2].partition(b"\r\n\r\n")
        if not head.lower().startswith(b"\r\ncontent-type: application/json"):
            raise OffContract("the first part must be the JSON metadata")
        if b"content-type:" not in media_head.lower() or b"*/*" in media_head:
            raise OffContract("the media part needs a concrete Content-Type")
        if not metadata.endswith(b"\r\n") or not media.endswith(b"\r\n"):
            raise OffContract("each part must end with CRLF before the boundary")
        name = json.loads(metadata[:-2]).get("name")
        if not name:
            raise OffContract("the metadata names no object")
        return self.store(bucket, name, bytes(media[:-2]))

    def put_chunk(self, request):
        self.only_params(request, {"uploadType", "upload_id"})
        upload_id = request.param("upload_id")
        with self._lock:
            session = self.sessions.get(upload_id)
        if session is None:
            return Response(404, {"error": {"code": 404, "message": "No such upload"}})
        content_range = request.headers.get("content-range", "")
        total = session["size"]
        persisted = len(session["data"])
        status = re.fullmatch(r"bytes \*/(\d+)", content_range)
        if status:
            if int(status.group(1)) != total or request.body:
                raise OffContract("a status query has no body and states the total size")
            return self.where(session)
        match = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", content_range)
        if not match:
            raise OffContract(f"unreadable Content-Range {content_range!r}")
        first, last, stated = (int(g) for g in match.groups())
        if stated != total:
            raise OffContract(f"total {stated} differs from X-Upload-Content-Length {total}")
        if first != persisted:
            raise OffContract(f"chunk starts at {first}, the server persisted {persisted}")
        if last - first + 1 != len(request.body):
            raise OffContract(f"Content-Range says {last - first + 1} bytes, body has "
                              f"{len(request.body)}")
        if last + 1 < total and len(request.body) % QUANTUM:
            raise OffContract(f"a non-final chunk of {len(request.body)} bytes is not a "
                              "multiple of 256 KiB")
        if last + 1 > total:
            raise OffContract("chunk runs past the stated size")
        with self._lock:
            drop = next((d for d in self.drops if first < d <= last + 1), None)
            if drop is not None:
                self.drops.remove(drop)
        if drop is not None:
            kept = max(first, (drop // QUANTUM) * QUANTUM)
            session["data"] += request.body[: kept - first]
            return DROP
        session["data"] += request.body
        return self.where(session)

    def where(self, session):
        persisted = len(session["data"])
        if persisted == session["size"]:
            return self.store(session["bucket"], session["name"], bytes(session["data"]))
        headers = {"Range": f"bytes=0-{persisted - 1}"} if persisted else {}
        return Response(308, b"", headers)

    # -- objects ---------------------------------------------------------------------------

    def get(self, request):
        bucket, name = self.bucket_and_rest(request.path, "/storage/v1/b")
        if not name:
            return self.list(bucket, request)
        self.only_params(request, {"alt"})
        if (bucket, name) not in self.objects:
            return Response(404, {"error": {"code": 404, "message": f"No such object: {bucket}/{name}"}})
        if request.param("alt") == "media":
            return Response(200, self.objects[(bucket, name)],
                            {"Content-Type": "application/octet-stream"})
        return self.resource(bucket, name)

    def list(self, bucket, request):
        self.only_params(request, {"prefix", "maxResults", "pageToken"})
        prefix = request.param("prefix", "")
        size = self.int_param(request, "maxResults", 1000, low=1)
        start = self.int_param(request, "pageToken", 0)
        names = sorted(n for b, n in self.objects if b == bucket and n.startswith(prefix))
        page = names[start:start + size]
        body = {"kind": "storage#objects", "items": [self.resource(bucket, n) for n in page]}
        if start + size < len(names):
            body["nextPageToken"] = str(start + size)
        return body

    def delete(self, request):
        bucket, name = self.bucket_and_rest(request.path, "/storage/v1/b")
        with self._lock:
            if self.objects.pop((bucket, name), None) is None:
                return Response(404, {"error": {"code": 404, "message": "No such object"}})
        return Response(204, b"")

    # -- control ---------------------------------------------------------------------------

    def set_drops(self, request):
        with self._lock:
            self.drops = list(request.json["offsets"])
        return {}

    def report(self, request):
        with self._lock:
            return {"violations": list(self.violations),
                    "requests": [{"method": r.method, "path": r.path,
                                  "content_range": r.headers.get("content-range"),
                                  "bytes": len(r.body)} for r in self.requests
                                 if not r.path.startswith("/_fake/")]}

    def stop_request(self, request):
        self.stopped.set()
        return {}


def main():
    fake = FakeGcsResumable()
    serve_as_process(fake, fake.stopped)


if __name__ == "__main__":
    main()
