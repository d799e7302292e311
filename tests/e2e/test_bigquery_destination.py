"""The bigquery destination against the BigQuery and GCS emulators: `bizon run` loads Avro files
staged in the bucket and publishes them, and each test checks the table by querying the
emulator. Full refresh (twice: the second replaces), incremental (appends only the new window),
stream (appends, no staging), unnest with record_schemas (typed columns), a partitioned and
clustered table, and the exactly-once lookup of load job ids.

Under CI=true a missing emulator fails these tests (conftest_google's fixture)."""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest
import yaml

from conftest_google import GoogleApiError, google_emulators  # noqa: F401 (fixture)
from fake_hubspot import FakeHubSpot
from support.pipelines import dummy, generator, load_example, pipeline, runner
from support.results import State, parse_sql_time

INTERVAL_MS = 1


def destination(emulators, dataset: str, **config) -> dict:
    return {"name": "bigquery", "config": {
        "project_id": emulators.project, "dataset_id": dataset, "create_dataset": True,
        "gcs_buffer_bucket": emulators.bucket, **config}}


@pytest.fixture
def dataset(google_emulators) -> str:
    name = f"bq_dest_{uuid.uuid4().hex[:10]}"
    google_emulators.create_dataset(name)
    return name


def rows(emulators, dataset: str, table: str, order: str = "_source_record_id") -> list[dict]:
    return emulators.query(f"SELECT * FROM `{emulators.project}.{dataset}.{table}` ORDER BY {order}")


def table_names(emulators, dataset: str) -> list[str]:
    answer = emulators.bq("GET", f"datasets/{dataset}/tables")
    return sorted(table["tableReference"]["tableId"] for table in answer.get("tables", []))


RAW = [("_source_record_id", "STRING"), ("_source_timestamp", "TIMESTAMP"),
       ("_source_data", "STRING"), ("_bizon_extracted_at", "TIMESTAMP"),
       ("_bizon_loaded_at", "TIMESTAMP"), ("_bizon_id", "STRING")]


def load_job_id(pipeline_job: str, table: str, write: int) -> str:
    """The deterministic id of a load job (bigquery_destination.h): FNV-1a 64 of the table."""
    digest = 1469598103934665603
    for byte in table.encode():
        digest = ((digest ^ byte) * 1099511628211) % (1 << 64)
    return f"bizon_load_{pipeline_job}_{digest:016x}_{write}"


def generator_ids(found: list[dict]) -> list[int]:
    return sorted(int(row["_source_record_id"]) for row in found)


def test_full_refresh_loads_raw_columns_and_a_second_run_replaces(bizon, google_emulators, dataset):
    emulators = google_emulators
    config = bizon.write("p.yml", pipeline("bq-fr", dummy(), destination(emulators, dataset)))
    started_us = int(time.time() * 1e6)
    bizon.run("run", config, check=0)
    found = rows(emulators, dataset, "_bizon_dummy_creatures")
    assert sorted(json.loads(row["_source_data"])["name"] for row in found) == [
        "bizon", "croco", "froggy", "poulpo", "turtle"]
    for row in found:
        assert list(row) == ["_source_record_id", "_source_timestamp", "_source_data",
                             "_bizon_extracted_at", "_bizon_loaded_at", "_bizon_id"]
        # TIMESTAMP columns (the Avro logical type survived): int64 microseconds.
        assert int(row["_bizon_loaded_at"]) >= started_us - 5_000_000
        assert int(row["_bizon_extracted_at"]) <= int(row["_bizon_loaded_at"])
        assert len(row["_bizon_id"]) == 32
    table = emulators.bq("GET", f"datasets/{dataset}/tables/_bizon_dummy_creatures")
    assert table["timePartitioning"] == {"type": "DAY", "field": "_bizon_loaded_at"}
    assert [field["mode"] for field in table["schema"]["fields"]] == ["NULLABLE"] * 6
    # No staging table and no staged file remain.
    assert table_names(emulators, dataset) == ["_bizon_dummy_creatures"]
    [job] = State(bizon.cwd).jobs()
    assert emulators.list_objects(emulators.bucket, f"dummy/creatures/{job['id']}/") == []

    first_ids = {row["_bizon_id"] for row in found}
    bizon.run("run", config, check=0)
    again = rows(emulators, dataset, "_bizon_dummy_creatures")
    assert len(again) == 5  # Replaced, not appended.
    assert not first_ids & {row["_bizon_id"] for row in again}


