"""A fake Periscope Data (Sisense for Cloud Data Teams) web app, serving the private endpoints the
browser calls and the original connector reads (bizon 0.5.x `periscope` source).

These endpoints have no public documentation and no version: Sisense documents only its separate
public API, which the original does not use. The fake follows the shapes the original reads and
the conventions of the stack the web app runs on: a Rails app behind Cloudflare, the session in
the ``periscope_session`` cookie, Rails' CSRF check on non-GET requests (``x-csrf-token``), the
Cloudflare bot-management cookie ``__cf_bm``.

    GET  /login_state/dashboards?client_site_id=S             -> {"Dashboard": [...]}
    GET  /login_state/sql_views?client_site_id=S              -> {"SqlView": [...]}
    GET  /users/owners?client_site_id=S                       -> [user, ...]
    GET  /welcome/remaining_state/site_models?client_site_id=S -> {"Database": [...], "Site": [...]}
    POST /global_search/search  {client_site_id, filters, limit, query_plan}
                                                              -> {"results": {"data": [...]}}
    GET  /welcome/remaining_widgets?current_dashboard=D&minimum_dashboard_fluid_row=R
         &fluid_column_for_last_widget_in_row=0&client_site_id=S
         -> {"Widget": [...], "TextBox": [...]}: the widgets whose rows overlap [R, R + 50), and
            the textboxes they show; an empty list past the dashboard's last row.

Checked on every request (off-contract, answered 400 and listed in ``violations``): the method
and path, exactly the query parameters above (``client_site_id`` the site's, ``current_dashboard``
an existing dashboard), ``content-type: application/json``, the browser headers the web app's
XHR calls carry (``x-requested-with: XMLHttpRequest``, ``accept``, ``sec-fetch-*``, a Chrome
``user-agent``...), an ``x-csrf-token`` header, and a Cookie header naming exactly ``__cf_bm`` and
``periscope_session``; the search's JSON body field by field.

Refusals (real answers, recorded in ``refused``, not violations): a wrong ``periscope_session``
gets 401 ``{"error": "You need to sign in or sign up before continuing."}`` (Devise's answer to an
XHR); a wrong ``__cf_bm`` a 403 Cloudflare page; a wrong CSRF token on the POST 422
``{"error": "ActionController::InvalidAuthenticityToken"}``. Rate limits and malformed pages are
injected by the tests (``RATE_LIMITED``: Cloudflare's 429 with Retry-After).
"""

from __future__ import annotations

import copy

from fake_server import Fault, FakeServer, OffContract, Response

SITE_ID = 99999
DATABASE_ID = 999
SESSION = "ooooooooo"
CF_BM = "kkkkkkkk"
CSRF_TOKEN = "csrf-token-of-the-fake-session"
WINDOW = 50  # fluid rows per remaining_widgets call

BROWSER_HEADERS = {
    "authority": "app.periscopedata.com",
    "accept": "application/json, text/javascript, */*; q=0.01",
    "accept-language": "fr-FR,fr;q=0.9,en-US;q=0.8,en;q=0.7",
    "sec-ch-ua": '"Chromium";v="118", "Google Chrome";v="118", "Not=A?Brand";v="99"',
    "sec-ch-ua-mobile": "?0",
    "sec-ch-ua-platform": '"macOS"',
    "sec-fetch-dest": "empty",
    "sec-fetch-mode": "cors",
    "sec-fetch-site": "same-origin",
    "user-agent": (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/118.0.0.0 Safari/537.36"
    ),
    "x-requested-with": "XMLHttpRequest",
}

RATE_LIMITED = Fault(
    status=429,
    headers={"Retry-After": "1", "Content-Type": "application/json"},
    body={"error": "rate limited", "retry_after": 1},
)

SEARCH_BODY = {
    "filters": [{"name": "typeFilter", "input": "Dashboard"}],
    "limit": 2000,
    "query_plan": None,
}


def textbox(box_id: int, *paragraphs) -> dict:
    """A textbox whose Slate document has one block per paragraph; a paragraph is a list of
    strings (text leaves) and (text, url) pairs (links)."""
    blocks = []
    for paragraph in paragraphs:
        nodes = []
        for part in paragraph:
            if isinstance(part, tuple):
                nodes.append({"object": "inline", "type": "link", "data": {"url": part[1]},
                              "nodes": [{"object": "text", "leaves": [
                                  {"object": "leaf", "text": part[0], "marks": []}]}]})
            else:
                nodes.append({"object": "text", "leaves": [
                    {"object": "leaf", "text": part, "marks": []}]})
        blocks.append({"object": "block", "type": "paragraph", "data": {}, "nodes": nodes})
    return {"id": box_id, "text_data": {"object": "value", "document": {
        "object": "document", "data": {}, "nodes": blocks}}}


