"""Fixtures for the end-to-end tests that need Google's services: the BigQuery emulator
(bqemulator: REST v2 and the Storage Write API over gRPC) and the GCS emulator
(gcp-storage-emulator: the JSON API), which `scripts/test-servers.sh start bigquery gcs` runs on
loopback from build/emulators-venv. They share one directory, so an object uploaded over the GCS
API is loadable by a BigQuery load job from `gs://<bucket>/<name>`. Neither checks credentials.

Their settings come from BIGQUERY_EMULATOR_HOST, BIGQUERY_STORAGE_EMULATOR_HOST,
BIZON_BIGQUERY_PROJECT, STORAGE_EMULATOR_HOST and BIZON_GCS_BUCKET; when they are not set, the
`google_emulators` fixture starts both with the same script (and exports the settings for the
bizon processes the tests run). Test modules import it:
`from conftest_google import google_emulators`.

    def test_x(bizon, google_emulators):
        google_emulators.upload("bizon-buffer", "in/rows.ndjson", b'{"a":1}\\n')
        job = google_emulators.load("ds", "t", ["gs://bizon-buffer/in/rows.ndjson"], schema)
        assert google_emulators.query("SELECT a FROM `test-project.ds.t`") == [{"a": "1"}]

Only the standard library (urllib): the official Google clients are not installed.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass

import pytest

from support.servers import run_servers, skip_or_fail

ENV_NAMES = ("BIGQUERY_EMULATOR_HOST", "BIGQUERY_STORAGE_EMULATOR_HOST", "BIZON_BIGQUERY_PROJECT",
             "STORAGE_EMULATOR_HOST", "BIZON_GCS_BUCKET")

# Loopback only: a proxy in the environment must never see these requests.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class GoogleApiError(AssertionError):
    """A non-2xx answer: status and the parsed error body."""

    def __init__(self, method: str, url: str, status: int, body):
        super().__init__(f"{method} {url} returned {status}: {body}")
        self.status = status
        self.body = body


def _with_scheme(host: str) -> str:
    host = host.rstrip("/")
    return host if "://" in host else f"http://{host}"


@dataclass
class GoogleEmulators:
    bigquery_url: str  # http://127.0.0.1:<port>, REST v2 under /bigquery/v2
    bigquery_grpc: str  # 127.0.0.1:<port>, the Storage Write API (plaintext)
    project: str
    storage_url: str  # http://127.0.0.1:<port>, the GCS JSON API
    bucket: str  # made when the emulator starts

    # -- HTTP ------------------------------------------------------------------------------

    @staticmethod
    def request(method: str, url: str, body=None, headers=None, timeout: float = 60):
        """Sends `body` (dict: JSON, bytes: as is); returns (status, parsed JSON or bytes).
        Raises GoogleApiError for a non-2xx answer."""
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        all_headers = {"Content-Type": "application/json"} if isinstance(body, (dict, list)) else {}
        all_headers.update(headers or {})
        request = urllib.request.Request(url, data=data, method=method, headers=all_headers)
        try:
            with _OPENER.open(request, timeout=timeout) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = raw
            raise GoogleApiError(method, url, error.code, parsed) from None
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw

    # -- GCS -------------------------------------------------------------------------------

    def create_bucket(self, name: str) -> None:
        """Creates bucket `name` (an existing one is fine)."""
        try:
            self.request("POST", f"{self.storage_url}/storage/v1/b?project={self.project}",
                         {"name": name})
        except GoogleApiError as error:
            if error.status != 409:
                raise

    def upload(self, bucket: str, name: str, data: bytes,
               content_type: str = "application/octet-stream") -> dict:
        """A multipart upload (JSON metadata part, then the bytes); returns the object."""
        boundary = f"bizon-{uuid.uuid4().hex}"
        metadata = json.dumps({"name": name, "contentType": content_type}).encode()
        body = (f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".encode()
                + metadata + f"\r\n--{boundary}\r\nContent-Type: {content_type}\r\n\r\n".encode()
                + data + f"\r\n--{boundary}--\r\n".encode())
        _, resource = self.request(
            "POST", f"{self.storage_url}/upload/storage/v1/b/{bucket}/o?uploadType=multipart",
            body, {"Content-Type": f"multipart/related; boundary={boundary}"})
        return resource

    def download(self, bucket: str, name: str) -> bytes:
        quoted = urllib.parse.quote(name, safe="")
        _, data = self.request("GET", f"{self.storage_url}/storage/v1/b/{bucket}/o/{quoted}?alt=media")
        return data if isinstance(data, bytes) else json.dumps(data).encode()

    def list_objects(self, bucket: str, prefix: str = "") -> list[str]:
        names, token = [], None
        while True:
            query = {"prefix": prefix, **({"pageToken": token} if token else {})}
            _, page = self.request("GET", f"{self.storage_url}/storage/v1/b/{bucket}/o?"
                                   + urllib.parse.urlencode(query))
            names += [item["name"] for item in page.get("items", [])]
            token = page.get("nextPageToken")
            if not token:
                return names

    def delete(self, bucket: str, name: str) -> None:
        quoted = urllib.parse.quote(name, safe="")
        self.request("DELETE", f"{self.storage_url}/storage/v1/b/{bucket}/o/{quoted}")

    # -- BigQuery --------------------------------------------------------------------------

    def bq(self, method: str, path: str, body=None):
        """A REST v2 call under projects/<project>/; returns the parsed answer."""
        _, answer = self.request(
            method, f"{self.bigquery_url}/bigquery/v2/projects/{self.project}/{path}", body)
        return answer

    def create_dataset(self, dataset: str) -> None:
        try:
            self.bq("POST", "datasets",
                    {"datasetReference": {"projectId": self.project, "datasetId": dataset}})
        except GoogleApiError as error:
            if error.status != 409:
                raise

    def run_job(self, configuration: dict) -> dict:
        """jobs.insert, then jobs.get until DONE; fails the test on status.errorResult."""
        job_id = f"bizon_test_{uuid.uuid4().hex}"
        job = self.bq("POST", "jobs", {"jobReference": {"projectId": self.project, "jobId": job_id},
                                       "configuration": configuration})
        for _ in range(600):
            if job["status"]["state"] == "DONE":
                break
            job = self.bq("GET", f"jobs/{job_id}")
        assert job["status"]["state"] == "DONE", job
        assert "errorResult" not in job["status"], job["status"]
        return job

    def load(self, dataset: str, table: str, uris: list[str], schema: list[dict],
             source_format: str = "NEWLINE_DELIMITED_JSON",
             write_disposition: str = "WRITE_APPEND") -> dict:
        """A load job from gs:// URIs into dataset.table (created if needed)."""
        return self.run_job({"load": {
            "sourceUris": uris, "sourceFormat": source_format,
            "destinationTable": {"projectId": self.project, "datasetId": dataset, "tableId": table},
            "schema": {"fields": schema}, "writeDisposition": write_disposition,
            "createDisposition": "CREATE_IF_NEEDED"}})

    def query(self, sql: str) -> list[dict]:
        """Runs `sql` as a query job and returns its rows as {column: value} (values as the
        REST API sends them: strings; timestamps as int64 microseconds)."""
        job = self.run_job({"query": {"query": sql, "useLegacySql": False}})
        job_id = job["jobReference"]["jobId"]
        rows, token, fields = [], None, None
        while True:
            suffix = "?formatOptions.useInt64Timestamp=true" + (f"&pageToken={token}" if token else "")
            page = self.bq("GET", f"queries/{job_id}{suffix}")
            fields = fields or [field["name"] for field in page["schema"]["fields"]]
            rows += [{name: cell["v"] for name, cell in zip(fields, row["f"])}
                     for row in page.get("rows", [])]
            token = page.get("pageToken")
            if not token:
                return rows

    # -- outages ---------------------------------------------------------------------------

    def restart(self, server: str) -> None:
        """Stops `server` (bigquery or gcs) and starts it again on the same ports with the same
        data: clients lose their connections; tables and objects stay."""
        run_servers("restart", server)