def test_an_existing_unprefixed_table_is_reused_and_destination_id_is_a_bare_name(
        bizon, google_emulators, dataset):
    emulators = google_emulators
    # A table an older bizon made (unprefixed name, REQUIRED columns, no partitioning).
    emulators.bq("POST", f"datasets/{dataset}/tables", {
        "tableReference": {"projectId": emulators.project, "datasetId": dataset,
                           "tableId": "dummy_creatures"},
        "schema": {"fields": [{"name": name, "type": kind, "mode": "REQUIRED"} for name, kind in RAW]}})
    config = bizon.write("p.yml", pipeline("bq-legacy", dummy(), destination(emulators, dataset)))
    result = bizon.run("run", config, check=0)
    assert len(rows(emulators, dataset, "dummy_creatures")) == 5
    assert "_bizon_dummy_creatures" not in table_names(emulators, dataset)
    # Its layout differs from the staged one: a warning, and the table keeps its own.
    assert "is not partitioned, but this run staged it partitioned by `_bizon_loaded_at` (DAY)" in result.stderr
    assert "set enforce_partitioning: true" in result.stderr

    config = bizon.write("p.yml", pipeline(
        "bq-named", dummy(), destination(emulators, dataset, destination_id="named")))
    bizon.run("run", config, check=0)
    assert len(rows(emulators, dataset, "named")) == 5


def test_incremental_appends_only_the_new_window(bizon, google_emulators, dataset):
    emulators = google_emulators
    first, total = 120, 200
    options = dict(page_size=25, interval_ms=INTERVAL_MS)
    dest = destination(emulators, dataset, destination_id="events", buffer_size=0)
    config = bizon.write("p.yml", pipeline("bq-inc", generator("incremental", count=first, **options), dest))
    bizon.run("run", config, check=0)
    assert generator_ids(rows(emulators, dataset, "events")) == list(range(first))

    [job] = State(bizon.cwd).jobs()
    last_run = parse_sql_time(job["created_at"])
    start = last_run - timedelta(milliseconds=INTERVAL_MS * (first - 0.5))
    source = generator("incremental", count=total, start=start.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), **options)
    bizon.write("p.yml", pipeline("bq-inc", source, dest))
    time.sleep((total - first) * INTERVAL_MS / 1000 + 0.05)
    bizon.run("run", config, check=0)
    assert generator_ids(rows(emulators, dataset, "events")) == list(range(total))
    assert table_names(emulators, dataset) == ["events"]  # events_incremental was dropped.


def test_stream_mode_appends_to_the_table_directly(bizon, google_emulators, dataset):
    emulators = google_emulators
    source = generator("stream", count=90, page_size=30)
    dest = destination(emulators, dataset, destination_id="live", buffer_size=0)
    config = bizon.write("p.yml", pipeline("bq-stream", source, dest, engine=runner("stream")))
    bizon.run("run", config, check=0)
    assert generator_ids(rows(emulators, dataset, "live")) == list(range(90))
    assert table_names(emulators, dataset) == ["live"]


RECORD_SCHEMA = [
    {"name": "id", "type": "INTEGER", "mode": "REQUIRED"},
    {"name": "name", "type": "STRING", "mode": "NULLABLE", "description": "the name"},
    {"name": "updated_at", "type": "TIMESTAMP", "mode": "NULLABLE"},
    {"name": "value", "type": "FLOAT64", "mode": "NULLABLE"},
]


def test_unnest_writes_the_record_schema_columns_partitioned_and_clustered(
        bizon, google_emulators, dataset):
    emulators = google_emulators
    dest = destination(
        emulators, dataset, destination_id="typed", unnest=True,
        time_partitioning={"type": "DAY", "field": "updated_at"},
        record_schemas=[{"destination_id": "typed", "record_schema": RECORD_SCHEMA,
                         "clustering_keys": ["name"]}])
    config = bizon.write("p.yml", pipeline(
        "bq-unnest", generator(count=40, page_size=10, start="2024-01-02T00:00:00Z"), dest))
    bizon.run("run", config, check=0)
    found = rows(emulators, dataset, "typed", order="id")
    assert [int(row["id"]) for row in found] == list(range(40))
    assert list(found[0]) == ["id", "name", "updated_at", "value"]
    start_us = int(datetime(2024, 1, 2, tzinfo=timezone.utc).timestamp() * 1e6)
    assert int(found[0]["updated_at"]) == start_us
    assert int(found[3]["updated_at"]) == start_us + 3 * 1000  # interval_ms 1
    table = emulators.bq("GET", f"datasets/{dataset}/tables/typed")
    assert [(f["name"], f["type"], f["mode"]) for f in table["schema"]["fields"]] == [
        ("id", "INTEGER", "REQUIRED"), ("name", "STRING", "NULLABLE"),
        ("updated_at", "TIMESTAMP", "NULLABLE"), ("value", "FLOAT", "NULLABLE")]
    # The copy job carried the staging table's layout to the new table.
    assert table["timePartitioning"] == {"type": "DAY", "field": "updated_at"}
    assert table["clustering"] == {"fields": ["name"]}


