"""A fake Google Sheets API, following the documented Sheets API v4 REST reference
(developers.google.com/sheets/api/reference/rest):

    GET /v4/spreadsheets/{spreadsheetId}?includeGridData=false        (spreadsheets.get)
    -> {"spreadsheetId", "properties": {"title", "locale", "timeZone", ...},
        "sheets": [{"properties": {"sheetId", "title", "index", "sheetType": "GRID",
                                   "gridProperties": {"rowCount", "columnCount"}}}],
        "spreadsheetUrl"}
    GET /v4/spreadsheets/{spreadsheetId}/values/{range}               (spreadsheets.values.get)
    -> {"range": "'Title'!A1:Z1000", "majorDimension": "ROWS", "values": [[...], ...]}

As on the real service, values come as formatted strings (valueRenderOption FORMATTED_VALUE, the
default), trailing empty cells of a row and trailing empty rows are left out, and an empty sheet
has no "values" at all. `range` is an A1 range; the whole-tab form `'Title'` (quotes doubled
inside) is what the source sends. Errors have Google's shape
{"error": {"code", "message", "status"}}: 404 NOT_FOUND for an unknown spreadsheet, 400
INVALID_ARGUMENT "Unable to parse range: ..." for an unknown tab.

Every request must carry a bearer token the fake token endpoint (fake_google_oauth.py) issued,
unexpired and granting the spreadsheets.readonly scope, else 401 UNAUTHENTICATED as Google answers.
Off-contract, answered 400: another query parameter, a method other than GET, a request body.
"""

from __future__ import annotations

from urllib.parse import unquote

from fake_server import FakeServer, OffContract, Response

SHEETS_SCOPE = "https://www.googleapis.com/auth/spreadsheets.readonly"


def google_error(code: int, message: str, status: str) -> Response:
    return Response(code, {"error": {"code": code, "message": message, "status": status}})


class FakeGsheets(FakeServer):
    def __init__(self, oauth):
        super().__init__()
        self.oauth = oauth
        #: spreadsheet id -> {"title": str, "sheets": {tab title: rows (lists of strings)}}
        self.spreadsheets: dict[str, dict] = {}
        self.route("GET", "/v4/spreadsheets", self.get)

    def add(self, spreadsheet_id: str, sheets: dict, title: str = "Acme CRM export"):
        self.spreadsheets[spreadsheet_id] = {"title": title, "sheets": sheets}

    def get(self, request):
        if request.body:
            raise OffContract("GET takes no body")
        refused = self.oauth.check_bearer(request, SHEETS_SCOPE)
        if refused:
            return google_error(
                401, "Request had invalid authentication credentials. Expected OAuth 2 access "
                "token, login cookie or other valid authentication credential. "
                f"({refused})", "UNAUTHENTICATED")
        rest = request.path[len("/v4/spreadsheets/"):]
        spreadsheet_id, _, tail = rest.partition("/")
        book = self.spreadsheets.get(spreadsheet_id)
        if book is None:
            return google_error(404, "Requested entity was not found.", "NOT_FOUND")
        if not tail:
            self.only_params(request, {"includeGridData"})
            if request.param("includeGridData") not in ("false", None):
                raise OffContract("the source reads no grid data")
            return self.metadata(spreadsheet_id, book)
        if not tail.startswith("values/"):
            raise OffContract(f"unknown path {request.path}", status=404)
        self.only_params(request, {"valueRenderOption", "dateTimeRenderOption", "majorDimension"})
        return self.values(book, unquote(tail[len("values/"):]))

    def metadata(self, spreadsheet_id: str, book: dict) -> dict:
        sheets = []
        for index, (title, rows) in enumerate(book["sheets"].items()):
            sheets.append({"properties": {
                "sheetId": 1000 + index, "title": title, "index": index, "sheetType": "GRID",
                "gridProperties": {"rowCount": max(1000, len(rows)),
                                   "columnCount": max([26] + [len(r) for r in rows])}}})
        return {
            "spreadsheetId": spreadsheet_id,
            "properties": {"title": book["title"], "locale": "en_US", "autoRecalc": "ON_CHANGE",
                           "timeZone": "Europe/Paris"},
            "sheets": sheets,
            "spreadsheetUrl": f"https://docs.google.com/spreadsheets/d/{spreadsheet_id}/edit",
        }

    def values(self, book: dict, a1: str):
        if not (a1.startswith("'") and a1.endswith("'") and len(a1) >= 2):
            raise OffContract(f"the source asks for a whole tab as 'Title', got {a1!r}")
        title = a1[1:-1]
        if "'" in title.replace("''", ""):
            raise OffContract(f"a quote inside a tab title must be doubled: {a1!r}")
        title = title.replace("''", "'")
        rows = book["sheets"].get(title)
        if rows is None:
            return google_error(400, f"Unable to parse range: {a1}", "INVALID_ARGUMENT")
        # Trailing empty cells and rows are not sent.
        trimmed = []
        for row in rows:
            row = list(row)
            while row and row[-1] == "":
                row.pop()
            trimmed.append(row)
        while trimmed and not trimmed[-1]:
            trimmed.pop()
        width = max([len(r) for r in trimmed] + [1])
        last_column = ""
        n = width
        while n:
            n, r = divmod(n - 1, 26)
            last_column = chr(65 + r) + last_column
        quoted = "'" + title.replace("'", "''") + "'"
        answer = {"range": f"{quoted}!A1:{last_column}{max(len(rows), 1000)}",
                  "majorDimension": "ROWS"}
        if trimmed:
            answer["values"] = trimmed
        return answer

    def error_response(self, error: OffContract) -> Response:
        return google_error(error.status, str(error), "INVALID_ARGUMENT")
