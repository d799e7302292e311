"""The `gcs` and `s3` destinations: Parquet parts in a bucket, published exactly once. Each sync
mode against the GCS emulator and the S3 server (versitygw) of scripts/test-servers.sh, the parts
read back with pyarrow and compared with what the same source writes as NDJSON; SIGKILLs at random
points ending with every record exactly once; the S3 secret never in a log line.

The S3 tests need BIZON_S3_ENDPOINT (and the keys, bucket) from scripts/test-servers.sh, and are
skipped without it. GCS tests use the `google_emulators` fixture, so they share one xdist group.
"""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from conftest_google import google_emulators  # noqa: F401  (a fixture)
from support.exactly_once import assert_ids_exactly_once
from support.parquet import RECORD_SCHEMA, read_parts, records, schema_of
from support.pipelines import generator, pipeline, runner
from support.processes import run_until_complete
from support.results import State, parse_sql_time

SEED = int(os.environ.get("BIZON_KILL_SEED", "20261207"))
STAGING = "_bizon_staging"


class Bucket:
    """One test's prefix in a bucket: the destination block that writes there, and what is there."""

    def __init__(self, name: str, prefix: str):
        self.name = name
        self.prefix = prefix

    def destination(self, **options) -> dict:
        raise NotImplementedError

    def names(self) -> list[str]:
        """Object names under the test's prefix, relative to it."""
        raise NotImplementedError

    def read(self, name: str) -> bytes:
        raise NotImplementedError

    def table(self, destination_id: str = "out", extension: str = ".parquet") -> list[str]:
        """The published parts of a table, relative names, in name order."""
        return sorted(name for name in self.names()
                      if name.startswith(destination_id + "/") and name.endswith(extension)
                      and "/" not in name[len(destination_id) + 1:])

    def rows(self, destination_id: str = "out") -> list[dict]:
        return read_parts([self.read(name) for name in self.table(destination_id)])

    def staged(self) -> list[str]:
        return [name for name in self.names() if name.startswith(STAGING + "/")]


class GcsBucket(Bucket):
    def __init__(self, emulators, prefix: str):
        super().__init__(emulators.bucket, prefix)
        self.emulators = emulators

    def destination(self, **options) -> dict:
        return {"name": "gcs", "config": {"bucket": self.name, "prefix": self.prefix,
                                          "destination_id": "out", **options}}

    def names(self) -> list[str]:
        return [name[len(self.prefix) + 1:]
                for name in self.emulators.list_objects(self.name, self.prefix + "/")]

    def read(self, name: str) -> bytes:
        return self.emulators.download(self.name, f"{self.prefix}/{name}")


class S3Bucket(Bucket):
    """Read through the server's own directory (versitygw serves a POSIX tree): the tests need no
    S3 client of their own."""

    def __init__(self, prefix: str):
        super().__init__(os.environ.get("BIZON_S3_BUCKET", "bizon-lake"), prefix)
        self.root = Path(os.environ["BIZON_S3_LOCAL_ROOT"]) / self.name / prefix

    def destination(self, **options) -> dict:
        return {"name": "s3", "config": {
            "bucket": self.name, "prefix": self.prefix, "destination_id": "out",
            "endpoint": "env://BIZON_S3_ENDPOINT", "region": "us-east-1",
            "access_key_id": "env://BIZON_S3_ACCESS_KEY_ID",
            "secret_access_key": "env://BIZON_S3_SECRET_ACCESS_KEY", **options}}

    def names(self) -> list[str]:
        if not self.root.exists():
            return []
        return sorted(str(path.relative_to(self.root)) for path in self.root.rglob("*")
                      if path.is_file() and not path.name.startswith("."))

    def read(self, name: str) -> bytes:
        return (self.root / name).read_bytes()


def unique_prefix() -> str:
    return f"e2e/{uuid.uuid4().hex[:12]}"


@pytest.fixture
def gcs(google_emulators):  # noqa: F811  (the imported fixture)
    return GcsBucket(google_emulators, unique_prefix())


@pytest.fixture
def s3():
    if not os.environ.get("BIZON_S3_ENDPOINT"):
        pytest.skip("BIZON_S3_ENDPOINT is unset (scripts/test-servers.sh start s3)")
    return S3Bucket(unique_prefix())


