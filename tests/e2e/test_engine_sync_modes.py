"""Each sync mode end to end: generator source → file destination, state read from the backend."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

from support.pipelines import dummy, file_destination, generator, pipeline, runner, window_start_for
from support.processes import spawn, wait_for
from support.results import (
    State,
    ids_in,
    line_count,
    parse_iso,
    parse_sql_time,
    read_result,
    source_data,
)

# ---------------------------------------------------------------------------------------------
# full_refresh


def test_full_refresh_new_job_every_run_and_second_run_replaces(bizon):
    config = bizon.write("p.yml", pipeline("fr", generator(count=25, page_size=10)))
    bizon.run("run", config, check=0)
    first = bizon.read_ndjson("out.json")
    bizon.run("run", config, check=0)
    second = bizon.read_ndjson("out.json")

    assert ids_in(first) == list(range(25))
    assert ids_in(second) == list(range(25))  # Replaced, not appended.
    assert {row["bizon_id"] for row in first}.isdisjoint(row["bizon_id"] for row in second)
    jobs = State(bizon.cwd).jobs()
    assert [job["status"] for job in jobs] == ["succeeded", "succeeded"]
    assert [job["sync_mode"] for job in jobs] == ["full_refresh", "full_refresh"]
    assert jobs[0]["id"] != jobs[1]["id"]
    assert not (bizon.cwd / "out_temp.json").exists()


def test_full_refresh_stages_into_temp_then_renames(bizon):
    count = 60
    config = bizon.write(
        "p.yml",
        pipeline("fr", generator(count=count, page_size=5, sleep=0.05), file_destination(buffer_size=0)),
    )
    bizon.run("run", config, check=0)
    published = (bizon.cwd / "out.json").read_text()

    process = spawn(bizon, "run", config)
    staging = bizon.cwd / "out_temp.json"
    # While the second run is staging, readers still see the first run's complete file.
    wait_for(lambda: line_count(staging) >= 10, what="rows in out_temp.json")
    assert (bizon.cwd / "out.json").read_text() == published
    assert process.wait(timeout=120) == 0
    assert not staging.exists()
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(count))
    assert (bizon.cwd / "out.json").read_text() != published  # The new run's rows.


def test_full_refresh_interrupted_job_is_never_resumed(bizon):
    config = bizon.write(
        "p.yml",
        pipeline("fr", generator(count=60, page_size=5, sleep=0.05), file_destination(buffer_size=0)),
    )
    process = spawn(bizon, "run", config)
    wait_for(lambda: line_count(bizon.cwd / "out_temp.json") >= 10, what="staged rows")
    process.kill()
    process.wait()
    interrupted = State(bizon.cwd).jobs()[0]
    assert interrupted["status"] == "running"

    result = bizon.run("run", config, check=0)
    assert "it is a full refresh" in result.stderr
    jobs = State(bizon.cwd).jobs()
    assert [job["status"] for job in jobs] == ["cancelled", "succeeded"]
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(60))


# ---------------------------------------------------------------------------------------------
# incremental


def test_incremental_first_run_reads_everything_then_windows_tile(bizon):
    # Record i has updated_at = start + i * 50 ms, so records keep "arriving" for 10 s after
    # start; each later run must read exactly those in (last_run, run_started_at].
    interval = timedelta(milliseconds=50)
    count = 200
    start = datetime.now(timezone.utc)
    source = generator(
        "incremental", count=count, page_size=7, start=window_start_for(0, start, 50), interval_ms=50
    )
    config = bizon.write("p.yml", pipeline("inc", source, file_destination(buffer_size=0)))
    state = State(bizon.cwd)

    bizon.run("run", config, check=0)
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(count))  # First run: get().
    assert not (bizon.cwd / "out_incremental.json").exists()

    for _ in range(2):
        time.sleep(0.5)  # Let some records "arrive".
        before = line_count(bizon.cwd / "out.json")
        bizon.run("run", config, check=0)
        last_run, run_started = (parse_sql_time(job["created_at"]) for job in state.jobs()[-2:])
        appended = bizon.read_ndjson("out.json")[before:]
        expected = [i for i in range(count) if last_run < start_of(source) + i * interval <= run_started]
        assert expected, "the run window should hold some records"
        assert ids_in(appended) == expected
        for record in source_data(appended):
            assert last_run < parse_iso(record["updated_at"]) <= run_started
        assert not (bizon.cwd / "out_incremental.json").exists()

    jobs = state.jobs()
    assert [job["status"] for job in jobs] == ["succeeded"] * 3
    assert all(job["sync_mode"] == "incremental" for job in jobs)
    # The next_state of each run's last page, persisted on success.
    assert json.loads(jobs[0]["incremental_state"]) == {"max_id": count - 1}


def start_of(source: dict) -> datetime:
    return parse_iso(source["start"])


def test_incremental_stages_into_incremental_file_then_appends(bizon):
    source = generator("incremental", count=40, page_size=5, sleep=0.05)
    config = bizon.write("p.yml", pipeline("inc", source, file_destination(buffer_size=0)))
    bizon.run("run", config, check=0)
    published = (bizon.cwd / "out.json").read_text()

    # A second run over new records (a larger count whose extra records are in the window).
    last_run = parse_sql_time(State(bizon.cwd).jobs()[0]["created_at"])
    source.update(count=80, start=window_start_for(40, last_run))
    config = bizon.write("p.yml", pipeline("inc", source, file_destination(buffer_size=0)))
    process = spawn(bizon, "run", config)
    staging = bizon.cwd / "out_incremental.json"
    wait_for(lambda: line_count(staging) >= 10, what="rows in out_incremental.json")
    assert (bizon.cwd / "out.json").read_text() == published  # Nothing appended mid-run.
    assert process.wait(timeout=120) == 0
    assert not staging.exists()
    text = (bizon.cwd / "out.json").read_text()
    assert text.startswith(published)
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(80))


def test_incremental_state_kept_when_a_run_emits_none(bizon):
    # An empty window emits no next_state: the previous one is carried forward.
    config = bizon.write("p.yml", pipeline("inc", generator("incremental", count=10)))
    bizon.run("run", config, check=0)
    bizon.run("run", config, check=0)
    jobs = State(bizon.cwd).jobs()
    assert [json.loads(job["incremental_state"]) for job in jobs] == [{"max_id": 9}] * 2
    assert line_count(bizon.cwd / "out.json") == 10


# ---------------------------------------------------------------------------------------------
# stream


def test_stream_runner_one_persistent_job_written_directly(bizon):
    source = generator("stream", count=50, page_size=7)
    config = bizon.write("p.yml", pipeline("st", source, engine=runner("stream")))
    bizon.run("run", config, "--result-json", "r.json", check=0)
    outcome = read_result(bizon.cwd / "r.json")
    assert (outcome["stream"], outcome["producer"], outcome["consumer"]) == ("success", None, None)
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(50))
    # Written directly: no staging file (the job's manifest sits beside the main file).
    assert sorted(path.name for path in bizon.cwd.glob("out*.json")) == ["out.json"]

    second = bizon.run("run", config, "--result-json", "r.json", check=0)
    assert "Resuming job" in second.stderr
    jobs = State(bizon.cwd).jobs()
    assert len(jobs) == 1
    assert jobs[0]["status"] == "running"  # A stream job never "succeeds".
    assert jobs[0]["owner"] == ""  # But nobody holds it between runs.
    assert jobs[0]["sync_mode"] == "stream"
    assert read_result(bizon.cwd / "r.json")["job_id"] == jobs[0]["id"]
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(50))  # Caught up: nothing new.


def test_stream_resumes_from_the_last_committed_cursor(bizon):
    # max_iterations: 1 runs iterations 0..1 per run (as the original): 2 pages of 10.
    source = generator("stream", count=75, page_size=10, max_iterations=1)
    config = bizon.write("p.yml", pipeline("st", source, engine=runner("stream")))
    sizes = []
    for _ in range(5):
        bizon.run("run", config, check=0)
        sizes.append(line_count(bizon.cwd / "out.json"))
    assert sizes == [20, 40, 60, 75, 75]
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(75))
    assert len(State(bizon.cwd).jobs()) == 1


def test_stream_runner_selected_by_cli_flag(bizon):
    config = bizon.write("p.yml", pipeline("st", generator("stream", count=30, page_size=10)))
    bizon.run("run", config, "--runner", "stream", "--result-json", "r.json", check=0)
    assert read_result(bizon.cwd / "r.json")["stream"] == "success"
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(30))


def test_stream_mode_on_thread_runner_keeps_the_job_open(bizon):
    config = bizon.write("p.yml", pipeline("st", generator("stream", count=30, page_size=10)))
    bizon.run("run", config, "--result-json", "r.json", check=0)
    outcome = read_result(bizon.cwd / "r.json")
    assert (outcome["producer"], outcome["consumer"]) == ("success", "success")
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(30))
    bizon.run("run", config, check=0)
    jobs = State(bizon.cwd).jobs()
    assert len(jobs) == 1 and jobs[0]["status"] == "running"
    assert line_count(bizon.cwd / "out.json") == 30


def test_dummy_stream_routes_page_two_to_routed_and_the_rest_to_the_stream(bizon):
    # The dummy's stream mode routes records by their own destination id (spec: page 2 to
    # "routed", pages 1 and 3 to the stream), so the file destination writes one file per id.
    config = bizon.write("p.yml", pipeline("dummy-stream", dummy("creatures", sync_mode="stream"),
                                           engine=runner("stream")))
    bizon.run("run", config, "--result-json", "r.json", check=0)
    assert read_result(bizon.cwd / "r.json")["stream"] == "success"
    names = sorted(path.name for path in bizon.cwd.glob("*.json") if path.name != "r.json")
    assert names == ["creatures.json", "routed.json"]
    assert [json.loads(row["source_data"])["id"] for row in bizon.read_ndjson("creatures.json")] == [
        9898, 88787, 56565]
    assert [json.loads(row["source_data"])["id"] for row in bizon.read_ndjson("routed.json")] == [
        98, 3333]
