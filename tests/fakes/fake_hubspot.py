"""A fake HubSpot CRM, following the documented CRM API v3 (https://developers.hubspot.com/docs/
api-reference, "CRM objects v3", "Properties v3", "Search the CRM"; OAuth v1 token endpoint;
"API usage guidelines and limits" for the 429 answers).

Endpoints (JSON; every /crm call needs ``Authorization: Bearer <private app token or OAuth access
token>``, else 401 ``INVALID_AUTHENTICATION``):

    GET  /crm/v3/properties/{object}?archived          -> {"results": [{name, label, type, ...}]}
    GET  /crm/v3/objects/{object}?limit&after&properties&archived
         -> {"results": [{id, properties, createdAt, updatedAt, archived}],
             "paging": {"next": {"after", "link"}}}     (no "paging" on the last page)
    POST /crm/v3/objects/{object}/search  {filterGroups, sorts, query, properties, limit, after}
         -> {"total": n, "results": [...], "paging": {"next": {"after", "link"}}}
    POST /oauth/v1/token  (form: grant_type=refresh_token, client_id, client_secret,
         refresh_token) -> {"token_type": "bearer", "access_token", "refresh_token", "expires_in"}

Checked as the documented API would: ``limit`` is 1..100 on lists and 1..200 on searches; list
``properties`` is a comma-separated list of existing property names; search bodies may carry only
the documented fields, filters only ``GTE``/``LT``/``GT``/``LTE``/``EQ`` (values in epoch
milliseconds or ISO 8601) and ``HAS_PROPERTY``, at most 5 groups of at most 10 filters; a search
refuses to page past ``search_cap`` results (10,000, as documented: 400 ``VALIDATION_ERROR``). A
search sorted on a property answers in that order, ties by id. GETs must have no body; POSTs must
be ``application/json`` (the token endpoint form-encoded). Errors use HubSpot's shape
``{"status": "error", "message", "correlationId", "category"}``.

Faults the tests inject: ``RATE_LIMITED`` (429 secondly limit with Retry-After),
``SECONDLY_LIMITED`` (the same without Retry-After), ``DAILY_LIMITED`` (429 ``policyName``
``DAILY``, no Retry-After), and the base server's ``Fault(invalid_json=True)``.

The account: 250 contacts, 3 companies, 5 deals, 2 tickets, 2 products, each with a handful of
properties, last modified in March 2024. ``touch(object, id)`` modifies one now, ``add(object, n,
at_ms)`` creates n more modified at given times (``ms_step`` apart; ``same_ms`` share each time).
"""

from __future__ import annotations

import copy
import functools
import itertools
import json
import threading
import time
from datetime import datetime, timezone
from urllib.parse import parse_qs

from fake_server import Fault, FakeServer, OffContract, Response

TOKEN = "pat-na1-fake-private-app-token-0000"
CLIENT_ID = "fake-hubspot-client-id"
CLIENT_SECRET = "fake-hubspot-client-secret"
REFRESH_TOKEN = "fake-hubspot-refresh-token"
LIST_MAX = 100
SEARCH_MAX = 200
SEARCH_CAP = 10_000


def _limit_error(policy: str, message: str) -> dict:
    return {"status": "error", "message": message, "errorType": "RATE_LIMIT",
            "correlationId": "00000000-0000-4000-8000-000000000429", "policyName": policy,
            "requestId": "00000000-0000-4000-8000-000000000430"}


RATE_LIMITED = Fault(
    status=429, headers={"Retry-After": "1", "Content-Type": "application/json"},
    body=_limit_error("TEN_SECONDLY_ROLLING", "You have reached your ten_secondly_rolling limit."))
SECONDLY_LIMITED = Fault(
    status=429, headers={"Content-Type": "application/json"},
    body=_limit_error("TEN_SECONDLY_ROLLING", "You have reached your ten_secondly_rolling limit."))