def ids(rows: list[dict]) -> list[int]:
    return [int(row["source_record_id"]) for row in rows]


# --- the scenarios, run against either store ----------------------------------------------------


def full_refresh_replaces_the_table(bizon, bucket: Bucket) -> None:
    source = generator(count=1_000, page_size=100)
    bizon.run("run", bizon.write("json.yml", pipeline("os-json", source)), check=0)
    expected = records(bizon.read_ndjson("out.json"))
    config = bizon.write("p.yml", pipeline("os-fr", source, bucket.destination(buffer_size=0.02)))
    bizon.run("run", config, check=0)
    first = bucket.table()
    assert len(first) > 1, "a part per durable point"
    assert schema_of(bucket.read(first[0])) == RECORD_SCHEMA
    assert records(bucket.rows()) == expected
    assert bucket.staged() == []

    bizon.write("p.yml", pipeline("os-fr", generator(count=300), bucket.destination()))
    bizon.run("run", config, check=0)
    assert not set(first) & set(bucket.table()), "the previous job's parts are deleted"
    assert_ids_exactly_once(ids(bucket.rows()), 300)
    assert bucket.staged() == []


def json_parts_hold_the_ndjson_records(bizon, bucket: Bucket) -> None:
    source = generator(count=1_000, page_size=100)
    bizon.run("run", bizon.write("json.yml", pipeline("os-json", source)), check=0)
    expected = records(bizon.read_ndjson("out.json"))
    destination = bucket.destination(format="json", buffer_size=0.05)
    bizon.run("run", bizon.write("p.yml", pipeline("os-json-parts", source, destination)), check=0)
    parts = bucket.table(extension=".json")
    assert len(parts) > 1 and bucket.table() == []
    rows = [json.loads(line) for part in parts for line in bucket.read(part).splitlines()]
    assert records(rows) == expected
    assert sorted(rows[0]) == sorted(RECORD_SCHEMA)
    assert bucket.staged() == []


def incremental_appends_each_window_once(bizon, bucket: Bucket) -> None:
    options = dict(page_size=100, interval_ms=1)
    destination = bucket.destination(buffer_size=0.02, compression="snappy")
    config = bizon.write("p.yml", pipeline("os-inc", generator("incremental", count=600, **options),
                                           destination))
    bizon.run("run", config, check=0)
    assert_ids_exactly_once(ids(bucket.rows()), 600)
    [first] = State(bizon.cwd).jobs()
    start = parse_sql_time(first["created_at"]) - timedelta(milliseconds=600 - 0.5)
    source = generator("incremental", count=1_000, start=start.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                       **options)
    bizon.write("p.yml", pipeline("os-inc", source, destination))
    time.sleep(0.5)  # Every new record precedes the second job's start, the window's end.
    bizon.run("run", config, check=0)
    assert_ids_exactly_once(ids(bucket.rows()), 1_000)
    assert bucket.staged() == []


def stream_publishes_every_part_once(bizon, bucket: Bucket) -> None:
    source = generator("stream", count=500, page_size=100)
    config = bizon.write("p.yml", pipeline("os-stream", source, bucket.destination(buffer_size=0),
                                           engine=runner("stream")))
    bizon.run("run", config, check=0)
    assert len(bucket.table()) == 5  # A part per page (buffer_size 0).
    assert_ids_exactly_once(ids(bucket.rows()), 500)
    # A stream job never ends: only its manifest stays in staging.
    assert [name for name in bucket.staged() if not name.endswith(".job.json")] == []


def killed_stream_ends_exactly_once(bizon, bucket: Bucket, capsys, kills: int) -> None:
    started = time.monotonic()
    count = 30_000
    # The thread runner, so that a part holds buffer_size of records rather than one page: the
    # stream runner's part per page would cost the emulator thousands of requests.
    source = generator("stream", count=count, page_size=50, sleep=0.01)
    config = bizon.write("p.yml", pipeline("os-kill", source, bucket.destination(buffer_size=0.2)))
    landed = run_until_complete(bizon, config, random.Random(SEED), kills=kills)
    assert_ids_exactly_once(ids(bucket.rows()), count)
    with capsys.disabled():
        print(f"\nkill-resume {bucket.destination()['name']} stream: {landed} kills, {count} "
              f"records checked, {time.monotonic() - started:.1f} s (seed {SEED})")
    assert landed >= kills


