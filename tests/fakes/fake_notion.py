"""A fake Notion API, following the documented API version 2025-09-03
(https://developers.notion.com/reference, "Upgrade guide 2025-09-03": databases hold data
sources; pages live in data sources; search returns pages and data sources).

Endpoints (all under /v1, JSON, cursor-paginated lists
``{"object": "list", "results": [...], "next_cursor": str|null, "has_more": bool, "type": ...}``):

    GET  /v1/users?page_size&start_cursor
    GET  /v1/databases/{database_id}               -> database with "data_sources": [{id, name}]
    POST /v1/data_sources/{data_source_id}/query   {page_size, start_cursor, filter, sorts}
    GET  /v1/pages/{page_id}
    GET  /v1/blocks/{block_id}/children?page_size&start_cursor
    POST /v1/search                                {query, filter, sort, page_size, start_cursor}

Every request must carry ``Authorization: Bearer <token>`` (else 401 ``unauthorized``) and
``Notion-Version: 2025-09-03`` (else 400 ``missing_version``); POSTs must be JSON. ``page_size``
must be 1..100, body fields must be documented ones and ids must exist (400
``validation_error`` / 404 ``object_not_found``, in Notion's error shape
``{"object": "error", "status", "code", "message"}``). Filters understood: the timestamp filter
on last_edited_time (after/on_or_after/before), ``select.equals`` on a property, and ``and``/
``or`` compounds; search filters on ``{"property": "object", "value": "page"|"data_source"}``.

Rate limits are injected by the tests: ``RATE_LIMITED`` is Notion's 429 answer with Retry-After.

The workspace (ids are UUIDs whose first hex digit says what they are):

* 5 users;
* database "Tasks" (data sources "Tasks" with 5 pages and "Archive" with 2), database "Notes"
  (one data source, 3 pages), and database "Inline" (one data source, 2 pages) that sits as a
  child_database block inside standalone page S1;
* standalone pages S1 and S2;
* every page has blocks: headings, rich text with annotations and links, a nested list (3 levels),
  a to-do, code; S1 adds the inline database and a synced_block whose children are not shared
  (404); S2 adds a divider, quote, callout, equation, image, bookmark and a table with rows.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta, timezone

from fake_server import Fault, FakeServer, OffContract, Response

VERSION = "2025-09-03"
TOKEN = "secret_fake_notion_integration_token"
RATE_LIMITED = Fault(
    status=429,
    headers={"Retry-After": "1", "Content-Type": "application/json"},
    body={"object": "error", "status": 429, "code": "rate_limited",
          "message": "You have been rate limited. Please try again in a few minutes."},
)
BASE_TIME = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)


def uid(kind: str, n: int) -> str:
    return f"{kind}0000000-0000-4000-8000-{n:012d}"


def stamp(minutes: int) -> str:
    return (BASE_TIME + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def text(content: str, bold=False, italic=False, code=False, strike=False, link=None) -> dict:
    return {
        "type": "text",
        "text": {"content": content, "link": {"url": link} if link else None},
        "annotations": {"bold": bold, "italic": italic, "strikethrough": strike,
                        "underline": False, "code": code, "color": "default"},
        "plain_text": content,
        "href": link,
    }


def user_ref(n: int = 1) -> dict:
    return {"object": "user", "id": uid("e", n)}


def user(n: int) -> dict:
    if n == 5:
        return {"object": "user", "id": uid("e", n), "name": "Bizon Bot", "avatar_url": None,
                "type": "bot", "bot": {}}
    return {"object": "user", "id": uid("e", n), "name": f"Person {n}", "avatar_url": None,
            "type": "person", "person": {"email": f"person{n}@example.com"}}


class Workspace:
    """The objects a fake serves; tests edit them (touch() bumps last_edited_time)."""

    def __init__(self):
        self.users = [user(n) for n in range(1, 6)]
        self.databases: dict[str, dict] = {}
        self.data_sources: dict[str, dict] = {}
        self.pages: dict[str, dict] = {}
        self.children: dict[str, list[dict]] = {}  # block or page id -> child blocks
        self.unshared: set[str] = set()  # block ids whose children answer 404
        self.clock = 0
        self._block_counter = 0
        self._last_touch = None

        tasks = self.add_database(1, "Tasks", [(1, "Tasks", 5), (2, "Archive", 2)])
        notes = self.add_database(2, "Notes", [(3, "Notes", 3)])
        self.tasks, self.notes = tasks, notes
        self.standalone = [self.add_page(uid("b", 100 + n), None, f"S{n}") for n in (1, 2)]
        inline = self.add_database(3, "Inline", [(4, "Inline", 2)], inline_in=self.standalone[0])
        self.inline = inline
        for page_id in list(self.pages):
            self.add_blocks(page_id)

    # -- construction ------------------------------------------------------------------------

    def tick(self) -> str:
        self.clock += 1
        return stamp(self.clock)

    def add_database(self, n, title, sources, inline_in=None):
        db_id = uid("d", n)
        created = self.tick()
        database = {
            "object": "database", "id": db_id,
            "title": [text(title)], "description": [],
            "parent": {"type": "page_id", "page_id": inline_in} if inline_in
            else {"type": "workspace", "workspace": True},
            "is_inline": bool(inline_in), "in_trash": False, "is_locked": False,
            "created_time": created, "last_edited_time": created,
            "data_sources": [], "icon": None, "cover": None,
            "url": f"https://www.notion.so/{db_id.replace('-', '')}", "public_url": None,
        }
        self.databases[db_id] = database
        page_number = len(self.pages)
        for ds_n, ds_title, page_count in sources:
            ds_id = uid("a", ds_n)
            database["data_sources"].append({"id": ds_id, "name": ds_title})
            self.data_sources[ds_id] = {
                "object": "data_source", "id": ds_id,
                "parent": {"type": "database_id", "database_id": db_id},
                "database_parent": database["parent"],
                "title": [text(ds_title)], "description": [],
                "properties": {"Name": {"id": "title", "name": "Name", "type": "title", "title": {}},
                               "Status": {"id": "st", "name": "Status", "type": "select",
                                          "select": {"options": [{"name": "Done"}, {"name": "Todo"}]}}},
                "created_time": created, "last_edited_time": self.tick(),
                "created_by": user_ref(), "last_edited_by": user_ref(),
                "archived": False, "in_trash": False, "is_inline": bool(inline_in),
                "url": f"https://www.notion.so/{ds_id.replace('-', '')}", "public_url": None,
            }
            for _ in range(page_count):
                page_number += 1
                self.add_page(uid("b", page_number), (ds_id, db_id), f"{ds_title} {page_number}",
                              status="Done" if page_number % 2 else "Todo")
        return db_id

    def add_page(self, page_id, parent, title, status="Todo"):
        edited = self.tick()
        page = {
            "object": "page", "id": page_id,
            "created_time": edited, "last_edited_time": edited,
            "created_by": user_ref(), "last_edited_by": user_ref(2),
            "cover": None, "icon": None,
            "parent": {"type": "data_source_id", "data_source_id": parent[0],
                       "database_id": parent[1]} if parent
            else {"type": "workspace", "workspace": True},
            "archived": False, "in_trash": False,
            "properties": {"Name": {"id": "title", "type": "title", "title": [text(title)]}},
            "url": f"https://www.notion.so/{page_id.replace('-', '')}", "public_url": None,
        }
        if parent:
            page["properties"]["Status"] = {"id": "st", "type": "select",
                                            "select": {"name": status}}
        self.pages[page_id] = page
        return page_id

    def block(self, parent_id, parent_type, kind, content, has_children=False, block_id=None):
        self._block_counter += 1
        block_id = block_id or uid("c", self._block_counter)
        created = stamp(0)
        block = {
            "object": "block", "id": block_id,
            "parent": {"type": parent_type, parent_type: parent_id},
            "created_time": created, "last_edited_time": created,
            "created_by": user_ref(), "last_edited_by": user_ref(),
            "has_children": has_children, "archived": False, "in_trash": False,
            "type": kind, kind: content,
        }
        self.children.setdefault(parent_id, []).append(block)
        return block_id

    def add_blocks(self, page_id):
        title = self.pages[page_id]["properties"]["Name"]["title"][0]["plain_text"]
        on_page = lambda kind, content, **kw: self.block(page_id, "page_id", kind, content, **kw)  # noqa: E731
        on_block = lambda parent, kind, content, **kw: self.block(parent, "block_id", kind, content, **kw)  # noqa: E731
        rich = lambda *items: {"rich_text": list(items), "color": "default"}  # noqa: E731
        on_page("heading_1", {**rich(text(title)), "is_toggleable": False})
        on_page("paragraph", rich(text("Plain, "), text("bold", bold=True), text(" and "),
                                  text("a link", link="https://example.com")))
        item = on_page("bulleted_list_item", rich(text("parent item")), has_children=True)
        nested = on_block(item, "paragraph", rich(text("nested", italic=True)), has_children=True)
        on_block(nested, "to_do", {**rich(text("deep task")), "checked": True})
        on_page("to_do", {**rich(text("open task")), "checked": False})
        on_page("code", {"caption": [], "rich_text": [text("print('hi')")], "language": "python"})
        if page_id == self.standalone[0]:
            inline = uid("d", 3)
            on_page("child_database", {"title": "Inline"}, block_id=inline)
            synced = on_page("synced_block", {"synced_from": {"type": "block_id",
                                                               "block_id": uid("c", 999)}},
                             has_children=True)
            self.unshared.add(synced)
        if page_id == self.standalone[1]:
            on_page("divider", {})
            on_page("quote", rich(text("quoted")))
            on_page("callout", {**rich(text("note")), "icon": {"type": "emoji", "emoji": "⚠️"}})
            on_page("equation", {"expression": "e=mc^2"})
            on_page("image", {"caption": [text("a cat")], "type": "external",
                              "external": {"url": "https://example.com/cat.png"}})
            on_page("bookmark", {"caption": [], "url": "https://example.com/b"})
            table = on_page("table", {"table_width": 2, "has_column_header": True,
                                      "has_row_header": False}, has_children=True)
            on_block(table, "table_row", {"cells": [[text("k")], [text("v")]]})
            on_block(table, "table_row", {"cells": [[text("a")], [text("1", code=True)]]})

    def touch(self, object_id: str) -> str:
        """Marks a page (or data source) edited now, in Notion's millisecond precision; each
        touch is at least 1 ms after the previous one, so the order of edits is the order of
        calls."""
        now = datetime.now(timezone.utc)
        now = now.replace(microsecond=now.microsecond // 1000 * 1000)
        if self._last_touch is not None and now <= self._last_touch:
            now = self._last_touch + timedelta(milliseconds=1)
        self._last_touch = now
        edited = now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
        target = self.pages.get(object_id) or self.data_sources[object_id]
        target["last_edited_time"] = edited
        return edited

    # -- views -------------------------------------------------------------------------------

    def pages_of(self, ds_id: str) -> list[dict]:
        return [p for p in self.pages.values()
                if p["parent"].get("data_source_id") == ds_id]


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


class FakeNotion(FakeServer):
    def __init__(self, workspace: Workspace | None = None, token: str = TOKEN):
        super().__init__()
        self.workspace = workspace or Workspace()
        self.token = token
        self.route("GET", "/v1/users", self.list_users)
        self.route("GET", "/v1/databases", self.get_database)
        self.route("POST", "/v1/data_sources", self.query_data_source)
        self.route("GET", "/v1/pages", self.get_page)
        self.route("GET", "/v1/blocks", self.block_children)
        self.route("POST", "/v1/search", self.search)

    def error_response(self, error: OffContract) -> Response:
        codes = {400: "validation_error", 401: "unauthorized", 404: "object_not_found"}
        body = error.body or {"object": "error", "status": error.status,
                              "code": codes.get(error.status, "invalid_request"),
                              "message": str(error)}
        return Response(error.status, body)

    # -- contract checks ---------------------------------------------------------------------

    def check(self, request, body_fields: set[str] | None = None, params: set[str] = frozenset()):
        if request.headers.get("authorization") != f"Bearer {self.token}":
            raise OffContract("API token is invalid.", status=401)
        if request.headers.get("notion-version") != VERSION:
            raise OffContract(
                f"Notion-Version header failed validation: {request.headers.get('notion-version')!r}",
                body={"object": "error", "status": 400, "code": "missing_version",
                      "message": "Notion-Version header failed validation."})
        self.only_params(request, set(params))
        body = {}
        if request.method == "POST":
            if not request.headers.get("content-type", "").startswith("application/json"):
                raise OffContract("body must be JSON")
            body = request.json or {}
            unknown = set(body) - (body_fields or set())
            if unknown:
                raise OffContract(f"body failed validation: unknown fields {sorted(unknown)}")
        page_size = body.get("page_size", request.param("page_size"))
        if page_size is not None:
            try:
                size = int(page_size)
            except (TypeError, ValueError):
                raise OffContract(f"page_size should be a number, got {page_size!r}") from None
            if not 1 <= size <= 100:
                raise OffContract(f"page_size should be between 1 and 100, got {size}")
        return body

    @staticmethod
    def cursor_of(value) -> int:
        if value is None:
            return 0
        if not isinstance(value, str) or not value.startswith("f0000000-0000-4000-8000-"):
            raise OffContract(f"start_cursor should be a valid cursor, got {value!r}")
        return int(value.rsplit("-", 1)[1])

    def listing(self, items: list, start, page_size, kind: str) -> dict:
        offset = self.cursor_of(start)
        size = int(page_size or 100)
        page = items[offset : offset + size]
        more = offset + size < len(items)
        return {"object": "list", "results": copy.deepcopy(page),
                "next_cursor": uid("f", offset + size) if more else None,
                "has_more": more, "type": kind, kind: {}}

    def object_id(self, request, prefix: str, suffix: str = "") -> str:
        rest = request.path[len(prefix):].strip("/")
        if suffix:
            if not rest.endswith(suffix):
                raise OffContract(f"unknown endpoint {request.path}", status=404)
            rest = rest[: -len(suffix)].strip("/")
        if not rest or "/" in rest:
            raise OffContract(f"unknown endpoint {request.path}", status=404)
        return rest

    # -- endpoints ---------------------------------------------------------------------------

    def list_users(self, request):
        self.check(request, params={"page_size", "start_cursor"})
        if request.path.rstrip("/") != "/v1/users":
            raise OffContract("retrieving single users is not used", status=404)
        return self.listing(self.workspace.users, request.param("start_cursor"),
                            request.param("page_size"), "user")

    def get_database(self, request):
        self.check(request)
        db_id = self.object_id(request, "/v1/databases")
        if db_id not in self.workspace.databases:
            raise OffContract(f"Could not find database with ID: {db_id}.", status=404)
        return copy.deepcopy(self.workspace.databases[db_id])

    def get_page(self, request):
        self.check(request, params={"filter_properties"})
        page_id = self.object_id(request, "/v1/pages")
        if page_id not in self.workspace.pages:
            raise OffContract(f"Could not find page with ID: {page_id}.", status=404)
        return copy.deepcopy(self.workspace.pages[page_id])

    def query_data_source(self, request):
        body = self.check(request, body_fields={"page_size", "start_cursor", "filter", "sorts",
                                                "filter_properties", "archived", "in_trash"})
        ds_id = self.object_id(request, "/v1/data_sources", "query")
        if ds_id not in self.workspace.data_sources:
            raise OffContract(f"Could not find data_source with ID: {ds_id}.", status=404)
        pages = self.workspace.pages_of(ds_id)
        if body.get("filter") is not None:
            pages = [p for p in pages if self.matches(p, body["filter"])]
        return self.listing(pages, body.get("start_cursor"), body.get("page_size"),
                            "page_or_data_source")

    def block_children(self, request):
        self.check(request, params={"page_size", "start_cursor"})
        block_id = self.object_id(request, "/v1/blocks", "children")
        ws = self.workspace
        known = block_id in ws.children or block_id in ws.pages or block_id in ws.databases or any(
            b["id"] == block_id for blocks in ws.children.values() for b in blocks)
        if block_id in ws.unshared:
            # A documented answer, not a client mistake: the block is not shared.
            return Response(404, {"object": "error", "status": 404, "code": "object_not_found",
                                  "message": f"Could not find block with ID: {block_id}. Make sure "
                                  "the relevant pages and databases are shared with your "
                                  "integration."})
        if not known:
            raise OffContract(f"Could not find block with ID: {block_id}.", status=404)
        return self.listing(ws.children.get(block_id, []), request.param("start_cursor"),
                            request.param("page_size"), "block")

    def search(self, request):
        body = self.check(request, body_fields={"query", "filter", "sort", "page_size",
                                                "start_cursor"})
        ws = self.workspace
        items = list(ws.pages.values()) + list(ws.data_sources.values())
        flt = body.get("filter")
        if flt is not None:
            if flt.get("property") != "object" or flt.get("value") not in ("page", "data_source"):
                raise OffContract(f"search filter should be an object filter, got {flt!r}")
            items = [i for i in items if i["object"] == flt["value"]]
        sort = body.get("sort")
        if sort is not None:
            if sort.get("timestamp") != "last_edited_time" or sort.get("direction") not in (
                "ascending", "descending"
            ):
                raise OffContract(f"invalid sort {sort!r}")
            items.sort(key=lambda i: i["last_edited_time"],
                       reverse=sort["direction"] == "descending")
        return self.listing(items, body.get("start_cursor"), body.get("page_size"),
                            "page_or_data_source")

    # -- filters -----------------------------------------------------------------------------

    def matches(self, page: dict, flt: dict) -> bool:
        if "and" in flt:
            return all(self.matches(page, part) for part in flt["and"])
        if "or" in flt:
            return any(self.matches(page, part) for part in flt["or"])
        if flt.get("timestamp") == "last_edited_time":
            condition = flt.get("last_edited_time") or {}
            edited = parse_time(page["last_edited_time"])
            for op, value in condition.items():
                bound = parse_time(value)
                ok = {"after": edited > bound, "on_or_after": edited >= bound,
                      "before": edited < bound, "on_or_before": edited <= bound}.get(op)
                if ok is None:
                    raise OffContract(f"unsupported timestamp condition {op}")
                if not ok:
                    return False
            return True
        if "property" in flt and "select" in flt:
            value = (page["properties"].get(flt["property"]) or {}).get("select") or {}
            return value.get("name") == flt["select"].get("equals")
        raise OffContract(f"body.filter failed validation: {json.dumps(flt)}")