def _from_env(env) -> GoogleEmulators | None:
    if not all(env.get(name) for name in ENV_NAMES):
        return None
    return GoogleEmulators(
        bigquery_url=_with_scheme(env["BIGQUERY_EMULATOR_HOST"]),
        bigquery_grpc=env["BIGQUERY_STORAGE_EMULATOR_HOST"],
        project=env["BIZON_BIGQUERY_PROJECT"],
        storage_url=_with_scheme(env["STORAGE_EMULATOR_HOST"]),
        bucket=env["BIZON_GCS_BUCKET"])


def _worker_instance() -> int:
    """The emulator pair of this pytest-xdist worker: gw0 (or no xdist) uses the pair the
    environment names, gwN (N >= 1) a pair of its own, N (scripts/servers/google.sh), so that no
    emulator serves two tests at once and the Google tests run on every worker."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    number = worker.removeprefix("gw")
    if not worker.startswith("gw") or not number.isdigit() or number == "0":
        return 0
    os.environ["BIZON_GOOGLE_INSTANCE"] = number  # For run_servers, restarts included.
    return int(number)


@pytest.fixture(scope="session")
def google_emulators() -> GoogleEmulators:
    """Both emulators: those the environment names, or started here (see _worker_instance)."""
    emulators = _from_env(os.environ) if _worker_instance() == 0 else None
    if emulators is not None:
        return emulators
    if not os.path.exists("/usr/bin/python3"):
        skip_or_fail("the Google emulators need python3 (scripts/emulators-env.sh)")
    env = run_servers("start", "gcs", timeout=900)  # The first call makes the venv (~2 min).
    env.update(run_servers("start", "bigquery", timeout=900))
    emulators = _from_env(env)
    if emulators is None:
        pytest.fail(f"scripts/test-servers.sh start gcs bigquery printed no settings: {env}")
    os.environ.update(env)  # For the bizon processes the tests start.
    return emulators


BIGQUERY_ENV_NAMES = ("BIGQUERY_EMULATOR_HOST", "BIGQUERY_STORAGE_EMULATOR_HOST",
                      "BIZON_BIGQUERY_PROJECT")


@pytest.fixture(scope="session")
def bigquery_emulator() -> GoogleEmulators:
    """The BigQuery emulator alone (REST and the Storage Write API), for what needs no bucket;
    started here when the environment names none. Its storage_url and bucket are empty."""
    env = dict(os.environ)
    if _worker_instance() != 0 or not all(env.get(name) for name in BIGQUERY_ENV_NAMES):
        if not os.path.exists("/usr/bin/python3"):
            skip_or_fail("the BigQuery emulator needs python3 (scripts/emulators-env.sh)")
        env.update(run_servers("start", "bigquery", timeout=900))
        if not all(env.get(name) for name in BIGQUERY_ENV_NAMES):
            pytest.fail(f"scripts/test-servers.sh start bigquery printed no settings: {env}")
        os.environ.update({name: env[name] for name in BIGQUERY_ENV_NAMES})
    return GoogleEmulators(bigquery_url=_with_scheme(env["BIGQUERY_EMULATOR_HOST"]),
                           bigquery_grpc=env["BIGQUERY_STORAGE_EMULATOR_HOST"],
                           project=env["BIZON_BIGQUERY_PROJECT"], storage_url="", bucket="")
