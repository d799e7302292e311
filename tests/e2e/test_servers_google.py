"""The Google emulators against what the BigQuery and GCS work relies on: an object uploaded over
the GCS JSON API is loadable by a BigQuery load job from gs:// (the shared directory), and a
restart keeps tables and objects."""

from __future__ import annotations

import json
import uuid

import pytest

from conftest_google import GoogleApiError, google_emulators  # noqa: F401 (fixture)

SCHEMA = [{"name": "id", "type": "INTEGER", "mode": "REQUIRED"},
          {"name": "name", "type": "STRING"},
          {"name": "seen_at", "type": "TIMESTAMP"}]
ROWS = [{"id": 1, "name": "one", "seen_at": "2024-01-02T03:04:05Z"},
        {"id": 2, "name": "two", "seen_at": "2024-01-02T03:04:06Z"},
        {"id": 3, "name": None, "seen_at": None}]


def _ndjson(rows) -> bytes:
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def test_a_gcs_upload_is_loadable_from_gs_by_bigquery(google_emulators):
    emulators = google_emulators
    bucket = f"bizon-smoke-{uuid.uuid4().hex[:8]}"
    emulators.create_bucket(bucket)
    name = "staging/part 1.ndjson"  # A slash and a space: names are encoded in paths.
    resource = emulators.upload(bucket, name, _ndjson(ROWS))
    assert resource["name"] == name and int(resource["size"]) == len(_ndjson(ROWS))
    assert emulators.download(bucket, name) == _ndjson(ROWS)
    assert emulators.list_objects(bucket, "staging/") == [name]

    dataset = f"smoke_{uuid.uuid4().hex[:8]}"
    emulators.create_dataset(dataset)
    job = emulators.load(dataset, "t", [f"gs://{bucket}/{name}"], SCHEMA)
    assert job["configuration"]["load"]["sourceUris"] == [f"gs://{bucket}/{name}"]

    rows = emulators.query(f"SELECT id, name, seen_at FROM `{emulators.project}.{dataset}.t` ORDER BY id")
    assert rows == [{"id": "1", "name": "one", "seen_at": "1704164645000000"},
                    {"id": "2", "name": "two", "seen_at": "1704164646000000"},
                    {"id": "3", "name": None, "seen_at": None}]

    # A missing file is a DONE job with errorResult, as on BigQuery.
    with pytest.raises(AssertionError, match="errorResult"):
        emulators.load(dataset, "t", [f"gs://{bucket}/staging/missing.ndjson"], SCHEMA)

    emulators.delete(bucket, name)
    assert emulators.list_objects(bucket, "staging/") == []
    with pytest.raises(GoogleApiError) as missing:
        emulators.download(bucket, name)
    assert missing.value.status == 404


@pytest.mark.serial  # restarts the emulators
def test_a_restart_keeps_tables_and_objects(google_emulators):
    emulators = google_emulators
    dataset = f"restart_{uuid.uuid4().hex[:8]}"
    name = f"restart/{uuid.uuid4().hex[:8]}.ndjson"
    emulators.create_dataset(dataset)
    emulators.upload(emulators.bucket, name, _ndjson(ROWS[:2]))
    emulators.load(dataset, "t", [f"gs://{emulators.bucket}/{name}"], SCHEMA)

    emulators.restart("bigquery")
    emulators.restart("gcs")

    assert emulators.query(f"SELECT COUNT(*) AS n FROM `{emulators.project}.{dataset}.t`") == \
        [{"n": "2"}]
    assert emulators.download(emulators.bucket, name) == _ndjson(ROWS[:2])
    emulators.delete(emulators.bucket, name)
    emulators.bq("DELETE", f"datasets/{dataset}?deleteContents=true")
