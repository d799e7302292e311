"""Stream resets: `bizon run --reset`, `bizon stream reset`, deprecated `source.reset`, crash safety,
and force_ignore_checkpoint.

To tell "replaced" from "appended", each test makes the published file drift (a line the source
never produced): a reset rebuilds the file without it, an incremental run appends after it.
"""

from __future__ import annotations

import json

from support.pipelines import file_destination, generator, pipeline
from support.processes import spawn, wait_for
from support.results import State, ids_in, line_count

DRIFT = json.dumps({"source_record_id": "drift"})


def incremental_config(bizon, stream="records", name="inc", **options):
    source = generator("incremental", stream=stream, **{"count": 30, "page_size": 10, **options})
    destination = file_destination(f"out_{stream}", buffer_size=0)
    return bizon.write(f"{stream}.yml", pipeline(name, source, destination))


def drift(bizon, stream="records"):
    with (bizon.cwd / f"out_{stream}.json").open("a") as handle:
        handle.write(DRIFT + "\n")


def rows_of(bizon, stream="records"):
    return [row["source_record_id"] for row in bizon.read_ndjson(f"out_{stream}.json")]


def test_run_reset_replaces_then_incremental_resumes(bizon):
    config = incremental_config(bizon)
    bizon.run("run", config, check=0)
    drift(bizon)

    result = bizon.run("run", config, "--reset", check=0)
    assert "Stream reset" in result.stderr
    assert rows_of(bizon) == [str(i) for i in range(30)]  # Replaced: the drift is gone.
    state = State(bizon.cwd)
    reset_job = state.jobs()[-1]
    assert reset_job["sync_mode"] == "incremental"  # The job row stays incremental.
    assert reset_job["status"] == "succeeded"
    assert json.loads(reset_job["incremental_state"]) == {"max_id": 29}  # A reset restarts state.
    [marker] = state.resets()
    assert marker["consumed_by_job_id"] == reset_job["id"]

    # The reset run is the new watermark: the next run appends its (empty) window.
    drift(bizon)
    bizon.run("run", config, check=0)
    assert rows_of(bizon) == [str(i) for i in range(30)] + ["drift"]
    assert [job["status"] for job in state.jobs()] == ["succeeded"] * 3


def test_stream_reset_is_queued_for_the_next_run(bizon):
    config = incremental_config(bizon)
    bizon.run("run", config, check=0)

    queued = bizon.run("stream", "reset", config, check=0)
    assert "Reset requested for generator - records" in queued.stdout
    assert "only visible to runs using the same file" in queued.stdout
    again = bizon.run("stream", "reset", config, check=0)
    assert "already pending" in again.stdout
    assert len(State(bizon.cwd).resets()) == 1

    drift(bizon)
    bizon.run("run", config, check=0)  # The scheduler's unchanged command line.
    assert rows_of(bizon) == [str(i) for i in range(30)]
    [marker] = State(bizon.cwd).resets()
    assert marker["consumed_by_job_id"] == State(bizon.cwd).jobs()[-1]["id"]

    drift(bizon)
    bizon.run("run", config, check=0)  # Consumed: the following run is a plain incremental.
    assert rows_of(bizon)[-1] == "drift"


def test_stream_reset_cancel(bizon):
    config = incremental_config(bizon)
    bizon.run("run", config, check=0)
    none = bizon.run("stream", "reset", config, "--cancel", check=0)
    assert "No pending reset request for generator - records." in none.stdout

    bizon.run("stream", "reset", config, check=0)
    cancelled = bizon.run("stream", "reset", config, "--cancel", check=0)
    assert "Cancelled 1 pending reset request(s) for generator - records." in cancelled.stdout
    [marker] = State(bizon.cwd).resets()
    assert marker["consumed_at"] is not None and marker["consumed_by_job_id"] is None

    drift(bizon)
    bizon.run("run", config, check=0)
    assert rows_of(bizon)[-1] == "drift"  # Appended: no reset happened.


def test_stream_reset_warns_when_the_stream_never_ran(bizon):
    config = incremental_config(bizon)
    result = bizon.run("stream", "reset", config, check=0)
    assert "no previous successful run found for generator - records" in result.stdout
    assert len(State(bizon.cwd).resets()) == 1  # Still created.


