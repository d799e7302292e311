"""The original's bugs (spec engine.md section 13) that we must not reproduce: one test each,
showing that ours behaves right."""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta, timezone

from support.pipelines import dummy, file_destination, generator, pipeline, window_start_for
from support.processes import spawn, wait_for
from support.results import State, ids_in, line_count, parse_sql_time, read_result


def test_source_failure_never_publishes_a_partial_full_refresh(bizon):
    # Bug 1: the original finalised after a producer error, replacing the table with a partial one.
    good = generator(count=100, page_size=10)
    config = bizon.write("p.yml", pipeline("fr", good, file_destination(buffer_size=0)))
    failing = dict(good, fail_at_iteration=4)
    bizon.write("p.yml", pipeline("fr", failing, file_destination(buffer_size=0)))
    bizon.run("run", config, check=1)
    assert not (bizon.cwd / "out.json").exists()  # First run: nothing published at all.

    bizon.write("p.yml", pipeline("fr", good, file_destination(buffer_size=0)))
    bizon.run("run", config, check=0)
    published = (bizon.cwd / "out.json").read_text()
    bizon.write("p.yml", pipeline("fr", failing, file_destination(buffer_size=0)))
    bizon.run("run", config, check=1)
    assert (bizon.cwd / "out.json").read_text() == published  # The previous table is kept whole.
    assert [job["status"] for job in State(bizon.cwd).jobs()] == ["failed", "succeeded", "failed"]


def test_source_failure_never_advances_the_incremental_watermark(bizon):
    # Bug 1, incremental side: marking the failed run succeeded moved the watermark past records
    # it never fetched. Ours keeps the job open; the next run reads the same window.
    def config(count, start, fail_at=None):
        options = dict(count=count, page_size=10, start=start)
        if fail_at is not None:
            options["fail_at_iteration"] = fail_at
        source = generator("incremental", **options)
        return bizon.write("p.yml", pipeline("inc", source, file_destination(buffer_size=0)))

    bizon.run("run", config(50, "2024-01-01T00:00:00Z"), check=0)
    state = State(bizon.cwd)
    [first] = state.jobs()
    # 100 new records, all updated after the first run, all in the next window.
    start = window_start_for(50, parse_sql_time(first["created_at"]))
    # The next window ends when its run starts: the newest record (99.5 ms after the first run
    # started) must be in the past by then, however fast the first run was.
    newest = parse_sql_time(first["created_at"]) + timedelta(milliseconds=100)
    wait_for(lambda: datetime.now(timezone.utc) > newest, what="the newest record's time")
    bizon.run("run", config(150, start, fail_at=5), check=1)
    failed = state.jobs()[-1]
    assert failed["status"] == "running"
    assert line_count(bizon.cwd / "out.json") == 50  # Nothing of the failed run published.

    bizon.run("run", config(150, start), "--result-json", "r.json", check=0)
    assert read_result(bizon.cwd / "r.json")["job_id"] == failed["id"]  # Same job, same window.
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(150))
    assert [job["status"] for job in state.jobs()] == ["succeeded", "succeeded"]


def test_empty_source_still_finalizes_and_succeeds(bizon):
    # Bug 4: with nothing to write the original never finalised nor succeeded.
    for buffer_size in (0, 50):
        bizon.write("out.json", '{"stale": true}\n')
        config = bizon.write(
            "p.yml", pipeline(f"empty{buffer_size}", generator(count=0), file_destination(buffer_size=buffer_size))
        )
        bizon.run("run", config, "--result-json", "r.json", check=0)
        assert (bizon.cwd / "out.json").read_text() == ""  # An empty table was published.
        assert read_result(bizon.cwd / "r.json")["records_written"] == 0
        assert State(bizon.cwd).jobs()[-1]["status"] == "succeeded"


def test_empty_incremental_window_succeeds_and_becomes_the_watermark(bizon):
    config = bizon.write("p.yml", pipeline("inc", generator("incremental", count=20)))
    for _ in range(3):
        bizon.run("run", config, check=0)
    jobs = State(bizon.cwd).jobs()
    assert [job["status"] for job in jobs] == ["succeeded"] * 3
    assert line_count(bizon.cwd / "out.json") == 20
    assert not (bizon.cwd / "out_incremental.json").exists()


def kill_mid_run(bizon, config, staging: str, rows: int = 20):
    process = spawn(bizon, "run", config)
    wait_for(lambda: line_count(bizon.cwd / staging) >= rows, what=f"rows in {staging}")
    process.kill()
    process.wait()
    [job] = [job for job in State(bizon.cwd).jobs() if job["status"] == "running"]
    assert job["owner"].startswith(f"{process.pid}@")  # Left behind, as by an OOM kill.
    return job