class Site:
    """A site: `dashboards` dashboards; dashboard k (1-based) holds widgets on rows 0..,
    3 windows of them for most, none for every seventh; one widget of each spans two windows
    (it comes back twice), one queries another database, dashboard 1 shows two textboxes."""

    def __init__(self, dashboards: int = 12, database_id: int = DATABASE_ID):
        self.database_id = database_id
        self.dashboards = [
            {"id": 1000 + k, "name": f"Dashboard {k}", "user_id": 7 + k % 3,
             "created_at": f"2023-0{1 + k % 9}-0{1 + k % 7}T10:00:00Z", "archived": False,
             "tags": ["finance"] if k % 2 else []}
            for k in range(1, dashboards + 1)
        ]
        self.widgets: dict[int, list[dict]] = {}
        self.textboxes: dict[int, list[dict]] = {}
        #: raw_text the source must give each textbox widget, by widget id.
        self.expected_text: dict[int, str] = {}
        for dashboard in self.dashboards:
            k = dashboard["id"] - 1000
            widgets = []
            if k % 7 != 0:
                for n in range(6):
                    widget_id = dashboard["id"] * 100 + n
                    widgets.append({
                        "id": widget_id, "dashboard_id": dashboard["id"],
                        "title": f"Chart {n} of dashboard {k}", "database_id": database_id,
                        "fluid_row": n * 25, "fluid_height": 40 if n == 1 else 20,
                        "fluid_column": 0, "sql": f"select {n} from sales", "content_id": None,
                    })
                widgets[4]["database_id"] = 12  # another database: filtered out
                widgets[5]["database_id"] = str(database_id)  # the id as a string still matches
            self.widgets[dashboard["id"]] = widgets
            self.textboxes[dashboard["id"]] = []
        if self.dashboards:
            first = self.dashboards[0]["id"]
            boxes = [
                textbox(501, ["\ufeffQuarterly ", "revenue\u00a0"],
                        [("the runbook", "https://wiki/run")]),
                textbox(502, ["Unused"]),
            ]
            self.textboxes[first] = boxes
            note = {"id": first * 100 + 90, "dashboard_id": first, "title": None,
                    "database_id": database_id, "fluid_row": 10, "fluid_height": 5,
                    "fluid_column": 6, "content_id": 501}
            missing = dict(note, id=first * 100 + 91, content_id=599, fluid_row=12)
            self.widgets[first] += [note, missing]
            self.expected_text = {note["id"]: "Quarterly revenue [the runbook](https://wiki/run)"}
        self.views = [
            {"id": 300 + n, "name": f"view_{n}", "sql": f"select * from t{n}",
             "database_id": database_id}
            for n in range(4)
        ]
        self.users = [
            {"id": 7 + n, "name": f"User {n}", "email": f"user{n}@example.com"} for n in range(3)
        ]
        self.databases = [
            {"id": database_id, "name": "warehouse", "type": "redshift"},
            {"id": 12, "name": "sandbox", "type": "postgres"},
        ]

    def window(self, dashboard_id: int, row: int) -> list[dict]:
        return [w for w in self.widgets[dashboard_id]
                if w["fluid_row"] < row + WINDOW and w["fluid_row"] + w["fluid_height"] > row]

    def charts(self, dashboard_id: int) -> list[dict]:
        """What the source must emit for a dashboard, in order."""
        seen, out, row = set(), [], 0
        while True:
            page = self.window(dashboard_id, row)
            if not page:
                return out
            for w in page:
                if str(w["database_id"]) == str(self.database_id) and w["id"] not in seen:
                    seen.add(w["id"])
                    out.append(dict(w, raw_text=self.expected_text.get(w["id"])))
            row += WINDOW

    def search_results(self) -> list[dict]:
        return [{"id": d["id"], "type": "Dashboard", "name": d["name"],
                 "url": f"/app/{d['name'].replace(' ', '-')}", "owner_id": d["user_id"]}
                for d in self.dashboards]