def test_unnest_refuses_an_undeclared_key_and_publishes_nothing(bizon, google_emulators, dataset):
    emulators = google_emulators
    dest = destination(emulators, dataset, destination_id="strict", unnest=True,
                       record_schemas=[{"destination_id": "strict",
                                        "record_schema": RECORD_SCHEMA[:2]}])
    config = bizon.write("p.yml", pipeline("bq-strict", generator(count=5), dest))
    result = bizon.run("run", config, check=1)
    assert "Column updated_at not found in BigQuery schema" in result.stderr
    assert "strict" not in table_names(emulators, dataset)


@pytest.mark.parametrize("partitioning, message", [
    ({"type": "DAY", "field": "nope"}, "'nope' is not a TIMESTAMP column of the table"),
])
def test_a_partition_field_outside_the_schema_is_a_config_error(
        bizon, google_emulators, dataset, partitioning, message):
    dest = destination(google_emulators, dataset, time_partitioning=partitioning)
    config = bizon.write("p.yml", pipeline("bq-bad-partition", dummy(), dest))
    result = bizon.run("run", config)
    assert result.returncode != 0
    assert "destination.config.time_partitioning.field" in result.stderr and message in result.stderr


def test_unnest_partition_field_must_be_a_time_column_of_every_schema(bizon, google_emulators, dataset):
    dest = destination(google_emulators, dataset, destination_id="typed", unnest=True,
                       time_partitioning={"type": "HOUR", "field": "name"},
                       record_schemas=[{"destination_id": "typed", "record_schema": RECORD_SCHEMA}])
    config = bizon.write("p.yml", pipeline("bq-bad-unnest", generator(count=5), dest))
    result = bizon.run("run", config)
    assert result.returncode != 0
    assert "'name' is not a TIMESTAMP, DATE or DATETIME column" in result.stderr
    assert "destination_id 'typed'" in result.stderr and "updated_at" in result.stderr


def test_a_missing_dataset_without_create_dataset_is_a_clear_error(bizon, google_emulators):
    dest = destination(google_emulators, "no_such_dataset_xyz", create_dataset=False)
    config = bizon.write("p.yml", pipeline("bq-no-ds", dummy(), dest))
    result = bizon.run("run", config, check=1)
    assert "BigQuery dataset " in result.stderr and "no_such_dataset_xyz does not exist" in result.stderr
    assert "create_dataset: true" in result.stderr


def test_parquet_and_csv_buffer_formats_load_avro_files_with_a_notice(bizon, google_emulators, dataset):
    emulators = google_emulators
    for fmt in ("parquet", "csv"):
        dest = destination(emulators, dataset, destination_id=f"as_{fmt}", gcs_buffer_format=fmt)
        config = bizon.write("p.yml", pipeline(f"bq-{fmt}", dummy(), dest))
        result = bizon.run("run", config, check=0)
        assert f"gcs_buffer_format {fmt} is written as Avro files" in result.stderr + result.stdout
        assert len(rows(emulators, dataset, f"as_{fmt}")) == 5


def test_async_load_batches_files_into_jobs(bizon, google_emulators, dataset):
    emulators = google_emulators
    dest = destination(emulators, dataset, destination_id="batched", buffer_size=0, async_load=True,
                       load_files_per_job=3, load_max_in_flight_jobs=1)
    config = bizon.write("p.yml", pipeline("bq-async", generator(count=100, page_size=10), dest))
    result = bizon.run("run", config, check=0)
    assert generator_ids(rows(emulators, dataset, "batched")) == list(range(100))
    [job] = State(bizon.cwd).jobs()
    assert emulators.list_objects(emulators.bucket, f"generator/records/{job['id']}/") == []
    assert "already ran" not in result.stderr
    # Ten files, three per job: four load jobs, named after their first file's write.
    for first_write in (1, 4, 7, 10):
        answer = emulators.bq("GET", f"jobs/{load_job_id(job['id'], 'batched', first_write)}")
        assert answer["status"]["state"] == "DONE" and "errorResult" not in answer["status"]
        assert len(answer["configuration"]["load"]["sourceUris"]) == (1 if first_write == 10 else 3)
    with pytest.raises(GoogleApiError):
        emulators.bq("GET", f"jobs/{load_job_id(job['id'], 'batched', 2)}")