def test_killed_full_refresh_is_detected_and_restarted(bizon):
    source = generator(count=200, page_size=5, sleep=0.03)
    config = bizon.write("p.yml", pipeline("fr", source, file_destination(buffer_size=0)))
    killed = kill_mid_run(bizon, config, "out_temp.json")

    result = bizon.run("run", config, check=0)
    assert "which is gone" in result.stderr
    jobs = State(bizon.cwd).jobs()
    assert [(job["id"], job["status"]) for job in jobs][0] == (killed["id"], "cancelled")
    assert jobs[1]["status"] == "succeeded"
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(200))


def test_killed_incremental_is_detected_and_resumed(bizon):
    source = generator("incremental", count=200, page_size=5, sleep=0.03)
    config = bizon.write("p.yml", pipeline("inc", source, file_destination(buffer_size=0)))
    killed = kill_mid_run(bizon, config, "out_incremental.json")

    result = bizon.run("run", config, "--result-json", "r.json", check=0)
    assert "which is gone" in result.stderr
    assert read_result(bizon.cwd / "r.json")["job_id"] == killed["id"]
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(200))  # Once each.


def test_recycled_pid_of_a_killed_run_does_not_block_the_next(bizon):
    # The killed run's pid now belongs to another live process (here: this test). The run lock
    # proves no bizon run holds the pipeline, so the job is still treated as interrupted.
    source = generator("incremental", count=200, page_size=5, sleep=0.03)
    config = bizon.write("p.yml", pipeline("inc", source, file_destination(buffer_size=0)))
    killed = kill_mid_run(bizon, config, "out_incremental.json")
    state = State(bizon.cwd)
    state.execute(
        "UPDATE stream_jobs SET owner = ? WHERE id = ?", f"{os.getpid()}@{socket.gethostname()}", killed["id"]
    )
    bizon.run("run", config, check=0)
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(200))


def test_second_concurrent_run_is_refused(bizon):
    # Bug 9: two runs could both resume or both create the job. Ours refuses the second one.
    source = generator("incremental", count=100, page_size=5, sleep=0.05)
    config = bizon.write("p.yml", pipeline("inc", source, file_destination(buffer_size=0)))
    first = spawn(bizon, "run", config)
    wait_for(lambda: line_count(bizon.cwd / "out_incremental.json") >= 5, what="the first run")

    second = bizon.run("run", config, "--result-json", "r.json", check=1)
    assert "another run of pipeline 'inc' (generator.records) is in progress" in second.stderr
    outcome = read_result(bizon.cwd / "r.json")
    assert outcome["status"] == "failure" and outcome["job_id"] is None
    assert "in progress" in outcome["error"]

    assert first.wait(timeout=120) == 0  # The first run is unaffected.
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(100))
    assert len(State(bizon.cwd).jobs()) == 1


def test_max_iterations_on_incremental_does_not_move_the_watermark(bizon):
    # Bug 5: hitting the cap marked the run succeeded, moving the watermark past unfetched data.
    # max_iterations: 2 runs iterations 0..2 (3 pages), as the original.
    source = generator("incremental", count=100, page_size=10, max_iterations=2)
    config = bizon.write("p.yml", pipeline("inc", source))
    state = State(bizon.cwd)
    bizon.run("run", config, check=0)
    [job] = state.jobs()
    assert (job["status"], job["owner"]) == ("running", "")  # Open, not succeeded.
    assert not (bizon.cwd / "out.json").exists()  # Nothing published yet.
    assert line_count(bizon.cwd / "out_incremental.json") == 30

    for staged in (60, 90):
        bizon.run("run", config, check=0)  # Each run continues where the last one stopped.
        assert line_count(bizon.cwd / "out_incremental.json") == staged
        assert not (bizon.cwd / "out.json").exists()
    bizon.run("run", config, check=0)  # The last page: the source is exhausted, publish.
    assert [job["status"] for job in state.jobs()] == ["succeeded"]
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(100))


def test_incremental_of_a_source_without_incremental_support_is_a_config_error(bizon):
    # The original silently read everything on the first run and crashed on the second.
    source = dummy(sync_mode="incremental", cursor_field="updated_at")
    config = bizon.write("p.yml", pipeline("d", source, {"name": "logger", "config": {}}))
    result = bizon.run("run", config, "--result-json", "r.json", check=1)
    assert "does not support incremental" in result.stderr
    outcome = read_result(bizon.cwd / "r.json")
    assert outcome["failure_class"] == "config"
    assert "creatures" in outcome["error"] and "dummy" in outcome["error"]
    assert outcome["job_id"] is None