def killed_incremental_ends_exactly_once(bizon, bucket: Bucket, kills: int) -> None:
    count = 12_000
    # 240 pages of 30 ms: a run must outlast the kills. A resumed run moves on by about the kill
    # delay less the binary's start, so eight kills need several seconds of work to land in.
    source = generator("incremental", count=count, page_size=50, sleep=0.03, interval_ms=0.01)
    config = bizon.write("p.yml", pipeline("os-kill-inc", source,
                                           bucket.destination(buffer_size=0.02)))
    landed = run_until_complete(bizon, config, random.Random(SEED + 1), kills=kills,
                                delays=(0.2, 1.2))
    [job] = State(bizon.cwd).jobs()
    assert job["status"] == "succeeded"
    assert_ids_exactly_once(ids(bucket.rows()), count)
    assert bucket.staged() == []
    assert landed >= kills


# --- GCS (emulator) -----------------------------------------------------------------------------


def test_gcs_full_refresh_replaces_the_table(bizon, gcs):
    full_refresh_replaces_the_table(bizon, gcs)


def test_gcs_json_parts_hold_the_ndjson_records(bizon, gcs):
    json_parts_hold_the_ndjson_records(bizon, gcs)


def test_gcs_incremental_appends_each_window_once(bizon, gcs):
    incremental_appends_each_window_once(bizon, gcs)


def test_gcs_stream_publishes_every_part_once(bizon, gcs):
    stream_publishes_every_part_once(bizon, gcs)


@pytest.mark.long
def test_gcs_stream_killed_and_resumed_loses_and_duplicates_nothing(bizon, gcs, capsys):
    killed_stream_ends_exactly_once(bizon, gcs, capsys, kills=20)


@pytest.mark.long
def test_gcs_incremental_killed_and_resumed_loses_and_duplicates_nothing(bizon, gcs):
    killed_incremental_ends_exactly_once(bizon, gcs, kills=8)


def test_gcs_bad_destination_id_is_a_config_error_with_its_line(bizon, gcs):
    config = bizon.write("p.yml", pipeline("os-bad", generator(count=1),
                                           gcs.destination(destination_id="a//b")))
    result = bizon.run("config", "validate", config)
    assert result.returncode != 0
    text = result.stdout + result.stderr
    assert "p.yml:" in text and "destination.config.destination_id" in text, text
    assert "'a//b'" in text, text


# --- S3 (versitygw) -----------------------------------------------------------------------------


def test_s3_full_refresh_replaces_the_table(bizon, s3):
    full_refresh_replaces_the_table(bizon, s3)


def test_s3_json_parts_hold_the_ndjson_records(bizon, s3):
    json_parts_hold_the_ndjson_records(bizon, s3)


def test_s3_incremental_appends_each_window_once(bizon, s3):
    incremental_appends_each_window_once(bizon, s3)


def test_s3_stream_publishes_every_part_once(bizon, s3):
    stream_publishes_every_part_once(bizon, s3)


@pytest.mark.long
def test_s3_stream_killed_and_resumed_loses_and_duplicates_nothing(bizon, s3, capsys):
    killed_stream_ends_exactly_once(bizon, s3, capsys, kills=20)


def test_s3_incremental_killed_and_resumed_loses_and_duplicates_nothing(bizon, s3):
    killed_incremental_ends_exactly_once(bizon, s3, kills=8)


def test_s3_secret_key_is_never_logged_even_when_refused(bizon, s3):
    secret = os.environ["BIZON_S3_SECRET_ACCESS_KEY"]
    destination = s3.destination()
    config = bizon.write("p.yml", pipeline("os-secret", generator(count=50), destination))
    ok = bizon.run("run", config, "--log-level", "DEBUG", check=0)
    assert secret not in ok.stdout + ok.stderr
    # A wrong secret: the server refuses the signature; the error names no key.
    destination["config"]["secret_access_key"] = "wrong-" + secret
    bizon.write("p.yml", pipeline("os-secret", generator(count=50), destination))
    refused = bizon.run("run", config, "--log-level", "DEBUG")
    assert refused.returncode == 1
    text = refused.stdout + refused.stderr
    assert secret not in text and "wrong-" not in text, text
    assert "DestinationError" in text, text
