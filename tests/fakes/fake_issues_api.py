"""A GitHub-like issues API and a paged offset API, for the rest_api source's resources form
(several resources in one run, parent -> child endpoints, incremental windows).

GitHub-like, shaped after the REST API's issues and issue comments endpoints:

    GET /repos/<owner>/<repo>/issues?state&sort&direction&since&per_page&page
        -> a JSON array of issues; `Link: <...page=n+1>; rel="next"` while there are more.
        state: open | closed | all (default open); sort: created | updated (default created);
        direction: asc | desc (default desc); since: ISO 8601, issues updated at or after it;
        per_page <= 100 (default 30); page >= 1 (default 1).
    GET /repos/<owner>/<repo>/issues/<number>/comments?per_page&page
        -> a JSON array of comments, Link-paged the same way; 404 {"message": "Not Found"} for an
        issue in `deleted` or one that does not exist.

An issue: {"id", "number", "title", "state", "updated_at", "user": {"login"}, "labels": [...],
"comments": <count>}. A comment: {"id", "body", "updated_at", "user": {"login"}}.

Paged offset API:

    GET /api/events?offset&limit           -> {"data": {"items": [...]}, "meta": {"total": N}}
    POST /api/search {"offset", "limit"}   -> {"hits": [...], "has_more": bool}
    GET /api/batches?page                  -> {"data": [{"batch": k, "items": [...]}, ...],
                                               "total_pages": P}  (two batches per page)

Events: {"id", "kind", "at"}. Credentials: when `token` is set, every endpoint wants
`Authorization: Bearer <token>` (or, when `api_key` is set, the query parameter api_key) and
answers 401 otherwise. Off-contract parameters are answered 400 and listed in `violations`.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode

from fake_server import FakeServer, OffContract, Response

START = datetime(2024, 3, 1, tzinfo=timezone.utc)


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def make_issue(number: int, updated_at: str, comments: int) -> dict:
    return {
        "id": 5000 + number,
        "number": number,
        "title": f"Issue {number}",
        "state": "open" if number % 5 else "closed",
        "updated_at": updated_at,
        "user": {"login": f"user{number % 7}"},
        "labels": [{"name": "bug"}] if number % 3 == 0 else [],
        "comments": comments,
    }


def make_comment(number: int, k: int) -> dict:
    return {
        "id": number * 1000 + k,
        "body": f"comment {k} on {number}",
        "updated_at": iso(START + timedelta(hours=number, minutes=k)),
        "user": {"login": f"user{(number + k) % 7}"},
    }


class FakeIssuesApi(FakeServer):
    """`issues` count issues; issue n is updated at START + (n // 3) minutes, so three issues share
    each timestamp (ties across pages); it has n % 4 comments (some none), or `comments_per_issue`
    when set."""

    def __init__(self, issues: int = 30, events: int = 47, comments_per_issue: int | None = None):
        super().__init__()
        self.owner, self.repo = "acme", "rocket"
        self.comments_per_issue = comments_per_issue
        self.issues = [self.new_issue(n, iso(START + timedelta(minutes=n // 3)))
                       for n in range(1, issues + 1)]
        self.comments: dict[int, list[dict]] = {
            issue["number"]: [make_comment(issue["number"], k)
                              for k in range(1, issue["comments"] + 1)]
            for issue in self.issues
        }
        self.deleted: set[int] = set()
        # Comment requests: how long each takes to answer, and how many were in flight at most.
        self.comment_delay = 0.0
        self.comments_in_flight = 0
        self.max_comments_in_flight = 0
        self.events = [{"id": i, "kind": ("push", "fork", "star")[i % 3],
                        "at": iso(START + timedelta(seconds=i))} for i in range(1, events + 1)]
        self.token: str | None = None
        self.api_key: str | None = None
        self._lock_data = threading.Lock()
        self.route("GET", f"/repos/{self.owner}/{self.repo}/issues", self.issues_route)
        self.route("GET", "/api/events", self.events_route)
        self.route("POST", "/api/search", self.search_route)
        self.route("GET", "/api/batches", self.batches_route)

    def new_issue(self, number: int, updated_at: str) -> dict:
        count = self.comments_per_issue if self.comments_per_issue is not None else number % 4
        return make_issue(number, updated_at, count)

    def add_issue(self, number: int, updated_at: str) -> dict:
        """A new issue (with its comments), as if created since the last read."""
        issue = self.new_issue(number, updated_at)
        with self._lock_data:
            self.issues.append(issue)
            self.comments[number] = [make_comment(number, k) for k in range(1, issue["comments"] + 1)]
        return issue

    # -- expectations ----------------------------------------------------------------------

    def all_comments(self) -> list[dict]:
        """Every comment of every readable issue, with the `_issues_id` its parent adds."""
        out = []
        for issue in sorted(self.issues, key=lambda i: i["number"]):
            if issue["number"] in self.deleted:
                continue
            out += [{**c, "_issues_id": issue["id"]} for c in self.comments[issue["number"]]]
        return out

    # -- helpers ---------------------------------------------------------------------------

    def check_credentials(self, request):
        if self.token is not None and request.headers.get("authorization") != f"Bearer {self.token}":
            raise OffContract("bad credentials", status=401, body={"message": "Bad credentials"})
        if self.api_key is not None and request.param("api_key") != self.api_key:
            raise OffContract("bad api key", status=401, body={"message": "Bad credentials"})

    def link_page(self, request, rows: list, default_per_page: int = 30) -> Response:
        per_page = self.int_param(request, "per_page", default_per_page, 1, 100)
        page = self.int_param(request, "page", 1, 1)
        chunk = rows[(page - 1) * per_page: page * per_page]
        headers = {}
        if page * per_page < len(rows):
            query = {k: v[-1] for k, v in request.query.items()}
            query["page"] = str(page + 1)
            headers["Link"] = f'<{self.url}{request.path}?{urlencode(query)}>; rel="next"'
        return Response(200, chunk, headers)

    # -- routes ----------------------------------------------------------------------------

    def issues_route(self, request):
        self.check_credentials(request)
        rest = request.path[len(f"/repos/{self.owner}/{self.repo}/issues"):].strip("/")
        if rest:
            return self.comments_route(request, rest)
        self.only_params(request, {"state", "sort", "direction", "since", "per_page", "page",
                                   "api_key"})
        state = request.param("state", "open")
        if state not in ("open", "closed", "all"):
            raise OffContract(f"state {state!r}")
        sort = request.param("sort", "created")
        direction = request.param("direction", "desc")
        if sort not in ("created", "updated") or direction not in ("asc", "desc"):
            raise OffContract(f"sort {sort!r} direction {direction!r}")
        with self._lock_data:
            rows = [i for i in self.issues if state == "all" or i["state"] == state]
        if request.param("since") is not None:
            try:
                since = parse_iso(request.param("since"))
            except ValueError:
                raise OffContract(f"since {request.param('since')!r}") from None
            # A test may remove an issue's updated_at: such an issue is always listed.
            rows = [i for i in rows if "updated_at" not in i or parse_iso(i["updated_at"]) >= since]
        key = (lambda i: (i.get("updated_at", ""), i["number"])) if sort == "updated" else (
            lambda i: i["number"])
        rows.sort(key=key, reverse=direction == "desc")
        return self.link_page(request, rows)

    def comments_route(self, request, rest: str):
        parts = rest.split("/")
        if len(parts) != 2 or parts[1] != "comments" or not parts[0].isdigit():
            raise OffContract(f"no such endpoint {request.path}", status=404)
        self.only_params(request, {"per_page", "page", "api_key"})
        number = int(parts[0])
        with self._lock_data:
            self.comments_in_flight += 1
            self.max_comments_in_flight = max(self.max_comments_in_flight, self.comments_in_flight)
        try:
            if self.comment_delay:
                time.sleep(self.comment_delay)
        finally:
            with self._lock_data:
                self.comments_in_flight -= 1
        with self._lock_data:
            comments = self.comments.get(number)
        if comments is None or number in self.deleted:
            # GitHub's answer for an issue that is gone: not a contract violation.
            return Response(404, {"message": "Not Found"})
        return self.link_page(request, comments)

    def events_route(self, request):
        self.check_credentials(request)
        self.only_params(request, {"offset", "limit", "api_key"})
        offset = self.int_param(request, "offset", 0)
        limit = self.int_param(request, "limit", 10, 1, 25)
        return {"data": {"items": self.events[offset: offset + limit]},
                "meta": {"total": len(self.events)}}

    def search_route(self, request):
        self.check_credentials(request)
        body = request.json or {}
        if set(body) - {"offset", "limit", "kind"}:
            raise OffContract(f"unknown body fields {sorted(set(body) - {'offset', 'limit', 'kind'})}")
        offset, limit = body.get("offset", 0), body.get("limit", 10)
        if not isinstance(offset, int) or not isinstance(limit, int) or not 1 <= limit <= 25:
            raise OffContract(f"offset {offset!r} limit {limit!r}")
        rows = [e for e in self.events if body.get("kind") in (None, e["kind"])]
        return {"hits": rows[offset: offset + limit], "has_more": offset + limit < len(rows)}

    def batches_route(self, request):
        self.check_credentials(request)
        self.only_params(request, {"page", "api_key"})
        page = self.int_param(request, "page", 1, 1)
        per_batch, per_page = 4, 2
        batches = [self.events[i: i + per_batch] for i in range(0, len(self.events), per_batch)]
        total_pages = (len(batches) + per_page - 1) // per_page
        chunk = batches[(page - 1) * per_page: page * per_page]
        first = (page - 1) * per_page
        return {"data": [{"batch": first + k + 1, "items": items} for k, items in enumerate(chunk)],
                "total_pages": total_pages}