DAILY_LIMITED = Fault(
    status=429, headers={"Content-Type": "application/json"},
    body=_limit_error("DAILY", "You have reached your daily limit."))

BASE_MS = int(datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc).timestamp() * 1000)

# Per object: the modification property, and the other properties with a value maker.
SCHEMAS = {
    "contacts": ("lastmodifieddate", {
        "email": lambda n: f"contact{n}@example.com",
        "firstname": lambda n: f"First{n}",
        "lastname": lambda n: f"Last{n}",
        "phone": lambda n: None if n % 4 == 0 else f"+1-555-{n:04d}",
        "lifecyclestage": lambda n: ["lead", "customer", "subscriber"][n % 3],
    }),
    "companies": ("hs_lastmodifieddate", {
        "name": lambda n: f"Company {n}",
        "domain": lambda n: f"company{n}.example.com",
        "industry": lambda n: "COMPUTER_SOFTWARE" if n % 2 else None,
    }),
    "deals": ("hs_lastmodifieddate", {
        "dealname": lambda n: f"Deal {n}",
        "amount": lambda n: str(1000 * n),
        "dealstage": lambda n: ["appointmentscheduled", "closedwon"][n % 2],
        "pipeline": lambda n: "default",
    }),
    "tickets": ("hs_lastmodifieddate", {
        "subject": lambda n: f"Ticket {n}",
        "content": lambda n: f"Something broke ({n})",
        "hs_pipeline_stage": lambda n: "1",
    }),
    "products": ("hs_lastmodifieddate", {
        "name": lambda n: f"Product {n}",
        "price": lambda n: f"{n}9.99",
        "hs_sku": lambda n: f"SKU-{n:03d}",
    }),
}
COUNTS = {"contacts": 250, "companies": 3, "deals": 5, "tickets": 2, "products": 2}
# What a list or search answers without `properties`.
DEFAULTS = {
    "contacts": ["createdate", "email", "firstname", "hs_object_id", "lastmodifieddate",
                 "lastname"],
    "companies": ["createdate", "domain", "hs_lastmodifieddate", "hs_object_id", "name"],
    "deals": ["amount", "closedate", "createdate", "dealname", "dealstage",
              "hs_lastmodifieddate", "hs_object_id", "pipeline"],
    "tickets": ["content", "createdate", "hs_lastmodifieddate", "hs_object_id",
                "hs_pipeline_stage", "subject"],
    "products": ["createdate", "hs_lastmodifieddate", "hs_object_id", "name", "price"],
}
SEARCH_FIELDS = {"filterGroups", "sorts", "query", "properties", "limit", "after"}
RANGE_OPERATORS = {"GTE", "LT", "GT", "LTE", "EQ"}


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def to_ms(value) -> int:
    return _to_ms(str(value))


@functools.lru_cache(maxsize=None)
def _to_ms(text: str) -> int:
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        raise OffContract(f"filter value {text!r} is neither epoch milliseconds nor ISO 8601")