def test_stream_reset_of_another_stream_leaves_this_one_alone(bizon):
    records = incremental_config(bizon, "records")
    events = incremental_config(bizon, "events")
    bizon.run("run", records, check=0)
    bizon.run("run", events, check=0)

    # One config templated across streams: pick the stream on the command line.
    result = bizon.run("stream", "reset", records, "--stream", "events", check=0)
    assert "Reset requested for generator - events" in result.stdout

    drift(bizon, "records")
    drift(bizon, "events")
    bizon.run("run", records, check=0)
    assert rows_of(bizon, "records")[-1] == "drift"  # Not reset.
    bizon.run("run", events, check=0)
    assert rows_of(bizon, "events") == [str(i) for i in range(30)]  # Reset.


def test_deprecated_source_reset_warns_and_resets_every_run(bizon):
    config = incremental_config(bizon, reset=True)
    first = bizon.run("run", config, check=0)
    assert "deprecated" in first.stderr and "source.reset" in first.stderr
    for _ in range(2):
        drift(bizon)
        bizon.run("run", config, check=0)
        assert rows_of(bizon) == [str(i) for i in range(30)]


def test_run_reset_flag_is_not_reported_as_deprecated(bizon):
    config = incremental_config(bizon)
    result = bizon.run("run", config, "--reset", check=0)
    assert "deprecated" not in result.stderr


def test_reset_is_ignored_for_full_refresh_and_refused_by_stream_reset(bizon):
    source = generator(count=10)
    config = bizon.write("p.yml", pipeline("fr", source))
    result = bizon.run("run", config, "--reset", check=0)
    assert "no incremental state to reset" in result.stderr
    assert State(bizon.cwd).resets() == []

    refused = bizon.run("stream", "reset", config, check=1)
    assert "only incremental streams can be reset" in refused.stderr.lower()
    assert "full_refresh" in refused.stderr


def test_crashed_reset_is_retried_as_a_reset(bizon):
    count = 200
    slow = dict(count=count, page_size=5, sleep=0.03)
    config = incremental_config(bizon, **slow)
    bizon.run("run", config, check=0)
    drift(bizon)
    published = (bizon.cwd / "out_records.json").read_text()

    process = spawn(bizon, "run", config, "--reset")
    staging = bizon.cwd / "out_records_temp.json"  # A reset stages like a full refresh.
    wait_for(lambda: line_count(staging) >= 40, what="the reset to stage rows")
    process.kill()
    process.wait()
    state = State(bizon.cwd)
    crashed = state.jobs()[-1]
    assert crashed["status"] == "running"
    assert (bizon.cwd / "out_records.json").read_text() == published  # Nothing published.

    # Rerun without --reset: the reset bound to the crashed job is resumed as a reset.
    result = bizon.run("run", config, check=0)
    assert "Resuming job" in result.stderr
    assert state.jobs()[-1]["id"] == crashed["id"]
    assert rows_of(bizon) == [str(i) for i in range(count)]  # Replaced, not appended.
    assert state.job(crashed["id"])["status"] == "succeeded"


def test_force_ignore_checkpoint_restarts_the_running_job_but_keeps_the_watermark(bizon):
    count = 200
    config = incremental_config(bizon, count=count, page_size=5, sleep=0.03)
    process = spawn(bizon, "run", config)
    wait_for(lambda: line_count(bizon.cwd / "out_records_incremental.json") >= 40, what="staged rows")
    process.kill()
    process.wait()
    state = State(bizon.cwd)
    interrupted = state.jobs()[-1]

    forced = incremental_config(bizon, count=count, page_size=5, force_ignore_checkpoint=True)
    result = bizon.run("run", forced, check=0)
    assert "a fresh start was requested" in result.stderr
    jobs = state.jobs()
    assert [job["status"] for job in jobs] == ["cancelled", "succeeded"]
    assert jobs[0]["id"] == interrupted["id"]
    # A fresh job from iteration 0: the abandoned job's staged rows are not published twice.
    assert ids_in(bizon.read_ndjson("out_records.json")) == list(range(count))

    # It does not reset the watermark: the next forced run reads the (empty) window.
    drift(bizon)
    bizon.run("run", forced, check=0)
    assert rows_of(bizon)[-1] == "drift"
    assert line_count(bizon.cwd / "out_records.json") == count + 1
