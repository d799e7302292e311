"""A generic JSON API for the rest_api source and the HTTP session tests.

It follows no public API: it serves one collection of items in every pagination style the
rest_api source supports, plus an OAuth 2 token endpoint (RFC 6749 §6, refresh-token grant,
form-encoded) and endpoints that need each kind of credentials.

Items: ``{"id": i, "name": "item-<i>", "updated_at": "<ISO 8601 UTC>"}`` for i in 1..N, updated
one minute apart from 2024-01-01T00:00:00Z (``items`` can be replaced).

| endpoint | pagination | response |
|---|---|---|
| GET /offset?offset&limit[&updated_after&updated_before] | offset, limit ≤ 50 | ``{"data": {"items": [...]}, "total": N}`` |
| GET /pages?page&per_page | page number, per_page ≤ 50 | ``{"items": [...], "has_more": bool}`` |
| GET /cursor?cursor&size | cursor | ``{"results": [...], "meta": {"next_cursor": str or null}}`` |
| POST /search {"size", "cursor"?} | cursor in the JSON body | like /cursor |
| GET /next?after | next URL (relative ``/next?after=...``) | ``{"results": [...], "next": url or null}`` |
| GET /link?page | Link header rel="next" | a bare JSON array |
| GET /single | none | ``{"items": [...]}`` |
| POST /oauth/token | - | ``{"access_token", "expires_in", "token_type"}`` |

Credentials: when ``auth`` is set (a function of the request returning an error text or None),
every data endpoint answers 401 ``{"error": "invalid_token", "detail": <text>}`` on failure.
Unknown query parameters and out-of-range values are answered 400.
"""

from __future__ import annotations

import itertools
import threading
import time
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs

from fake_server import FakeServer, OffContract, Response

