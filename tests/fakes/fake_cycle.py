"""A fake Cycle GraphQL API, following Cycle's public API documentation (docs.cycle.app, "The
GraphQL API": How to start, Authentication, Pagination, Limitations). The API carries no version
number; the documented shapes are:

    POST /graphql   Content-Type: application/json   Authorization: Bearer <token>
    {"query": "...", "variables": {...}[, "operationName": "..."]}

* relay-style pagination: ``pagination: { size: N[, where: { cursor: "<id>", direction: AFTER }] }``,
  answers ``{edges: [{cursor, node}], pageInfo: {hasPreviousPage, hasNextPage, startCursor,
  endCursor}}``; the cursor is the id of the item to start after;
* a missing or revoked token gives GraphQL errors ``UNAUTHORIZED``; a product the token cannot see
  gives ``CANT_SEE_PRODUCT`` (answered 200, ``data.getProductBySlug`` null, as GraphQL does);
* rate limit: every answer carries ``Ratelimit-Limit`` (2000 an hour), ``Ratelimit-Policy``,
  ``Ratelimit-Remaining`` and ``Ratelimit-Reset``; the tests inject ``RATE_LIMITED`` (429 with
  Retry-After) when the bucket is full.

Only the query the connector sends is understood: ``getProductBySlug(slug: $slug)`` with its
customers connection and exactly the documented fields (id, email, name, company {domain, id,
name}). Anything else (another path, method, content type, body key, variable, field, a page size
outside 1..100, an unknown cursor) is answered 400 with a GRAPHQL_VALIDATION_FAILED error and
recorded in ``violations``.

The product ``acme-product`` has 250 customers (3 pages of 100); every third one has no company.
"""

from __future__ import annotations

import base64
import json
import re

from fake_server import Fault, FakeServer, OffContract, Response

TOKEN = "cycle_fake_personal_api_key_4f1d"
SLUG = "acme-product"
CUSTOMER_COUNT = 250
MAX_PAGE_SIZE = 100
RATE_HEADERS = {"Ratelimit-Limit": "2000", "Ratelimit-Policy": "2000;w=3600",
                "Ratelimit-Remaining": "1999", "Ratelimit-Reset": "1767225600"}
RATE_LIMITED = Fault(
    status=429,
    headers={"Retry-After": "1", "Content-Type": "application/json", **RATE_HEADERS,
             "Ratelimit-Remaining": "0"},
    body={"errors": [{"message": "Too many requests, please try again later.",
                      "extensions": {"code": "TOO_MANY_REQUESTS"}}]},
)

_PAGE = (r"customers\(pagination: \{ size: (?P<size>\d+)"
         r"(?:, where: \{ cursor: (?P<cursor>\"(?:[^\"\\]|\\.)*\"), direction: AFTER \})? \}\)")
QUERY = re.compile(
    r"^query(?: \w+)? ?\(\$slug: DefaultString!\) ?\{ getProductBySlug\(slug: \$slug\) \{ "
    + _PAGE
    + r" \{ edges \{ cursor node \{ id email name company \{ domain id name \} \} \} "
    r"pageInfo \{ hasPreviousPage hasNextPage startCursor endCursor \} \} \} \}$"
)


def customer_id(n: int) -> str:
    return base64.b64encode(f"Customer_0000{n:04d}-77aa-4c1e-9b2d-acme".encode()).decode()


def customer(n: int) -> dict:
    company = None
    if n % 3:
        company = {"domain": f"company{n % 7}.example", "id": base64.b64encode(
            f"Company_{n % 7}".encode()).decode(), "name": f"Company {n % 7}"}
    return {"id": customer_id(n), "email": f"customer{n}@company{n % 7}.example",
            "name": f"Customer {n}", "company": company}


def graphql_error(message: str, code: str) -> dict:
    return {"message": message, "extensions": {"code": code}}


class FakeCycle(FakeServer):
    def __init__(self, token: str = TOKEN, slug: str = SLUG, count: int = CUSTOMER_COUNT):
        super().__init__()
        self.token = token
        self.products = {slug: [customer(n) for n in range(1, count + 1)]}
        #: The (size, cursor) of every customers page asked for, in order.
        self.pages: list[tuple[int, str | None]] = []
        self.route("POST", "/graphql", self.graphql)

    def customers(self, slug: str = SLUG) -> list[dict]:
        return self.products[slug]

    def error_response(self, error: OffContract) -> Response:
        return Response(error.status, {"errors": [graphql_error(str(error),
                                                                "GRAPHQL_VALIDATION_FAILED")]})

    def graphql(self, request):
        if request.path != "/graphql":
            raise OffContract(f"no such endpoint: {request.path}", status=404)
        if request.query:
            raise OffContract(f"unexpected query string {sorted(request.query)}")
        if not request.headers.get("content-type", "").startswith("application/json"):
            raise OffContract(f"content type must be JSON, got {request.headers.get('content-type')!r}")
        try:
            body = json.loads(request.body)
        except ValueError:
            raise OffContract("the body is not JSON") from None
        if not isinstance(body, dict) or not set(body) <= {"query", "variables", "operationName"} \
                or "query" not in body:
            raise OffContract(f"unexpected body keys {sorted(body) if isinstance(body, dict) else body}")
        variables = body.get("variables") or {}
        if set(variables) != {"slug"} or not isinstance(variables["slug"], str):
            raise OffContract(f"variables must be exactly {{slug}}: {variables}")
        match = QUERY.match(" ".join(body["query"].split()))
        if match is None:
            raise OffContract(f"not the customers query: {body['query']}")

        authorization = request.headers.get("authorization", "")
        if authorization != f"Bearer {self.token}":
            # A GraphQL server answers resolver errors with 200 and data null.
            return Response(200, {"errors": [graphql_error("Unauthorized", "UNAUTHORIZED")],
                                  "data": None}, dict(RATE_HEADERS))
        slug = variables["slug"]
        if slug not in self.products:
            return Response(200, {"errors": [graphql_error("Cannot see this product",
                                                           "CANT_SEE_PRODUCT")],
                                  "data": {"getProductBySlug": None}}, dict(RATE_HEADERS))

        size = int(match.group("size"))
        if not 1 <= size <= MAX_PAGE_SIZE:
            raise OffContract(f"size out of range: {size}")
        cursor = json.loads(match.group("cursor")) if match.group("cursor") else None
        self.pages.append((size, cursor))
        items = self.products[slug]
        start = 0
        if cursor is not None:
            ids = [item["id"] for item in items]
            if cursor not in ids:
                raise OffContract(f"unknown cursor {cursor!r}")
            start = ids.index(cursor) + 1
        page = items[start:start + size]
        edges = [{"cursor": item["id"], "node": item} for item in page]
        page_info = {
            "hasPreviousPage": start > 0,
            "hasNextPage": start + size < len(items),
            "startCursor": page[0]["id"] if page else None,
            "endCursor": page[-1]["id"] if page else None,
        }
        data = {"getProductBySlug": {"customers": {"edges": edges, "pageInfo": page_info}}}
        return Response(200, {"data": data}, dict(RATE_HEADERS))