def test_a_load_that_already_ran_is_not_run_again(bizon, google_emulators, dataset):
    """A run that dies after its load landed but before its cursor was recorded: the resumed run
    finds the job id DONE and does not load the rows a second time."""
    emulators = google_emulators
    dest = destination(emulators, dataset, destination_id="once", buffer_size=0)
    config = bizon.write("p.yml", pipeline("bq-once", generator("stream", count=30, page_size=10),
                                           dest, engine=runner("stream")))
    bizon.run("run", config, check=0)
    [job] = State(bizon.cwd).jobs()
    # Roll the backend back by the last cursor, as if the process had died before writing it.
    state = State(bizon.cwd)
    state.execute("DELETE FROM destination_cursors WHERE to_source_iteration = "
                  "(SELECT MAX(to_source_iteration) FROM destination_cursors)")
    result = bizon.run("run", config, check=0)
    assert "already ran; not running it again" in result.stderr
    assert generator_ids(rows(emulators, dataset, "once")) == list(range(30))


def test_a_resumed_flush_cut_elsewhere_loses_no_row(bizon, google_emulators, dataset):
    """The dead run's last load landed (rows 20-29) but its cursor was not recorded; the resumed
    run fetches bigger pages and flushes rows 20-39 as the same n-th write. Its job id names other
    rows, so it is loaded: rows 20-29 may repeat, but rows 30-39 are not skipped as 'already
    ran'."""
    emulators = google_emulators
    dest = destination(emulators, dataset, destination_id="recut", buffer_size=0)
    first = bizon.write("p.yml", pipeline("bq-recut", generator("stream", count=30, page_size=10),
                                          dest, engine=runner("stream")))
    bizon.run("run", first, check=0)
    State(bizon.cwd).execute("DELETE FROM destination_cursors WHERE to_source_iteration = "
                             "(SELECT MAX(to_source_iteration) FROM destination_cursors)")
    second = bizon.write("p.yml", pipeline("bq-recut", generator("stream", count=40, page_size=20),
                                           dest, engine=runner("stream")))
    result = bizon.run("run", second, check=0)
    assert "already ran; not running it again" not in result.stderr
    found = generator_ids(rows(emulators, dataset, "recut"))
    assert sorted(set(found)) == list(range(40))
    assert found.count(35) == 1 and found.count(5) == 1


# --------------------------------------------------------------------------------------------
# The original's BigQuery examples (our own files in their shapes), pointed at the fake HubSpot
# and the emulators.


def _example(name: str, emulators, dataset: str, hubspot_url: str) -> dict:
    config = load_example(name)
    config.pop("engine", None)  # The bigquery backend is not part of this destination.
    config["source"]["base_url"] = hubspot_url
    config["destination"]["config"].update(
        project_id=emulators.project, dataset_id=dataset, gcs_buffer_bucket=emulators.bucket)
    return config


def test_example_hubspot_incremental_to_bigquery(bizon, google_emulators, dataset):
    emulators = google_emulators
    hubspot = FakeHubSpot(token="hubspot-private-app-token").start()
    try:
        config = _example("hubspot_incremental_to_bigquery.yml", emulators, dataset, hubspot.url)
        text = yaml.safe_dump(config)
        path = bizon.write("p.yml", text)
        bizon.run("run", path, check=0, timeout=300)
        table = "_bizon_hubspot_contacts"
        first = rows(emulators, dataset, table)
        assert len(first) == 250
        assert {row["_source_record_id"] for row in first} == {
            contact["id"] for contact in hubspot.account.objects["contacts"]}
        changed = hubspot.account.objects["contacts"][42]["id"]
        hubspot.account.touch("contacts", changed)
        bizon.run("run", path, check=0, timeout=300)
        after = rows(emulators, dataset, table)
        assert len(after) == 251  # Appended only the changed contact.
        assert sorted(row["_source_record_id"] for row in after if row["_source_record_id"] == changed) == [
            changed, changed]
        assert table_names(emulators, dataset) == [table]
        assert hubspot.violations == []
    finally:
        hubspot.stop()