class Account:
    """The CRM objects a fake serves; tests edit them with touch() and add()."""

    def __init__(self, counts: dict | None = None):
        self.objects: dict[str, list[dict]] = {name: [] for name in SCHEMAS}
        self._ids = itertools.count(1001)
        for name, count in (counts or COUNTS).items():
            for n in range(count):
                self._create(name, BASE_MS + 60_000 * n)

    def properties(self, name: str) -> list[dict]:
        modified, extra = SCHEMAS[name]
        names = ["createdate", modified, "hs_object_id", *extra]
        if name == "deals":
            names.append("closedate")
        return [{"name": p, "label": p.replace("_", " ").title(),
                 "type": "datetime" if p.endswith("date") else "string",
                 "fieldType": "date" if p.endswith("date") else "text",
                 "description": "", "groupName": f"{name[:-1]}information",
                 "options": [], "displayOrder": -1, "calculated": False,
                 "externalOptions": False, "hasUniqueValue": p == "hs_object_id",
                 "hidden": False, "formField": False} for p in names]

    def _create(self, name: str, modified_ms: int) -> dict:
        object_id = str(next(self._ids))
        n = int(object_id) - 1000
        modified, extra = SCHEMAS[name]
        created = iso(min(modified_ms, BASE_MS))
        props = {"createdate": created, "hs_object_id": object_id, modified: iso(modified_ms)}
        for key, make in extra.items():
            props[key] = make(n)
        if name == "deals":
            props["closedate"] = None
        record = {"id": object_id, "properties": props, "createdAt": created,
                  "updatedAt": iso(modified_ms), "archived": False}
        self.objects[name].append(record)
        return record

    def touch(self, name: str, object_id: str, at_ms: int | None = None, **changes) -> dict:
        at_ms = at_ms if at_ms is not None else int(time.time() * 1000)
        record = next(r for r in self.objects[name] if r["id"] == object_id)
        modified, _ = SCHEMAS[name]
        record["properties"].update(changes)
        record["properties"][modified] = iso(at_ms)
        record["updatedAt"] = iso(at_ms)
        return record

    def add(self, name: str, count: int, at_ms: int, ms_step: int = 1, same_ms: int = 1):
        return [self._create(name, at_ms + ms_step * (i // same_ms)) for i in range(count)]

    def modified_ms(self, name: str, record: dict) -> int:
        return to_ms(record["properties"][SCHEMAS[name][0]])


class FakeHubSpot(FakeServer):
    def __init__(self, token: str = TOKEN, counts: dict | None = None,
                 search_cap: int = SEARCH_CAP):
        super().__init__()
        self.token = token
        self.search_cap = search_cap
        self.account = Account(counts)
        self.access_tokens: set[str] = set()
        self.expires_in = 1800
        self._token_counter = itertools.count(1)
        self._lock_tokens = threading.Lock()
        self.route("GET", "/crm/v3/properties", self._properties)
        self.route("GET", "/crm/v3/objects", self._list)
        self.route("POST", "/crm/v3/objects", self._search)
        self.route("POST", "/oauth/v1/token", self._token)

    # -- shape and checks --------------------------------------------------------------------

    def error_response(self, error: OffContract) -> Response:
        body = error.body or {
            "status": "error", "message": str(error),
            "correlationId": "00000000-0000-4000-8000-000000000400",
            "category": "VALIDATION_ERROR",
        }
        return Response(error.status, body)

    def _authorize(self, request):
        header = request.headers.get("authorization", "")
        bearer = header[len("Bearer "):] if header.startswith("Bearer ") else None
        with self._lock_tokens:
            valid = bearer is not None and (bearer == self.token or bearer in self.access_tokens)
        if not valid:
            raise OffContract("bad credentials", status=401, body={
                "status": "error",
                "message": "Authentication credentials not found. This API supports OAuth 2.0 "
                           "authentication and you can find more details at "
                           "https://developers.hubspot.com/docs/methods/auth/oauth-overview",
                "correlationId": "00000000-0000-4000-8000-000000000401",
                "category": "INVALID_AUTHENTICATION"})
        if "json" not in request.headers.get("accept", "json"):
            raise OffContract(f"Accept {request.headers['accept']!r} is not JSON")

    def _object(self, request, suffix: str = "") -> str:
        parts = request.path.strip("/").split("/")
        name = parts[3] if len(parts) > 3 else ""
        if name not in SCHEMAS:
            raise OffContract(f"unknown object type {name!r}", status=400)
        if "/".join(parts[4:]) != suffix:
            raise OffContract(f"no such endpoint {request.path}", status=404)
        return name

    @staticmethod
    def _no_body(request):
        if request.body:
            raise OffContract(f"a GET with a body: {request.body[:40]!r}")

    def _json_body(self, request) -> dict:
        if request.headers.get("content-type", "").split(";")[0] != "application/json":
            raise OffContract(f"content type {request.headers.get('content-type')!r}")
        if request.query:
            raise OffContract(f"query parameters on a POST: {sorted(request.query)}")
        try:
            body = json.loads(request.body)
        except ValueError:
            raise OffContract("the body is not JSON") from None
        if not isinstance(body, dict):
            raise OffContract("the body is not a JSON object")
        return body

    def _project(self, name: str, record: dict, properties: list[str] | None) -> dict:
        wanted = properties if properties is not None else DEFAULTS[name]
        out = copy.deepcopy(record)
        out["properties"] = {p: record["properties"].get(p) for p in wanted}
        return out

    def _check_properties(self, name: str, properties: list[str]):
        known = {p["name"] for p in self.account.properties(name)}
        unknown = [p for p in properties if p not in known]
        if unknown or not properties:
            raise OffContract(f"unknown properties {unknown}" if unknown else "empty properties")

    # -- routes ------------------------------------------------------------------------------

    def _properties(self, request):
        self._authorize(request)
        self._no_body(request)
        self.only_params(request, {"archived"})
        if request.param("archived", "false") != "false":
            raise OffContract("archived must be false")
        return {"results": self.account.properties(self._object(request))}

    def expected_list(self, name: str, properties: list[str] | None = None) -> list[dict]:
        """The records a full read of `name` returns, in order."""
        props = properties or [p["name"] for p in self.account.properties(name)]
        return [self._project(name, r, props) for r in self.account.objects[name]]

    def _list(self, request):
        self._authorize(request)
        self._no_body(request)
        name = self._object(request)
        self.only_params(request, {"limit", "after", "properties", "archived"})
        for key, values in request.query.items():
            if len(values) != 1:
                raise OffContract(f"{key} given {len(values)} times")
        limit = self.int_param(request, "limit", 10, low=1, high=LIST_MAX)
        if request.param("archived", "false") != "false":
            raise OffContract("archived must be false")
        properties = None
        if request.param("properties") is not None:
            properties = request.param("properties").split(",")
            self._check_properties(name, properties)
        records = self.account.objects[name]
        start = 0
        after = request.param("after")
        if after is not None:
            positions = [i for i, r in enumerate(records) if r["id"] == after]
            if not positions:
                raise OffContract(f"after {after!r} is not a cursor this API handed out")
            start = positions[0]
        page = records[start:start + limit]
        body = {"results": [self._project(name, r, properties) for r in page]}
        if start + limit < len(records):
            nxt = records[start + limit]["id"]
            body["paging"] = {"next": {
                "after": nxt,
                "link": f"{self.url}/crm/v3/objects/{name}?limit={limit}&after={nxt}"}}
        return body

    def _filter(self, name: str, groups) -> callable:
        if not isinstance(groups, list) or len(groups) > 5:
            raise OffContract("filterGroups must be a list of at most 5 groups")
        checks = []
        for group in groups:
            filters = group.get("filters") if isinstance(group, dict) else None
            if set(group) - {"filters"} or not isinstance(filters, list) or len(filters) > 10:
                raise OffContract(f"bad filter group {group!r}")
            group_checks = []
            for f in filters:
                op, prop = f.get("operator"), f.get("propertyName")
                self._check_properties(name, [prop])
                if op == "HAS_PROPERTY":
                    if set(f) - {"operator", "propertyName"}:
                        raise OffContract(f"bad filter {f!r}")
                    group_checks.append(lambda r, p=prop: r["properties"].get(p) is not None)
                elif op in RANGE_OPERATORS:
                    if set(f) != {"operator", "propertyName", "value"}:
                        raise OffContract(f"bad filter {f!r}")
                    bound = to_ms(f["value"])
                    compare = {"GTE": int.__ge__, "LT": int.__lt__, "GT": int.__gt__,
                               "LTE": int.__le__, "EQ": int.__eq__}[op]
                    group_checks.append(
                        lambda r, p=prop, b=bound, c=compare:
                        r["properties"].get(p) is not None and c(to_ms(r["properties"][p]), b))
                else:
                    raise OffContract(f"operator {op!r} is not used by the source")
            checks.append(group_checks)
        if not checks:
            return lambda r: True
        return lambda r: any(all(c(r) for c in group) for group in checks)

    def _search(self, request):
        self._authorize(request)
        name = self._object(request, suffix="search")
        body = self._json_body(request)
        unknown = set(body) - SEARCH_FIELDS
        if unknown:
            raise OffContract(f"unknown search fields {sorted(unknown)}")
        limit = body.get("limit", 10)
        if not isinstance(limit, int) or not 1 <= limit <= SEARCH_MAX:
            raise OffContract(f"limit must be 1..{SEARCH_MAX}, got {limit!r}")
        properties = body.get("properties")
        if properties is not None:
            if not isinstance(properties, list):
                raise OffContract("properties must be a list")
            self._check_properties(name, properties)
        keep = self._filter(name, body.get("filterGroups", []))
        matches = [r for r in self.account.objects[name] if keep(r)]
        sorts = body.get("sorts", [])
        if len(sorts) > 1:
            raise OffContract("one sort at most")
        if sorts:
            sort = sorts[0]
            if set(sort) != {"propertyName", "direction"} or sort["direction"] not in (
                    "ASCENDING", "DESCENDING"):
                raise OffContract(f"bad sort {sort!r}")
            self._check_properties(name, [sort["propertyName"]])
            key = sort["propertyName"]
            matches.sort(key=lambda r: (to_ms(r["properties"][key]), int(r["id"])),
                         reverse=sort["direction"] == "DESCENDING")
        after = body.get("after", "0")
        if not isinstance(after, str) or not after.isdigit():
            raise OffContract(f"after must be a cursor this API handed out, got {after!r}")
        start = int(after)
        if start + limit > self.search_cap:
            raise OffContract(
                f"paging past {self.search_cap} results: after {start}, limit {limit}", body={
                    "status": "error",
                    "message": "There was a problem with the request.",
                    "correlationId": "00000000-0000-4000-8000-000000010000",
                    "category": "VALIDATION_ERROR"})
        page = matches[start:start + limit]
        wanted = properties
        if wanted is not None:  # The search adds its own defaults to the requested properties.
            wanted = list(dict.fromkeys([*wanted, "hs_object_id", "createdate",
                                         SCHEMAS[name][0]]))
        out = {"total": len(matches),
               "results": [self._project(name, r, wanted) for r in page]}
        end = start + len(page)
        if end < len(matches):  # Handed out at the cap too; following it is then refused.
            out["paging"] = {"next": {"after": str(end), "link": f"?after={end}"}}
        return out

    def _token(self, request):
        if request.headers.get("content-type", "").split(";")[0] != (
                "application/x-www-form-urlencoded"):
            raise OffContract("the token request is not form-encoded")
        form = {k: v[-1] for k, v in parse_qs(request.body.decode()).items()}
        if set(form) - {"grant_type", "client_id", "client_secret", "refresh_token",
                        "redirect_uri", "code"}:
            raise OffContract(f"unknown token fields {sorted(form)}")
        if (form.get("grant_type") != "refresh_token" or form.get("client_id") != CLIENT_ID
                or form.get("client_secret") != CLIENT_SECRET
                or form.get("refresh_token") != REFRESH_TOKEN):
            raise OffContract("bad refresh", status=400, body={
                "status": "BAD_REFRESH_TOKEN", "message": "missing or invalid refresh token",
                "correlationId": "00000000-0000-4000-8000-000000000402"})
        access = f"fake-hubspot-access-token-{next(self._token_counter)}"
        with self._lock_tokens:
            self.access_tokens.add(access)
        return {"token_type": "bearer", "refresh_token": REFRESH_TOKEN, "access_token": access,
                "expires_in": self.expires_in}
