"""Runners: thread (default), process (the producer in a forked process, through a pipe), stream,
and `--runner` overriding `engine.runner.type`."""

from __future__ import annotations

import time

import pytest

from support.pipelines import file_destination, generator, pipeline, runner
from support.processes import alive, children_of, spawn, wait_for
from support.results import STATUS_TEXT, State, ids_in, line_count, read_result


def sides(outcome: dict) -> tuple:
    return outcome["producer"], outcome["consumer"], outcome["stream"]


def test_thread_runner_is_the_default(bizon):
    config = bizon.write("p.yml", pipeline("t", generator(count=2500, page_size=100)))
    bizon.run("run", config, "--result-json", "r.json", check=0)
    assert sides(read_result(bizon.cwd / "r.json")) == ("success", "success", None)
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(2500))


@pytest.mark.parametrize("mode", ["full_refresh", "incremental"])
def test_process_runner_produces_in_a_forked_process(bizon, mode):
    count = 300
    source = generator(mode, count=count, page_size=10, sleep=0.02)
    config = bizon.write(
        "p.yml", pipeline("p", source, file_destination(buffer_size=0), engine=runner("process"))
    )
    process = spawn(bizon, "run", config, "--result-json", "r.json")
    # While it runs, the bizon process has a child: the producer.
    producers = wait_for(lambda: children_of(process.pid), what="the producer process")
    assert process.wait(timeout=120) == 0
    assert not any(alive(pid) for pid in producers)
    assert sides(read_result(bizon.cwd / "r.json")) == ("success", "success", None)
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(count))
    # The producer wrote its source cursors through its own backend connection.
    job = State(bizon.cwd).jobs()[0]
    assert job["status"] == "succeeded"


def test_process_runner_reports_the_producers_failure(bizon):
    source = generator(count=500, page_size=10, fail_at_iteration=7)
    config = bizon.write("p.yml", pipeline("p", source, engine=runner("process")))
    result = bizon.run("run", config, "--result-json", "r.json", check=1)
    assert STATUS_TEXT.format("source_error", "source_error") in result.stderr
    outcome = read_result(bizon.cwd / "r.json")
    assert outcome["failure_class"] == "source"
    assert "fail at iteration 7" in outcome["error"]
    assert not (bizon.cwd / "out.json").exists()


def test_process_runner_reports_a_consumer_failure(bizon):
    bizon.write("blocker", "a file where the destination wants a directory\n")
    source = generator(count=500, page_size=10)
    config = bizon.write(
        "p.yml", pipeline("p", source, file_destination("blocker/out"), engine=runner("process"))
    )
    bizon.run("run", config, "--result-json", "r.json", check=1)
    outcome = read_result(bizon.cwd / "r.json")
    assert outcome["failure_class"] == "destination"
    assert outcome["consumer"] == "destination_error"


def test_killing_the_process_runner_also_stops_its_producer(bizon):
    # An orphaned producer would keep fetching and keep the run lock it inherited, so the rerun
    # below would be refused as a concurrent run.
    source = generator(count=100, page_size=5, sleep=5)
    config = bizon.write("p.yml", pipeline("p", source, engine=runner("process")))
    process = spawn(bizon, "run", config)
    [producer] = wait_for(lambda: children_of(process.pid), what="the producer process")
    process.kill()
    process.wait()
    wait_for(lambda: not alive(producer), timeout=3, what="the orphaned producer to die")

    fast = generator(count=100, page_size=5)
    bizon.write("p.yml", pipeline("p", fast, engine=runner("process")))
    bizon.run("run", config, check=0)
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(100))


@pytest.mark.parametrize(
    "configured, flag, expected",
    [
        ("thread", "stream", (None, None, "success")),
        ("stream", "thread", ("success", "success", None)),
        ("process", "thread", ("success", "success", None)),
        ("thread", "process", ("success", "success", None)),
    ],
)
def test_runner_flag_overrides_the_config(bizon, configured, flag, expected):
    source = generator("stream", count=40, page_size=10, sleep=0.01)
    config = bizon.write("p.yml", pipeline("r", source, engine=runner(configured)))
    result_path = bizon.cwd / "r.json"
    process = spawn(bizon, "run", config, "--runner", flag, "--result-json", result_path)
    forked = False
    while process.poll() is None:
        # Only while the run is in progress: under ASan, LeakSanitizer's tracer shows up as a
        # child of every process once it has finished and is exiting.
        if children_of(process.pid) and read_result(result_path)["status"] == "running":
            forked = True
        time.sleep(0.01)
    assert process.wait() == 0
    assert sides(read_result(bizon.cwd / "r.json")) == expected
    assert forked == (flag == "process")
    assert line_count(bizon.cwd / "out.json") == 40


def test_runner_from_config_when_no_flag(bizon):
    source = generator("stream", count=40, page_size=10)
    config = bizon.write("p.yml", pipeline("r", source, engine=runner("stream")))
    bizon.run("run", config, "--result-json", "r.json", check=0)
    assert sides(read_result(bizon.cwd / "r.json")) == (None, None, "success")


@pytest.mark.parametrize("mode", ["full_refresh", "incremental"])
def test_stream_runner_on_a_staged_sync_mode_runs_as_the_original_did(bizon, mode):
    """engine.runner.type: stream serves sync_mode stream. A full refresh or an incremental run
    stages, then publishes, which the stream runner never does; the original ran every pipeline
    under the thread runner, and so does this one, with a warning. Both runs end and publish: the
    second full refresh replaces the first (40 lines, not 80), the second incremental run finds
    nothing newer than the first one's watermark."""
    source = generator(mode, count=40, page_size=10)
    config = bizon.write("p.yml", pipeline("r", source, engine=runner("stream")))
    for _ in range(2):
        result = bizon.run("run", config, "--result-json", "r.json", check=0)
        assert f"this {mode} run uses the thread runner" in result.stderr
        assert sides(read_result(bizon.cwd / "r.json")) == ("success", "success", None)
        assert line_count(bizon.cwd / "out.json") == 40
    assert not (bizon.cwd / "out_temp.json").exists()
