"""The postgres backend and destination end to end: each sync mode, reset, unnest types and
concurrent runs, through the real CLI against the test server. State is read back from the
server with psql (conftest_postgres.py)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import yaml

from conftest_postgres import pg, postgres, postgres_pipeline  # noqa: F401 (fixtures)
from support.pipelines import generator, window_start_for
from support.processes import spawn, wait_for
from support.results import parse_iso, read_result


def parse_backend_time(text: str) -> datetime:
    """A stream_jobs timestamp as json_agg renders it ('2026-10-08T09:46:55.094362', UTC)."""
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def staged_rows(pg, table):
    if not pg.table_exists(table):
        return 0
    return pg.scalar(f'SELECT count(*) AS n FROM "{pg.destination_schema}"."{table}"')


# ---------------------------------------------------------------------------------------------
# full_refresh


def test_full_refresh_creates_schemas_and_second_run_replaces(bizon, pg):
    config = bizon.write("p.yml", postgres_pipeline(pg, "fr", generator(count=25, page_size=10)))
    bizon.run("run", config, "--result-json", "r.json", check=0)
    assert read_result(bizon.cwd / "r.json")["records_written"] == 25
    first = pg.query(f'SELECT _bizon_id FROM "{pg.destination_schema}".out')
    bizon.run("run", config, check=0)

    assert pg.ids() == list(range(25))  # Replaced, not appended.
    second = pg.query(f'SELECT _bizon_id FROM "{pg.destination_schema}".out')
    assert {row["_bizon_id"] for row in first}.isdisjoint(row["_bizon_id"] for row in second)
    assert not pg.table_exists("out_temp")
    jobs = pg.jobs()
    assert [job["status"] for job in jobs] == ["succeeded", "succeeded"]
    assert [job["sync_mode"] for job in jobs] == ["full_refresh", "full_refresh"]
    # The state tables are in the configured schema, not in public.
    assert pg.scalar("SELECT count(*) AS n FROM pg_tables WHERE schemaname = "
                     f"'{pg.backend_schema}' AND tablename IN ('stream_jobs', 'source_cursors',"
                     " 'destination_cursors', 'stream_resets', 'bizon_schema_version')") == 5
    columns = pg.query("SELECT column_name, data_type FROM information_schema.columns"
                       f" WHERE table_schema = '{pg.destination_schema}' AND table_name = 'out'"
                       " ORDER BY ordinal_position")
    assert [(c["column_name"], c["data_type"]) for c in columns] == [
        ("_bizon_id", "text"),
        ("_bizon_extracted_at", "timestamp with time zone"),
        ("_bizon_loaded_at", "timestamp with time zone"),
        ("_source_record_id", "text"),
        ("_source_timestamp", "timestamp with time zone"),
        ("_source_data", "jsonb"),
    ]
    row = pg.query(f'SELECT _source_data FROM "{pg.destination_schema}".out'
                   " WHERE _source_record_id = '7'")[0]
    assert row["_source_data"]["name"] == "record-7"


def test_full_refresh_readers_see_the_old_table_until_the_swap(bizon, pg):
    count = 60
    destination = pg.destination(buffer_size=0)
    config = bizon.write("p.yml", postgres_pipeline(
        pg, "fr", generator(count=count, page_size=5, sleep=0.05), destination))
    bizon.run("run", config, check=0)
    published = pg.query(f'SELECT _bizon_id FROM "{pg.destination_schema}".out ORDER BY 1')

    process = spawn(bizon, "run", config)
    wait_for(lambda: staged_rows(pg, "out_temp") >= 10, what="rows in out_temp")
    assert pg.query(f'SELECT _bizon_id FROM "{pg.destination_schema}".out ORDER BY 1') == published
    assert process.wait(timeout=120) == 0
    assert not pg.table_exists("out_temp")
    assert pg.ids() == list(range(count))
    assert pg.query(f'SELECT _bizon_id FROM "{pg.destination_schema}".out ORDER BY 1') != published


def test_full_refresh_killed_run_never_publishes_a_partial_table(bizon, pg):
    destination = pg.destination(buffer_size=0)
    config = bizon.write("p.yml", postgres_pipeline(
        pg, "fr", generator(count=60, page_size=5, sleep=0.05), destination))
    process = spawn(bizon, "run", config)
    wait_for(lambda: staged_rows(pg, "out_temp") >= 10, what="staged rows")
    process.kill()
    process.wait()
    assert not pg.table_exists("out")
    assert pg.jobs()[0]["status"] == "running"

    result = bizon.run("run", config, check=0)
    assert "it is a full refresh" in result.stderr
    assert [job["status"] for job in pg.jobs()] == ["cancelled", "succeeded"]
    assert pg.ids() == list(range(60))


# ---------------------------------------------------------------------------------------------
# incremental


def test_incremental_first_run_reads_everything_then_appends_each_window(bizon, pg):
    # Record i has updated_at = start + i * 50 ms, so records keep "arriving" for 10 s; each later
    # run must append exactly those in (last_run, run_started_at].
    interval = timedelta(milliseconds=50)
    count = 200
    now = datetime.now(timezone.utc)
    start_text = window_start_for(0, now, 50)
    start = parse_iso(start_text)
    source = generator("incremental", count=count, page_size=7, start=start_text, interval_ms=50)
    config = bizon.write("p.yml", postgres_pipeline(pg, "inc", source,
                                                     pg.destination(buffer_size=0)))
    bizon.run("run", config, check=0)
    assert pg.ids() == list(range(count))  # The first run reads everything with get().
    assert not pg.table_exists("out_incremental")

    for _ in range(2):
        time.sleep(0.5)  # Let some records "arrive".
        before = pg.ids()
        bizon.run("run", config, check=0)
        last_run, run_started = (parse_backend_time(job["created_at"]) for job in pg.jobs()[-2:])
        expected = [i for i in range(count) if last_run < start + i * interval <= run_started]
        assert expected, "the run window should hold some records"
        assert pg.ids() == sorted(before + expected)
        assert not pg.table_exists("out_incremental")
    jobs = pg.jobs()
    assert [job["status"] for job in jobs] == ["succeeded"] * 3
    assert json.loads(jobs[-1]["incremental_state"])["max_id"] >= 0
    # The published table has no bookkeeping column; the load log keeps one publish per job.
    assert not pg.query("SELECT 1 FROM information_schema.columns WHERE table_schema ="
                        f" '{pg.destination_schema}' AND table_name = 'out'"
                        " AND column_name = '_bizon_load_id'")
    kinds = pg.query(f'SELECT kind FROM "{pg.destination_schema}"._bizon_loads')
    assert [row["kind"] for row in kinds] == ["publish"] * 3


def test_incremental_stages_then_appends_at_finalize(bizon, pg):
    source = generator("incremental", count=100, page_size=5, sleep=0.1)
    config = bizon.write("p.yml", postgres_pipeline(pg, "inc", source,
                                                     pg.destination(buffer_size=0)))
    process = spawn(bizon, "run", config)
    wait_for(lambda: staged_rows(pg, "out_incremental") >= 10, what="staged rows")
    assert not pg.table_exists("out")  # Nothing is visible before finalize.
    assert process.wait(timeout=120) == 0
    assert pg.ids() == list(range(100))
    assert not pg.table_exists("out_incremental")


# ---------------------------------------------------------------------------------------------
# stream


def test_stream_writes_in_place_and_resumes_from_the_last_cursor(bizon, pg):
    # max_iterations: 1 runs iterations 0..1 per run: 2 pages of 10.
    source = generator("stream", count=75, page_size=10, max_iterations=1)
    config = bizon.write("p.yml", postgres_pipeline(pg, "st", source,
                                                     engine={"runner": {"type": "stream"}}))
    sizes = []
    for _ in range(5):
        bizon.run("run", config, check=0)
        sizes.append(len(pg.ids()))
    assert sizes == [20, 40, 60, 75, 75]
    assert pg.ids() == list(range(75))
    jobs = pg.jobs()
    assert len(jobs) == 1 and jobs[0]["status"] == "running"  # One persistent job.
    assert not pg.table_exists("out_temp") and not pg.table_exists("out_incremental")
    # Rows carry their load, which is what a resumed stream job rolls back by.
    loads = pg.scalar("SELECT count(DISTINCT _bizon_load_id) AS n FROM"
                      f' "{pg.destination_schema}".out')
    assert loads >= 8


# ---------------------------------------------------------------------------------------------
# reset


def test_run_reset_replaces_the_table_then_incremental_appends(bizon, pg):
    source = generator("incremental", count=30, page_size=10)
    config = bizon.write("p.yml", postgres_pipeline(pg, "inc", source,
                                                     pg.destination(buffer_size=0)))
    bizon.run("run", config, check=0)
    drift = f"""INSERT INTO "{pg.destination_schema}".out (_source_record_id) VALUES ('999')"""
    pg.execute(drift)

    result = bizon.run("run", config, "--reset", check=0)
    assert "Stream reset" in result.stderr
    assert pg.ids() == list(range(30))  # Replaced: the drift is gone.
    reset_job = pg.jobs()[-1]
    assert reset_job["sync_mode"] == "incremental" and reset_job["status"] == "succeeded"
    [marker] = pg.resets()
    assert marker["consumed_by_job_id"] == reset_job["id"]

    pg.execute(drift)
    bizon.run("run", config, check=0)  # The reset run is the watermark: an empty window.
    assert pg.ids() == list(range(30)) + [999]


def test_stream_reset_command_is_picked_up_by_the_next_run(bizon, pg):
    source = generator("incremental", count=30, page_size=10)
    config = bizon.write("p.yml", postgres_pipeline(pg, "inc", source))
    bizon.run("run", config, check=0)
    queued = bizon.run("stream", "reset", config, check=0)
    assert "Reset requested for generator - records" in queued.stdout
    assert "only visible to runs using the same file" not in queued.stdout
    assert len(pg.resets()) == 1

    pg.execute(f"""INSERT INTO "{pg.destination_schema}".out (_source_record_id) VALUES ('999')""")
    bizon.run("run", config, check=0)
    assert pg.ids() == list(range(30))
    [marker] = pg.resets()
    assert marker["consumed_by_job_id"] == pg.jobs()[-1]["id"]


# ---------------------------------------------------------------------------------------------
# unnest


def test_unnest_writes_typed_columns(bizon, pg):
    schema = [
        {"name": "id", "type": "INTEGER"},
        {"name": "name", "type": "STRING"},
        {"name": "updated_at", "type": "TIMESTAMP"},
        {"name": "value", "type": "FLOAT64"},
    ]
    destination = pg.destination(
        "typed", unnest=True, record_schemas=[{"destination_id": "typed", "record_schema": schema}])
    config = bizon.write("p.yml", postgres_pipeline(
        pg, "un", generator(count=12, page_size=5, start="2024-03-01T00:00:00Z", interval_ms=1000),
        destination))
    bizon.run("run", config, check=0)
    columns = pg.query("SELECT column_name, data_type FROM information_schema.columns"
                       f" WHERE table_schema = '{pg.destination_schema}' AND table_name = 'typed'"
                       " ORDER BY ordinal_position")
    assert [(c["column_name"], c["data_type"]) for c in columns] == [
        ("id", "bigint"),
        ("name", "text"),
        ("updated_at", "timestamp with time zone"),
        ("value", "double precision"),
    ]
    rows = pg.query(f'SELECT id, name, value, extract(epoch FROM updated_at)::bigint AS epoch'
                    f' FROM "{pg.destination_schema}".typed ORDER BY id')
    start = int(datetime(2024, 3, 1, tzinfo=timezone.utc).timestamp())
    assert rows == [{"id": i, "name": f"record-{i}", "value": (i * 7919) % 1000,
                     "epoch": start + i} for i in range(12)]


def test_unnest_record_that_does_not_match_the_schema_fails_the_run(bizon, pg):
    schema = [{"name": "id", "type": "integer"}, {"name": "name", "type": "string"}]
    destination = pg.destination(
        "typed", unnest=True, record_schemas=[{"destination_id": "typed", "record_schema": schema}])
    config = bizon.write("p.yml", postgres_pipeline(pg, "un", generator(count=5), destination))
    result = bizon.run("run", config, "--result-json", "r.json")
    assert result.returncode != 0
    outcome = read_result(bizon.cwd / "r.json")
    assert outcome["failure_class"] == "destination"
    assert "updated_at" in outcome["error"]
    assert not pg.table_exists("typed")


# ---------------------------------------------------------------------------------------------
# concurrency


def test_a_second_run_of_the_same_pipeline_is_refused_while_another_shares_the_backend(bizon, pg):
    slow = generator("incremental", count=200, page_size=5, sleep=0.05)
    config = bizon.write("p.yml", postgres_pipeline(pg, "busy", slow, pg.destination(buffer_size=0)))
    other = bizon.write("q.yml", postgres_pipeline(
        pg, "other", generator("incremental", count=20, page_size=5), pg.destination("other")))
    process = spawn(bizon, "run", config)
    wait_for(lambda: staged_rows(pg, "out_incremental") >= 5, what="the first run to write")

    started = time.monotonic()
    refused = bizon.run("run", config, "--result-json", "r.json")
    assert time.monotonic() - started < 20  # Fails fast, does not wait for the lock.
    assert refused.returncode != 0
    assert "another run of pipeline 'busy' (generator.records) is in progress" in refused.stderr
    assert read_result(bizon.cwd / "r.json")["failure_class"] == "backend"

    # Another pipeline on the same backend runs while the first is in flight.
    bizon.run("run", other, check=0)
    assert pg.ids("other") == list(range(20))

    assert process.wait(timeout=120) == 0
    assert pg.ids() == list(range(200))
    assert [job["name"] for job in pg.jobs()] == ["busy", "other"]


def test_backend_and_destination_schemas_with_odd_names_are_quoted(bizon, pg):
    pg.backend_schema = f'State "{pg.backend_schema}"'  # Dropped by the fixture, quoted.
    pg.destination_schema = f"Dest {pg.destination_schema}"
    config = bizon.write("p.yml", postgres_pipeline(
        pg, "odd", generator(count=7, page_size=3), pg.destination("Out Table")))
    bizon.run("run", config, check=0)
    assert pg.ids("Out Table") == list(range(7))
    quoted_state = pg.backend_schema.replace('"', '""')
    assert [job["status"] for job in pg.query(
        f'SELECT status FROM "{quoted_state}".stream_jobs')] == ["succeeded"]


def test_connection_errors_name_the_failing_side_and_never_the_password(bizon, pg):
    wrong = {**pg.connection(), "password": "not-the-password-xyz"}
    destination = pg.destination()
    destination["config"].update(wrong)
    config = bizon.write("d.yml", postgres_pipeline(pg, "bad", generator(count=3), destination))
    result = bizon.run("run", config, "--result-json", "r.json")
    assert result.returncode != 0
    outcome = read_result(bizon.cwd / "r.json")
    assert outcome["failure_class"] == "destination"
    assert "password authentication failed" in outcome["error"]
    assert "not-the-password-xyz" not in result.stderr + result.stdout + outcome["error"]

    backend = pg.backend()
    backend["config"]["port"] = 1  # Nothing listens there.
    config = bizon.write("b.yml", yaml.safe_dump({
        "name": "bad", "source": generator(count=3), "destination": pg.destination(),
        "engine": {"backend": backend}}))
    result = bizon.run("run", config, "--result-json", "r.json")
    assert result.returncode != 0
    outcome = read_result(bizon.cwd / "r.json")
    assert outcome["failure_class"] == "backend"
    assert "could not connect to PostgreSQL at 127.0.0.1:1/" in outcome["error"]