START = datetime(2024, 1, 1, tzinfo=timezone.utc)


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def make_items(count: int) -> list[dict]:
    return [
        {"id": i, "name": f"item-{i}", "updated_at": iso(START + timedelta(minutes=i))}
        for i in range(1, count + 1)
    ]


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class FakeRestApi(FakeServer):
    PAGE_MAX = 50

    def __init__(self, count: int = 23):
        super().__init__()
        self.items = make_items(count)
        self.auth = None  # Callable[[Request], str | None]
        # OAuth: the refresh token it accepts, and the tokens it issued (token -> expiry, monotonic).
        self.client_id = "client-1"
        self.client_secret = "secret-client-xyz"
        self.refresh_token = "refresh-abc-123"
        self.expires_in = 3600
        self.tokens: dict[str, float] = {}
        self.revoked: set[str] = set()
        self.token_forms: list[dict] = []
        self._token_counter = itertools.count(1)
        self._token_lock = threading.Lock()
        self.route("GET", "/offset", self.offset)
        self.route("GET", "/pages", self.pages)
        self.route("GET", "/cursor", self.cursor)
        self.route("POST", "/search", self.search)
        self.route("GET", "/next", self.next_url)
        self.route("GET", "/link", self.link)
        self.route("GET", "/single", self.single)
        self.route("POST", "/oauth/token", self.oauth_token)

    # -- credentials ---------------------------------------------------------------------------

    def check_auth(self, request):
        if self.auth is None:
            return
        problem = self.auth(request)
        if problem:
            raise OffContract(problem, status=401, body={"error": "invalid_token", "detail": problem})

    def oauth_auth(self, request) -> str | None:
        """An `auth` that accepts only live tokens issued by /oauth/token."""
        header = request.headers.get("authorization", "")
        if not header.startswith("Bearer "):
            return f"missing bearer token, got {header!r}"
        token = header[len("Bearer "):]
        with self._token_lock:
            expiry = self.tokens.get(token)
        if expiry is None or token in self.revoked:
            return f"unknown or revoked token {token}"
        if request.time > expiry:  # Checked at arrival, before any injected delay.
            return f"expired token {token}"
        return None

    def oauth_token(self, request):
        if request.headers.get("content-type") != "application/x-www-form-urlencoded":
            raise OffContract("the token request must be form-encoded")
        form = {k: v[-1] for k, v in parse_qs(request.body.decode(), keep_blank_values=True).items()}
        self.token_forms.append(form)
        if form.get("grant_type") != "refresh_token":
            raise OffContract(f"unsupported grant_type {form.get('grant_type')!r}")
        if form.get("client_id") != self.client_id or form.get("client_secret") != self.client_secret:
            return Response(401, {"error": "invalid_client"})
        if form.get("refresh_token") != self.refresh_token:
            return Response(400, {"error": "invalid_grant"})
        token = f"access-{next(self._token_counter)}-tok"
        with self._token_lock:
            self.tokens[token] = time.monotonic() + self.expires_in
        return {"access_token": token, "token_type": "Bearer", "expires_in": self.expires_in}

    def token_requests(self):
        return self.requests_to("/oauth/token", "POST")

    # -- windows ---------------------------------------------------------------------------------

    def window(self, request) -> list[dict]:
        after = request.param("updated_after")
        before = request.param("updated_before")
        items = self.items
        try:
            if after is not None:
                items = [i for i in items if parse_iso(i["updated_at"]) > parse_iso(after)]
            if before is not None:
                items = [i for i in items if parse_iso(i["updated_at"]) <= parse_iso(before)]
        except ValueError:
            raise OffContract(f"bad timestamp in {after!r} / {before!r}") from None
        return items

    # -- endpoints -------------------------------------------------------------------------------

    def offset(self, request):
        self.check_auth(request)
        self.only_params(request, {"offset", "limit", "updated_after", "updated_before", "tag"})
        offset = self.int_param(request, "offset", 0)
        limit = self.int_param(request, "limit", 10, low=1, high=self.PAGE_MAX)
        items = self.window(request)
        return {"data": {"items": items[offset : offset + limit]}, "total": len(items)}

    def pages(self, request):
        self.check_auth(request)
        self.only_params(request, {"page", "per_page"})
        page = self.int_param(request, "page", 1, low=1)
        per_page = self.int_param(request, "per_page", 10, low=1, high=self.PAGE_MAX)
        start = (page - 1) * per_page
        return {
            "items": self.items[start : start + per_page],
            "has_more": start + per_page < len(self.items),
        }

    def _cursor_page(self, cursor: str | None, size: int) -> dict:
        start = 0
        if cursor is not None:
            if not cursor.startswith("c-"):
                raise OffContract(f"invalid cursor {cursor!r}")
            start = int(cursor[2:])
        end = start + size
        return {
            "results": self.items[start:end],
            "meta": {"next_cursor": f"c-{end}" if end < len(self.items) else None},
        }

    def cursor(self, request):
        self.check_auth(request)
        self.only_params(request, {"cursor", "size"})
        size = self.int_param(request, "size", 10, low=1, high=self.PAGE_MAX)
        return self._cursor_page(request.param("cursor"), size)

    def search(self, request):
        self.check_auth(request)
        self.only_params(request, set())
        if request.headers.get("content-type") != "application/json":
            raise OffContract("the search body must be JSON")
        body = request.json or {}
        unknown = set(body) - {"size", "cursor", "query"}
        if unknown:
            raise OffContract(f"unknown body fields {sorted(unknown)}")
        return self._cursor_page(body.get("cursor"), int(body.get("size", 10)))

    def next_url(self, request):
        self.check_auth(request)
        self.only_params(request, {"after"})
        after = self.int_param(request, "after", 0)
        page = [i for i in self.items if i["id"] > after][:10]
        more = page and page[-1]["id"] < self.items[-1]["id"]
        return {"results": page, "next": f"/next?after={page[-1]['id']}" if more else None}

    def link(self, request):
        self.check_auth(request)
        self.only_params(request, {"page"})
        page = self.int_param(request, "page", 1, low=1)
        start = (page - 1) * 10
        headers = {}
        if start + 10 < len(self.items):
            headers["Link"] = (
                f'<{self.url}/link?page={page + 1}>; rel="next", <{self.url}/link?page=1>; rel="first"'
            )
        return Response(200, self.items[start : start + 10], headers)

    def single(self, request):
        self.check_auth(request)
        self.only_params(request, {"tag"})
        return {"items": self.items}
