"""The BigQuery and GCS emulators of the bigquery and bigquery-streaming cases, through their REST
APIs (standard library only): datasets, the checks of a loaded table, and the emulators' own CPU
time and jobs during a run."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

from harness.runs import CLK_TCK, RunFailed
from harness.verify import table_counts_error


def process_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime (fields 14, 15)


def listening_pid(url: str) -> Optional[int]:
    """The process listening on the loopback port of `url` (ss), or None."""
    port = url.rstrip("/").rsplit(":", 1)[-1]
    done = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True)
    match = re.search(r"pid=(\d+)", done.stdout)
    return int(match.group(1)) if match else None


@dataclass
class BigQueryEmulators:
    """The emulators of the bigquery case, through their REST APIs (standard library only)."""

    bigquery_url: str
    storage_url: str
    project: str
    bucket: str

    @staticmethod
    def from_env() -> "BigQueryEmulators":
        def url(host: str) -> str:
            return host.rstrip("/") if "://" in host else f"http://{host.rstrip('/')}"
        # The bigquery-streaming case needs no GCS: its storage_url and bucket stay empty.
        storage = os.environ.get("STORAGE_EMULATOR_HOST", "")
        return BigQueryEmulators(url(os.environ["BIGQUERY_EMULATOR_HOST"]),
                                 url(storage) if storage else "",
                                 os.environ["BIZON_BIGQUERY_PROJECT"],
                                 os.environ.get("BIZON_GCS_BUCKET", ""))

    def call(self, method: str, path: str, body: Optional[dict] = None) -> dict:
        import urllib.error
        import urllib.request
        request = urllib.request.Request(
            f"{self.bigquery_url}/bigquery/v2/projects/{self.project}/{path}", method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Content-Type": "application/json"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=600) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            return {"error": {"code": error.code, "message": error.read().decode(errors="replace")}}

    def create_dataset(self, dataset: str) -> None:
        answer = self.call("POST", "datasets", {"datasetReference": {
            "projectId": self.project, "datasetId": dataset}})
        if "error" in answer and answer["error"]["code"] != 409:
            raise RunFailed(f"bigquery emulator: cannot create dataset {dataset}: {answer}")

    def counts(self, dataset: str, table: str, columns: str) -> list[Optional[int]] | str:
        """The one row of `SELECT <columns> FROM` the table, as integers (None for NULL), or
        why the query failed."""
        answer = self.call("POST", "queries", {"useLegacySql": False, "timeoutMs": 600000, "query": (
            f"SELECT {columns} FROM `{self.project}.{dataset}.{table}`")})
        if "error" in answer or not answer.get("rows"):
            return f"bigquery emulator: cannot count {dataset}.{table}: {str(answer)[:300]}"
        return [int(cell["v"]) if cell["v"] is not None else None
                for cell in answer["rows"][0]["f"]]

    def check(self, dataset: str, table: str, columns: str,
              judge: Callable[[list[Optional[int]]], Optional[str]]) -> Optional[str]:
        """The table's counts (`SELECT <columns>`, as integers, None for NULL) judged by `judge`
        (an error, or None); the table is then dropped, unless it is wrong."""
        answer = self.call("POST", "queries", {"useLegacySql": False, "timeoutMs": 600000, "query": (
            f"SELECT {columns} FROM `{self.project}.{dataset}.{table}`")})
        if "error" in answer or not answer.get("rows"):
            return f"bigquery emulator: cannot count {dataset}.{table}: {str(answer)[:300]}"
        error = judge([int(cell["v"]) if cell["v"] is not None else None
                       for cell in answer["rows"][0]["f"]])
        if error:
            return error
        self.call("DELETE", f"datasets/{dataset}/tables/{table}")  # Keeps the emulator small.
        return None

    def check_table(self, dataset: str, table: str, n: int) -> Optional[str]:
        """N rows with N distinct source_record_ids 0..N-1, and the first and last payloads."""
        return self.check(dataset, table, (
            "COUNT(*), COUNT(DISTINCT _source_record_id), "
            "MIN(CAST(_source_record_id AS INT64)), MAX(CAST(_source_record_id AS INT64)), "
            "COUNTIF(JSON_VALUE(_source_data, '$.name') = CONCAT('record-', _source_record_id)), "
            "MIN(LENGTH(JSON_VALUE(_source_data, '$.padding')))"),
            lambda counts: table_counts_error(f"{dataset}.{table}", n, *counts))

    def check_kafka_table(self, dataset: str, table: str, n: int) -> Optional[str]:
        """N rows of the bench topic's records (one partition): N distinct offsets 0..N-1, and
        the value's id equal to its offset in every row."""
        def judge(counts: list[Optional[int]]) -> Optional[str]:
            total, distinct, low, high, matching = counts
            if (total, distinct, low, high, matching) != (n, n, 0, n - 1, n):
                return (f"{dataset}.{table}: {total} rows, {distinct} distinct ids, offsets "
                        f"{low}..{high}, {matching} with value.id = offset; expected {n}, "
                        f"0..{n - 1}")
            return None

        return self.check(dataset, table, (
            "COUNT(*), COUNT(DISTINCT _source_record_id), "
            "MIN(CAST(JSON_VALUE(_source_data, '$.offset') AS INT64)), "
            "MAX(CAST(JSON_VALUE(_source_data, '$.offset') AS INT64)), "
            "COUNTIF(JSON_VALUE(_source_data, '$.value.id') = JSON_VALUE(_source_data, '$.offset'))"),
            judge)

    def job_seconds(self, dataset: str, table: str) -> tuple[int, float]:
        """The jobs whose destination is `table` or `table`_temp (loads, copies, queries), and
        the sum of their durations (creation to end, from the jobs API), newest 1,000 jobs."""
        answer = self.call("GET", "jobs?projection=full&allUsers=true&maxResults=1000")
        count, seconds = 0, 0.0
        for job in answer.get("jobs", []):
            for kind in ("load", "copy", "query"):
                target = job.get("configuration", {}).get(kind, {}).get("destinationTable", {})
                if (target.get("datasetId") == dataset
                        and target.get("tableId") in (table, f"{table}_temp")):
                    statistics_ = job.get("statistics", {})
                    with contextlib.suppress(KeyError, ValueError):
                        seconds += (int(statistics_["endTime"])
                                    - int(statistics_["creationTime"])) / 1000
                        count += 1
        return count, seconds

    @contextlib.contextmanager
    def cpu(self, dataset: Optional[str] = None, table: Optional[str] = None) -> Iterator[dict]:
        """Yields a dict that holds, at exit, the CPU seconds each emulator process used, and
        (with a table) the count and total duration of the jobs that wrote it."""
        pids = {"bigquery": listening_pid(self.bigquery_url),
                "gcs": listening_pid(self.storage_url) if self.storage_url else None}
        before = {name: process_cpu_s(pid) for name, pid in pids.items() if pid}
        measured: dict = {}
        yield measured
        for name, start in before.items():
            with contextlib.suppress(OSError):
                measured[f"emulator_{name}_cpu_s"] = process_cpu_s(pids[name]) - start
        measured["emulator_cpu_s"] = sum(v for k, v in measured.items() if k.endswith("_cpu_s"))
        if dataset and table:
            measured["emulator_jobs"], measured["emulator_job_s"] = self.job_seconds(dataset, table)
