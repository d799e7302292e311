"""A fake of the BigQuery REST API v2, for what the emulator cannot show: a job that fails with
``status.errorResult``, a job that stays RUNNING for a while, throttling (403
``rateLimitExceeded``, 500/503 ``backendError``), the 409 BigQuery answers to a second job with
the same id (the emulator accepts and reruns it), and bearer tokens (the emulator has no auth).

Follows Google's documented REST reference (cloud.google.com/bigquery/docs/reference/rest/v2:
datasets, tables, jobs, jobs.query, jobs.getQueryResults, the ErrorProto shape, the error
reasons table of /bigquery/docs/error-messages):

* every path is under ``/bigquery/v2/projects/P``; errors are ``{"error": {"code", "message",
  "errors": [{"message", "domain", "reason"}], "status"}}``;
* ``POST .../jobs`` takes ``{"jobReference": {"projectId": P, "jobId", "location"?},
  "configuration": {exactly one of load, copy, query}}``; a job id is letters, digits, ``_`` and
  ``-`` (at most 1024); a job id already used in the project is ``409 duplicate "Already Exists:
  Job P:L.J"``;
* ``GET .../jobs/J`` (``location``); ``GET .../queries/J`` (``location``, ``pageToken``,
  ``maxResults``, ``timeoutMs``, ``startIndex``, ``formatOptions.useInt64Timestamp``);
  ``POST .../queries`` (a QueryRequest);
* a query with ``queryParameters`` must say ``useLegacySql: false`` and ``parameterMode:
  NAMED`` (this client sends only named parameters), every parameter ``{name, parameterType:
  {type}, parameterValue: {value?}}``, and every ``@name`` in the SQL must be given;
* ``POST /upload/bigquery/v2/projects/P/jobs?uploadType=multipart``: a load job with its data
  (multipart/related: the job resource, then the data, not labelled ``*/*``); the report lists
  each under ``uploads``;
* ``POST .../datasets``, ``GET .../datasets/D``, ``POST .../datasets/D/tables``, ``GET``,
  ``PATCH``, ``DELETE .../tables/T``; 404 ``notFound`` and 409 ``duplicate`` as BigQuery; a
  table's ``tableConstraints.primaryKey`` (1 to 16 of its columns), ``maxStaleness`` (INTERVAL
  text) and ``expirationTime`` (int64 milliseconds as a string) are checked.

Behaviour is set through control endpoints (the C++ tests run this file as a process, like
fake_gcs_resumable.py): ``POST /_fake/token {"token": "t"}`` requires ``Authorization: Bearer
t`` on every API request (401 otherwise); ``POST /_fake/plan {"job_id" (or "query", its SQL),
"polls": n, "error_result": {...}, "rows": [[...]], "schema": [...], "num_dml_affected_rows":
n}`` scripts a job (RUNNING for n ``jobs.get``, then DONE, failed when ``error_result`` is set);
``POST /_fake/throttle {"path_contains", "status", "reason", "times", "method"?}`` answers the
next matching requests with a throttling error; ``GET /_fake/report`` gives the violations and
requests; ``POST /_fake/stop`` ends it.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from pathlib import Path
from urllib.parse import unquote

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_server import FakeServer, OffContract, Response, serve_as_process  # noqa: E402

PREFIX = "/bigquery/v2/projects/"
JOB_ID = re.compile(r"[A-Za-z0-9_-]{1,1024}")
STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                404: "NOT_FOUND", 409: "ALREADY_EXISTS", 500: "INTERNAL", 503: "UNAVAILABLE"}
THROTTLE_MESSAGES = {
    "rateLimitExceeded": "Exceeded rate limits: too many api requests per user per method for "
                         "this user_method.",
    "backendError": "An internal error occurred and the request could not be completed.",
}
PARAMETER_TYPES = {"STRING", "INT64", "BOOL", "FLOAT64", "NUMERIC", "BIGNUMERIC", "TIMESTAMP",
                   "DATE", "DATETIME", "TIME", "JSON", "BYTES"}


def api_error(status: int, reason: str, message: str) -> Response:
    domain = "usageLimits" if reason == "rateLimitExceeded" else "global"
    return Response(status, {"error": {
        "code": status, "message": message,
        "errors": [{"message": message, "domain": domain, "reason": reason}],
        "status": STATUS_NAMES.get(status, "UNKNOWN")}})


class FakeBigQuery(FakeServer):
    gzip = False

    def __init__(self):
        super().__init__()
        self.token: str | None = None
        self.jobs: dict[tuple[str, str], dict] = {}
        self.plans: dict[str, dict] = {}
        self.throttles: list[dict] = []
        self.datasets: dict[tuple[str, str], dict] = {}
        self.tables: dict[tuple[str, str, str], dict] = {}
        self.uploads: list[dict] = []
        self.stopped = threading.Event()
        for method in ("GET", "POST", "PATCH", "DELETE"):
            self.route(method, "/bigquery/v2/projects", self.api)
        self.route("POST", "/upload/bigquery/v2/projects", self.upload_job)
        self.route("POST", "/_fake/token", self.set_token)
        self.route("POST", "/_fake/plan", self.set_plan)
        self.route("POST", "/_fake/throttle", self.set_throttle)
        self.route("GET", "/_fake/report", self.report)
        self.route("POST", "/_fake/stop", self.stop_request)

    def error_response(self, error: OffContract) -> Response:
        return api_error(error.status, "invalid", str(error))

    # -- dispatch ----------------------------------------------------------------------------

    def api(self, request):
        if self.token is not None:
            if request.headers.get("authorization") != f"Bearer {self.token}":
                return api_error(401, "unauthorized",
                                 "Request is missing required authentication credential.")
        throttled = self.take_throttle(request)
        if throttled is not None:
            return throttled
        rest = request.path[len(PREFIX):].split("/")
        project = unquote(rest[0])
        rest = [unquote(part) for part in rest[1:]]
        if rest and request.method in ("POST", "PATCH"):
            if not request.headers.get("content-type", "").startswith("application/json"):
                raise OffContract(f"{request.method} body without Content-Type application/json")
        if rest == ["jobs"] and request.method == "POST":
            return self.insert_job(project, request)
        if len(rest) == 2 and rest[0] == "jobs" and request.method == "GET":
            return self.get_job(project, rest[1], request)
        if rest == ["queries"] and request.method == "POST":
            return self.query(project, request)
        if len(rest) == 2 and rest[0] == "queries" and request.method == "GET":
            return self.get_query_results(project, rest[1], request)
        if rest == ["datasets"] and request.method == "POST":
            return self.insert_dataset(project, request)
        if len(rest) == 2 and rest[0] == "datasets" and request.method == "GET":
            return self.get_dataset(project, rest[1], request)
        if len(rest) == 3 and rest[0] == "datasets" and rest[2] == "tables" \
                and request.method == "POST":
            return self.insert_table(project, rest[1], request)
        if len(rest) == 4 and rest[0] == "datasets" and rest[2] == "tables":
            return self.table(project, rest[1], rest[3], request)
        raise OffContract(f"no such endpoint: {request.method} {request.path}", status=404)

    def take_throttle(self, request):
        with self._lock:
            for throttle in self.throttles:
                if throttle["times"] <= 0 or throttle["path_contains"] not in request.path:
                    continue
                if throttle.get("method") and throttle["method"] != request.method:
                    continue
                throttle["times"] -= 1
                return api_error(throttle["status"], throttle["reason"],
                                 THROTTLE_MESSAGES.get(throttle["reason"], throttle["reason"]))
        return None

    # -- jobs --------------------------------------------------------------------------------

    def check_query(self, config: dict, where: str):
        allowed = {"query", "useLegacySql", "parameterMode", "queryParameters", "defaultDataset",
                   "destinationTable", "writeDisposition", "createDisposition", "timeoutMs",
                   "maxResults", "location", "formatOptions", "labels", "dryRun"}
        unknown = set(config) - allowed
        if unknown:
            raise OffContract(f"{where}: unknown fields {sorted(unknown)}")
        sql = config.get("query")
        if not isinstance(sql, str) or not sql:
            raise OffContract(f"{where}: query is required")
        parameters = config.get("queryParameters", [])
        if parameters or "@" in sql:
            if config.get("useLegacySql") is not False:
                raise OffContract(f"{where}: query parameters need useLegacySql false")
            if config.get("parameterMode") != "NAMED":
                raise OffContract(f"{where}: parameterMode must be NAMED with named parameters")
        names = set()
        for parameter in parameters:
            if set(parameter) != {"name", "parameterType", "parameterValue"}:
                raise OffContract(f"{where}: parameter fields {sorted(parameter)}")
            if parameter["parameterType"].get("type") not in PARAMETER_TYPES:
                raise OffContract(f"{where}: parameter type {parameter['parameterType']}")
            value = parameter["parameterValue"]
            if set(value) - {"value"} or ("value" in value and not isinstance(value["value"], str)):
                raise OffContract(f"{where}: parameterValue must be {{value: string}} or {{}}")
            names.add(parameter["name"])
        used = set(re.findall(r"@([A-Za-z_][A-Za-z0-9_]*)", sql))
        if used - names:
            raise OffContract(f"{where}: the SQL uses undeclared parameters {sorted(used - names)}")

    def upload_job(self, request):
        """jobs.insert through the media upload endpoint (uploadType=multipart): a
        multipart/related body of the job resource (JSON) and the load's data, which must not be
        labelled ``*/*`` (BigQuery and the emulator refuse that)."""
        rest = request.path[len("/upload" + PREFIX):].split("/")
        if len(rest) != 2 or rest[1] != "jobs":
            raise OffContract(f"no such endpoint: {request.method} {request.path}", status=404)
        if request.param("uploadType") != "multipart":
            raise OffContract("the upload endpoint takes uploadType=multipart here")
        match = re.match(r"multipart/related; boundary=(\S+)",
                         request.headers.get("content-type", ""))
        if not match:
            raise OffContract("an upload needs Content-Type multipart/related with a boundary")
        boundary = match.group(1).encode()
        parts = request.body.split(b"--" + boundary)
        if len(parts) != 4 or not parts[3].startswith(b"--"):
            raise OffContract("a multipart upload has exactly two parts")
        heads = []
        for part in parts[1:3]:
            head, _, payload = part.lstrip(b"\r\n").partition(b"\r\n\r\n")
            heads.append((head.decode().lower(), payload[:-2] if payload.endswith(b"\r\n")
                          else payload))
        if "application/json" not in heads[0][0]:
            raise OffContract("the first part of an upload is the job resource (application/json)")
        if "*/*" in heads[1][0]:
            raise OffContract("multipart upload's second part has unsupported Content-Type '*/*'")
        body = json.loads(heads[0][1])
        load = (body.get("configuration") or {}).get("load") or {}
        if load.get("sourceUris"):
            raise OffContract("an uploaded load names no sourceUris")
        with self._lock:
            self.uploads.append({"job_id": (body.get("jobReference") or {}).get("jobId"),
                                 "destination": load.get("destinationTable"),
                                 "data": heads[1][1].decode(errors="replace")})
        return self.insert_job(unquote(rest[0]), request, body)

    def insert_job(self, project, request, uploaded=None):
        self.only_params(request, {"uploadType"} if uploaded is not None else set())
        body = uploaded if uploaded is not None else (request.json or {})
        ref = body.get("jobReference") or {}
        job_id = ref.get("jobId")
        if ref.get("projectId") != project:
            raise OffContract("jobReference.projectId differs from the path's project")
        if not isinstance(job_id, str) or not JOB_ID.fullmatch(job_id):
            raise OffContract(f"invalid job id {job_id!r}")
        config = body.get("configuration") or {}
        kinds = [k for k in ("load", "copy", "query", "extract") if k in config]
        if len(kinds) != 1:
            raise OffContract(f"configuration must hold exactly one job kind, has {kinds}")
        if kinds == ["query"]:
            self.check_query(config["query"], "configuration.query")
        if kinds == ["load"]:
            load = config["load"]
            if not load.get("destinationTable") or (uploaded is None
                                                    and not load.get("sourceUris")):
                raise OffContract("a load needs sourceUris and destinationTable")
        location = ref.get("location") or "US"
        with self._lock:
            if (project, job_id) in self.jobs:
                return api_error(409, "duplicate",
                                 f"Already Exists: Job {project}:{location}.{job_id}")
            plan = (self.plans.get(job_id)
                    or self.plans.get((config.get("query") or {}).get("query"), {}))
            job = {"project": project, "job_id": job_id, "location": location,
                   "configuration": config, "polls_left": plan.get("polls", 0), "plan": plan}
            self.jobs[(project, job_id)] = job
        return self.job_resource(job)

    def job_resource(self, job) -> dict:
        done = job["polls_left"] <= 0
        status = {"state": "DONE" if done else "RUNNING"}
        plan = job["plan"]
        if done and plan.get("error_result"):
            status["errorResult"] = plan["error_result"]
            status["errors"] = [plan["error_result"]] + plan.get("errors", [])
        resource = {"kind": "bigquery#job",
                    "id": f"{job['project']}:{job['location']}.{job['job_id']}",
                    "jobReference": {"projectId": job["project"], "jobId": job["job_id"],
                                     "location": job["location"]},
                    "configuration": job["configuration"], "status": status,
                    "statistics": {"creationTime": "1704067200000"}}
        if "query" in job["configuration"] and done:
            query = {"statementType": plan.get("statement_type", "SELECT")}
            if "num_dml_affected_rows" in plan:
                query["numDmlAffectedRows"] = str(plan["num_dml_affected_rows"])
            resource["statistics"]["query"] = query
        if "load" in job["configuration"] and done and not plan.get("error_result"):
            resource["statistics"]["load"] = {"outputRows": str(plan.get("output_rows", 0))}
        return resource

    def find_job(self, project, job_id, request):
        location = request.param("location")
        with self._lock:
            job = self.jobs.get((project, job_id))
        if job is None or (location is not None and location != job["location"]):
            return None, api_error(404, "notFound",
                                   f"Not found: Job {project}:{location or 'US'}.{job_id}")
        return job, None

    def get_job(self, project, job_id, request):
        self.only_params(request, {"location"})
        job, missing = self.find_job(project, job_id, request)
        if missing:
            return missing
        with self._lock:
            if job["polls_left"] > 0:
                job["polls_left"] -= 1
                resource = self.job_resource({**job, "polls_left": job["polls_left"] + 1})
            else:
                resource = self.job_resource(job)
        return resource

    def results_page(self, job, request, size=None) -> dict:
        plan = job["plan"]
        rows = plan.get("rows", [])
        schema = plan.get("schema", [])
        if size is None:
            size = self.int_param(request, "maxResults", len(rows) or 1, low=1)
        start = int(request.param("pageToken") or 0)
        page = rows[start:start + size]
        body = {"kind": "bigquery#getQueryResultsResponse",
                "jobReference": {"projectId": job["project"], "jobId": job["job_id"],
                                 "location": job["location"]},
                "jobComplete": True, "totalRows": str(len(rows)),
                "schema": {"fields": schema},
                "rows": [{"f": [{"v": v} for v in row]} for row in page]}
        if start + size < len(rows):
            body["pageToken"] = str(start + size)
        if "num_dml_affected_rows" in plan:
            body["numDmlAffectedRows"] = str(plan["num_dml_affected_rows"])
        return body

    def get_query_results(self, project, job_id, request):
        self.only_params(request, {"location", "pageToken", "maxResults", "timeoutMs",
                                   "startIndex", "formatOptions.useInt64Timestamp"})
        if request.param("formatOptions.useInt64Timestamp") not in (None, "true", "false"):
            raise OffContract("formatOptions.useInt64Timestamp must be a boolean")
        job, missing = self.find_job(project, job_id, request)
        if missing:
            return missing
        if "query" not in job["configuration"]:
            return api_error(400, "invalid", f"Job {job_id} is not a query job")
        if job["polls_left"] > 0:
            return {"kind": "bigquery#getQueryResultsResponse", "jobComplete": False,
                    "jobReference": {"projectId": project, "jobId": job_id,
                                     "location": job["location"]}}
        if job["plan"].get("error_result"):
            error = job["plan"]["error_result"]
            return api_error(400, error.get("reason", "invalid"), error.get("message", ""))
        return self.results_page(job, request)

    def query(self, project, request):
        self.only_params(request, set())
        body = request.json or {}
        self.check_query(body, "QueryRequest")
        with self._lock:
            job_id = f"job_fake_{len(self.jobs)}"
            plan = self.plans.get(body["query"], {})
            job = {"project": project, "job_id": job_id, "location": body.get("location", "US"),
                   "configuration": {"query": body}, "polls_left": plan.get("polls", 0),
                   "plan": plan}
            self.jobs[(project, job_id)] = job
        if job["polls_left"] > 0:
            # Not done within timeoutMs: the client waits through jobs.get / getQueryResults.
            return {"kind": "bigquery#queryResponse", "jobComplete": False,
                    "jobReference": {"projectId": project, "jobId": job_id,
                                     "location": job["location"]}}
        if plan.get("error_result"):
            error = plan["error_result"]
            return api_error(400, error.get("reason", "invalid"), error.get("message", ""))
        size = body.get("maxResults") or len(plan.get("rows", [])) or 1
        if not isinstance(size, int) or size < 1:
            raise OffContract(f"QueryRequest.maxResults must be a positive integer: {size!r}")
        page = self.results_page(job, request, size)
        page["kind"] = "bigquery#queryResponse"
        return page

    # -- datasets and tables -----------------------------------------------------------------

    def insert_dataset(self, project, request):
        self.only_params(request, set())
        body = request.json or {}
        ref = body.get("datasetReference") or {}
        if ref.get("projectId") != project or not ref.get("datasetId"):
            raise OffContract("datasetReference needs projectId (the path's) and datasetId")
        key = (project, ref["datasetId"])
        with self._lock:
            if key in self.datasets:
                return api_error(409, "duplicate",
                                 f"Already Exists: Dataset {project}:{ref['datasetId']}")
            self.datasets[key] = {**body, "location": body.get("location", "US")}
            return self.datasets[key]

    def get_dataset(self, project, dataset, request):
        self.only_params(request, set())
        with self._lock:
            found = self.datasets.get((project, dataset))
        return found or api_error(404, "notFound", f"Not found: Dataset {project}:{dataset}")

    def insert_table(self, project, dataset, request):
        self.only_params(request, set())
        body = request.json or {}
        ref = body.get("tableReference") or {}
        if ref.get("projectId") != project or ref.get("datasetId") != dataset:
            raise OffContract("tableReference differs from the path")
        partitioning = body.get("timePartitioning")
        if partitioning and partitioning.get("type") not in ("DAY", "HOUR", "MONTH", "YEAR"):
            raise OffContract(f"timePartitioning.type {partitioning.get('type')!r}")
        self.check_table_options(body)
        key = (project, dataset, ref.get("tableId"))
        with self._lock:
            if (project, dataset) not in self.datasets:
                return api_error(404, "notFound", f"Not found: Dataset {project}:{dataset}")
            if key in self.tables:
                return api_error(409, "duplicate",
                                 f"Already Exists: Table {project}:{dataset}.{key[2]}")
            self.tables[key] = {**body, "type": "TABLE", "numRows": "0"}
            return self.tables[key]

    @staticmethod
    def check_table_options(body: dict):
        """tableConstraints.primaryKey (at most 16 of the table's columns), maxStaleness (an
        INTERVAL's canonical text, Y-M D H:M:S) and expirationTime (int64 milliseconds as a
        string), as the tables resource declares them."""
        constraints = body.get("tableConstraints")
        if constraints is not None:
            if set(constraints) - {"primaryKey", "foreignKeys"}:
                raise OffContract(f"tableConstraints fields {sorted(constraints)}")
            columns = (constraints.get("primaryKey") or {}).get("columns")
            names = {field.get("name") for field in (body.get("schema") or {}).get("fields", [])}
            if (not isinstance(columns, list) or not columns or len(columns) > 16
                    or any(column not in names for column in columns)):
                raise OffContract(f"tableConstraints.primaryKey.columns {columns!r} must be 1 "
                                  f"to 16 columns of the table")
        staleness = body.get("maxStaleness")
        if staleness is not None and not (isinstance(staleness, str) and re.fullmatch(
                r"-?\d+-\d+ -?\d+ -?\d+:\d+:\d+(\.\d+)?", staleness)):
            raise OffContract(f"maxStaleness {staleness!r} is not an INTERVAL (Y-M D H:M:S)")
        expiration = body.get("expirationTime")
        if expiration is not None and not (isinstance(expiration, str) and expiration.isdigit()):
            raise OffContract(f"expirationTime {expiration!r} is not int64 milliseconds text")

    def table(self, project, dataset, table, request):
        self.only_params(request, set())
        key = (project, dataset, table)
        with self._lock:
            found = self.tables.get(key)
            if found is None:
                return api_error(404, "notFound", f"Not found: Table {project}:{dataset}.{table}")
            if request.method == "GET":
                return found
            if request.method == "DELETE":
                del self.tables[key]
                return Response(204, b"")
            patch = request.json or {}
            if "tableReference" in patch and patch["tableReference"] != found["tableReference"]:
                raise OffContract("a patch cannot move the table")
            found.update(patch)
            return found

    # -- control -----------------------------------------------------------------------------

    def set_token(self, request):
        self.token = (request.json or {}).get("token")
        return {}

    def set_plan(self, request):
        plan = request.json or {}
        with self._lock:
            self.plans[plan.get("job_id") or plan["query"]] = plan
        return {}

    def set_throttle(self, request):
        throttle = dict(request.json or {})
        throttle.setdefault("times", 1)
        with self._lock:
            self.throttles.append(throttle)
        return {}

    def report(self, request):
        with self._lock:
            return {"violations": list(self.violations), "uploads": list(self.uploads),
                    "requests": [{"method": r.method, "path": r.path,
                                  "query": {k: v[-1] for k, v in r.query.items()},
                                  "authorization": r.headers.get("authorization"),
                                  "body": r.body.decode(errors="replace")}
                                 for r in self.requests if not r.path.startswith("/_fake/")]}

    def stop_request(self, request):
        self.stopped.set()
        return {}


def main():
    fake = FakeBigQuery()
    serve_as_process(fake, fake.stopped)


if __name__ == "__main__":
    main()
