"""A fake Sana API for Insights report exports, following Sana's public API documentation
(sana.ai/api-docs "Authentication: Request Access Token", API v1 of the help-centre article
"Insights API": ``POST /api/v1/reports/query`` with ``{"query", "format": "csv"}``, then the
export job). Endpoints:

    POST /api/token              form: grant_type=client_credentials, client_id, client_secret,
                                 scope (comma-separated)
                                 -> {"data": {"accessToken", "tokenType": "bearer", "expiresIn"}}
    POST /api/v1/reports/query   JSON {"query": <SQL>, "format": "csv"}   -> {"data": {"jobId"}}
    GET  /api/v1/reports/jobs/{jobId}
                                 -> {"data": {"jobId", "status", "link": {"url"}}}; the status is
                                    "pending" for `pending_polls` polls, then `final_status`
                                    ("successful" with the link, or e.g. "failed" with an error)
    GET  /exports/{jobId}.csv    the CSV (text/csv; header row, RFC 4180 quoting)

The API calls need ``Authorization: Bearer <accessToken>`` of a token this server issued (401
``{"data": null, "error": {...}}`` otherwise); the download link needs nothing, and rejects an
Authorization header when it is served under another host name (``link_host``), as a pre-signed
storage URL would. Wrong client credentials get 401 from the token endpoint. Off-contract requests
(unknown path or parameter, a grant other than client credentials, a scope other than
``expected_scope``, a body other than the configured query with format csv, an unknown job) are
answered 400 and recorded in ``violations``.

The report: ``ROWS`` (user, user_status, user_last_active_date), with a comma, a quote, an accent
and a line break inside quoted fields, and an empty value.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import threading
from urllib.parse import parse_qs

from fake_server import Fault, FakeServer, OffContract, Response

CLIENT_ID = "sana-fake-client-id"
CLIENT_SECRET = "sana_fake_client_secret_7d2f"
QUERY = 'SELECT "user", "user_status", "user_last_active_date" FROM "analytics"."users" ORDER BY "user"'
COLUMNS = ["user", "user_status", "user_last_active_date"]
ROWS = [
    ["ada@acme.example", "active", "2024-03-01"],
    ["bo@acme.example", "pending", ""],
    ["chloé@acme.example", "active", "2024-02-28"],
    ['dan "the man"@acme.example', "disabled", "2023-12-31"],
    ["eve, admin@acme.example", "active", "2024-03-02"],
    ["fay@acme.example", "note:\nmulti-line", "2024-01-15"],
]
RATE_LIMITED = Fault(
    status=429,
    headers={"Retry-After": "1", "Content-Type": "application/json"},
    body={"data": None, "error": {"code": "rate_limited", "message": "Too many requests"}},
)


def report_csv(rows=None) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    writer.writerows(ROWS if rows is None else rows)
    return out.getvalue()


def expected_records(rows=None) -> list[dict]:
    return [dict(zip(COLUMNS, row)) for row in (ROWS if rows is None else rows)]


class FakeSanaAi(FakeServer):
    def __init__(self, query: str = QUERY, expected_scope: str = "read", pending_polls: int = 2,
                 final_status: str = "successful", link_host: str | None = None):
        super().__init__()
        self.query = query
        self.expected_scope = expected_scope
        self.pending_polls = pending_polls
        self.final_status = final_status
        self.job_error = {"code": "query_failed", "message": 'relation "analytics.nope" does not exist'}
        self.link_host = link_host
        self.csv = report_csv()
        self.expires_in = 3600
        self.tokens: set[str] = set()
        self.jobs: dict[str, int] = {}  # job id -> polls so far
        self._counter = itertools.count(1)
        self._lock2 = threading.Lock()
        self.route("POST", "/api/token", self.token)
        self.route("POST", "/api/v1/reports/query", self.create_job)
        self.route("GET", "/api/v1/reports/jobs", self.job)
        self.route("GET", "/exports", self.download)

    @property
    def api(self) -> str:
        return f"{self.url}/api/v1"

    @property
    def token_endpoint(self) -> str:
        return f"{self.url}/api/token"

    def error_response(self, error: OffContract) -> Response:
        return Response(error.status, error.body or {
            "data": None, "error": {"code": "bad_request", "message": str(error)}})

    # -- auth --------------------------------------------------------------------------------

    def token(self, request):
        if request.headers.get("content-type") != "application/x-www-form-urlencoded":
            raise OffContract("the token request must be form-encoded")
        if "authorization" in request.headers:
            raise OffContract("the token request carries no bearer token")
        form = {k: v[-1] for k, v in parse_qs(request.body.decode(), keep_blank_values=True).items()}
        if set(form) - {"grant_type", "client_id", "client_secret", "scope"}:
            raise OffContract(f"unknown token parameters {sorted(set(form))}")
        if form.get("grant_type") != "client_credentials":
            raise OffContract(f"grant_type must be client_credentials, got {form.get('grant_type')!r}")
        if form.get("scope") != self.expected_scope:
            raise OffContract(f"scope {form.get('scope')!r}, expected {self.expected_scope!r}")
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            return Response(401, {"data": None, "error": {
                "code": "invalid_client", "message": "Invalid client credentials"}})
        token = f"sana-access-{next(self._counter)}"
        with self._lock2:
            self.tokens.add(token)
        return {"data": {"accessToken": token, "tokenType": "bearer", "expiresIn": self.expires_in}}

    def authorized(self, request):
        header = request.headers.get("authorization", "")
        with self._lock2:
            ok = header.startswith("Bearer ") and header[len("Bearer "):] in self.tokens
        if not ok:
            return Response(401, {"data": None, "error": {
                "code": "unauthorized", "message": "Missing or invalid access token"}})
        return None

    # -- reports -----------------------------------------------------------------------------

    def create_job(self, request):
        if request.headers.get("content-type") != "application/json":
            raise OffContract("the export request must be JSON")
        self.only_params(request, set())
        refused = self.authorized(request)
        if refused:
            return refused
        body = request.json
        if body != {"query": self.query, "format": "csv"}:
            raise OffContract(f"unexpected export request {body}")
        job_id = f"job-{next(self._counter):04d}-9f1e"
        with self._lock2:
            self.jobs[job_id] = 0
        return {"data": {"jobId": job_id}}

    def job(self, request):
        self.only_params(request, set())
        refused = self.authorized(request)
        if refused:
            return refused
        parts = request.path.strip("/").split("/")
        if len(parts) != 5:
            raise OffContract(f"not a job path: {request.path}", status=404)
        job_id = parts[4]
        with self._lock2:
            if job_id not in self.jobs:
                raise OffContract(f"unknown job {job_id}", status=404)
            self.jobs[job_id] += 1
            polls = self.jobs[job_id]
        if polls <= self.pending_polls:
            return {"data": {"jobId": job_id, "status": "pending"}}
        if self.final_status != "successful":
            return {"data": {"jobId": job_id, "status": self.final_status, "error": self.job_error}}
        host = self.link_host or "127.0.0.1"
        url = f"http://{host}:{self.port}/exports/{job_id}.csv"
        return {"data": {"jobId": job_id, "status": "successful", "link": {"url": url}}}

    def download(self, request):
        self.only_params(request, set())
        name = request.path.rsplit("/", 1)[-1]
        if not name.endswith(".csv") or name[:-4] not in self.jobs:
            raise OffContract(f"no such export {request.path}", status=404)
        if self.link_host is not None and "authorization" in request.headers:
            raise OffContract("a pre-signed link must not receive the API token")
        return Response(200, self.csv.encode(), {"Content-Type": "text/csv; charset=utf-8"})

    def polls(self) -> list:
        return self.requests_to("/api/v1/reports/jobs", "GET")