class FakePeriscope(FakeServer):
    def __init__(self, site: Site | None = None, session: str = SESSION, cf_bm: str = CF_BM,
                 csrf_token: str = CSRF_TOKEN, site_id: int = SITE_ID):
        super().__init__()
        self.site_id = site_id
        self.site = site or Site()
        self.session = session
        self.cf_bm = cf_bm
        self.csrf_token = csrf_token
        self.refused: list[str] = []
        listings = {
            "/login_state/dashboards": lambda: {"Dashboard": self.site.dashboards},
            "/login_state/sql_views": lambda: {"SqlView": self.site.views},
            "/users/owners": lambda: self.site.users,
            "/welcome/remaining_state/site_models": lambda: {
                "Database": self.site.databases, "Site": [{"id": self.site_id, "name": "Acme"}]},
        }
        for path, payload in listings.items():
            self.route("GET", path,
                       lambda r, path=path, payload=payload: self.listing(r, path, payload()))
        self.route("GET", "/welcome/remaining_widgets", self.remaining_widgets)
        self.route("POST", "/global_search/search", self.search)

    # -- checks ------------------------------------------------------------------------------

    def refuse(self, request, status, body, headers=None) -> Response:
        self.refused.append(f"{request.method} {request.path}: {status}")
        return Response(status, body, headers or {})

    def check(self, request, exact_path: str) -> Response | None:
        """The contract every call shares; a refusal Response when the session is refused."""
        if request.path != exact_path:
            raise OffContract(f"unknown path {request.path}", status=404)
        headers = request.headers
        if headers.get("content-type") != "application/json":
            raise OffContract(f"content-type {headers.get('content-type')!r}, not application/json")
        for name, value in BROWSER_HEADERS.items():
            if headers.get(name) != value:
                raise OffContract(f"header {name} is {headers.get(name)!r}, expected {value!r}")
        if not headers.get("x-csrf-token"):
            raise OffContract("no x-csrf-token header")
        cookies = {}
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name:
                cookies[name] = value
        if sorted(cookies) != ["__cf_bm", "periscope_session"]:
            raise OffContract(f"cookies {sorted(cookies)}, expected __cf_bm and periscope_session")
        if cookies["__cf_bm"] != self.cf_bm:
            return self.refuse(request, 403, "<html><title>Just a moment...</title></html>",
                               {"Content-Type": "text/html"})
        if cookies["periscope_session"] != self.session:
            return self.refuse(request, 401,
                               {"error": "You need to sign in or sign up before continuing."})
        if request.method == "POST" and headers["x-csrf-token"] != self.csrf_token:
            return self.refuse(request, 422,
                               {"error": "ActionController::InvalidAuthenticityToken"})
        return None

    def check_site(self, request):
        site = request.param("client_site_id")
        if site != str(self.site_id):
            raise OffContract(f"client_site_id {site!r}, expected {self.site_id}")

    # -- routes ------------------------------------------------------------------------------

    def listing(self, request, path, payload):
        refusal = self.check(request, path)
        if refusal:
            return refusal
        self.only_params(request, {"client_site_id"})
        self.check_site(request)
        return copy.deepcopy(payload)

    def remaining_widgets(self, request):
        refusal = self.check(request, "/welcome/remaining_widgets")
        if refusal:
            return refusal
        expected = {"current_dashboard", "minimum_dashboard_fluid_row",
                    "fluid_column_for_last_widget_in_row", "client_site_id"}
        if set(request.query) != expected:
            raise OffContract(
                f"query parameters {sorted(request.query)}, expected {sorted(expected)}")
        self.check_site(request)
        dashboard = self.int_param(request, "current_dashboard", 0)
        if dashboard not in self.site.widgets:
            raise OffContract(f"no dashboard {dashboard}", status=404)
        row = self.int_param(request, "minimum_dashboard_fluid_row", 0)
        if request.param("fluid_column_for_last_widget_in_row") != "0":
            raise OffContract("fluid_column_for_last_widget_in_row must be 0")
        widgets = self.site.window(dashboard, row)
        shown = {w.get("content_id") for w in widgets}
        boxes = [b for b in self.site.textboxes[dashboard] if b["id"] in shown or b["id"] == 502]
        return copy.deepcopy({"Widget": widgets, "TextBox": boxes if widgets else []})

    def search(self, request):
        refusal = self.check(request, "/global_search/search")
        if refusal:
            return refusal
        self.only_params(request, set())
        try:
            body = request.json
        except ValueError:
            raise OffContract("the body is not JSON") from None
        if not isinstance(body, dict):
            raise OffContract("the body is not a JSON object")
        expected = dict(SEARCH_BODY, client_site_id=self.site_id)
        if set(body) != set(expected):
            raise OffContract(f"body fields {sorted(body)}, expected {sorted(expected)}")
        for key, value in expected.items():
            if body[key] != value:
                raise OffContract(f"body {key} is {body[key]!r}, expected {value!r}")
        data = self.site.search_results()
        return {"results": {"data": data, "total": len(data)}, "query_plan": None}