def test_example_hubspot_companies_async_load_with_the_key_moved(bizon, google_emulators, dataset):
    emulators = google_emulators
    hubspot = FakeHubSpot(token="hubspot-private-app-token").start()
    try:
        config = _example("bigquery_key_beside_options.yml", emulators, dataset, hubspot.url)
        # As written the key is refused (it belongs under authentication); the emulators need none.
        config["destination"]["config"].pop("service_account_key")
        config["destination"]["config"]["buffer_size"] = 0
        bizon.run("run", bizon.write("p.yml", yaml.safe_dump(config)), check=0, timeout=300)
        found = rows(emulators, dataset, "_bizon_hubspot_companies")
        assert sorted(row["_source_record_id"] for row in found) == sorted(
            company["id"] for company in hubspot.account.objects["companies"])
        assert hubspot.violations == []
    finally:
        hubspot.stop()


def test_enforce_partitioning_recreates_a_table_whose_layout_differs(bizon, google_emulators, dataset):
    emulators = google_emulators
    emulators.bq("POST", f"datasets/{dataset}/tables", {
        "tableReference": {"projectId": emulators.project, "datasetId": dataset, "tableId": "laid"},
        "schema": {"fields": [{"name": name, "type": kind} for name, kind in RAW]}})
    dest = destination(emulators, dataset, destination_id="laid", enforce_partitioning=True,
                       time_partitioning={"type": "MONTH", "field": "_source_timestamp"})
    result = bizon.run("run", bizon.write("p.yml", pipeline("bq-enforce", dummy(), dest)), check=0)
    assert "enforce_partitioning: dropping" in result.stderr
    table = emulators.bq("GET", f"datasets/{dataset}/tables/laid")
    assert table["timePartitioning"] == {"type": "MONTH", "field": "_source_timestamp"}
    assert len(rows(emulators, dataset, "laid")) == 5


def test_a_failed_full_refresh_leaves_the_previous_table_untouched(bizon, google_emulators, dataset):
    emulators = google_emulators
    dest = destination(emulators, dataset, destination_id="kept", buffer_size=0)
    config = bizon.write("p.yml", pipeline("bq-kept", generator(count=30, page_size=10), dest))
    bizon.run("run", config, check=0)
    before = rows(emulators, dataset, "kept")
    assert generator_ids(before) == list(range(30))
    # The next run loads two pages into the staging table, then its source fails.
    bizon.write("p.yml", pipeline("bq-kept", generator(count=60, page_size=10, fail_at_iteration=3), dest))
    bizon.run("run", config, check=1)
    assert rows(emulators, dataset, "kept") == before


def test_a_failed_load_records_no_cursor_and_the_rerun_loads_every_row_once(
        bizon, google_emulators, dataset):
    emulators = google_emulators
    # A table the loads cannot fit: one INTEGER column where six are written.
    emulators.bq("POST", f"datasets/{dataset}/tables", {
        "tableReference": {"projectId": emulators.project, "datasetId": dataset, "tableId": "bad"},
        "schema": {"fields": [{"name": "x", "type": "INTEGER"}]}})
    dest = destination(emulators, dataset, destination_id="bad", buffer_size=0)
    config = bizon.write("p.yml", pipeline("bq-failed-load", generator("stream", count=30, page_size=10),
                                           dest, engine=runner("stream")))
    result = bizon.run("run", config, check=1)
    assert "loading 10 rows into " in result.stderr and f"{dataset}.bad" in result.stderr
    [job] = State(bizon.cwd).jobs()
    assert [c for c in State(bizon.cwd).destination_cursors(job["id"]) if c["success"]] == []

    emulators.bq("DELETE", f"datasets/{dataset}/tables/bad")
    bizon.run("run", config, check=0)
    assert generator_ids(rows(emulators, dataset, "bad")) == list(range(30))


def test_config_validate_reports_the_partition_rules_with_their_line(bizon, google_emulators, dataset):
    dest = destination(google_emulators, dataset, destination_id="typed", unnest=True,
                       time_partitioning={"type": "HOUR", "field": "name"},
                       record_schemas=[{"destination_id": "typed", "record_schema": RECORD_SCHEMA}])
    text = pipeline("bq-validate", generator(count=5), dest)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.strip() == "field: name")
    result = bizon.run("config", "validate", bizon.write("p.yml", text))
    assert result.returncode != 0
    assert f"p.yml:{line}: destination.config.time_partitioning.field: 'name' is not a TIMESTAMP" in (
        result.stdout + result.stderr)
