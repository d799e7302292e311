"""Failure classes in --result-json, the status text on stderr, exit codes, and what a failed run
leaves in the backend."""

from __future__ import annotations

import re

import pytest

from support.pipelines import file_destination, generator, pipeline, runner
from support.processes import spawn, wait_for
from support.results import STATUS_TEXT, State, ids_in, read_result

RESULT_KEYS = [
    "status",
    "failure_class",
    "job_id",
    "producer",
    "consumer",
    "stream",
    "records_written",
    "started_at",
    "duration_s",
    "error",
]
STARTED_AT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
JOB_ID = re.compile(r"^[0-9a-f]{32}$")


def check_shape(outcome: dict) -> None:
    assert list(outcome) == RESULT_KEYS
    assert STARTED_AT.match(outcome["started_at"]), outcome["started_at"]
    assert isinstance(outcome["duration_s"], float) and outcome["duration_s"] >= 0
    assert isinstance(outcome["records_written"], int)


def test_success_result(bizon):
    config = bizon.write("p.yml", pipeline("ok", generator(count=42, page_size=10)))
    result = bizon.run("run", config, "--result-json", "r.json", check=0)
    assert "Pipeline finished successfully." in result.stdout
    outcome = read_result(bizon.cwd / "r.json")
    check_shape(outcome)
    assert outcome["status"] == "success"
    assert outcome["failure_class"] is None and outcome["error"] is None
    assert JOB_ID.match(outcome["job_id"])
    assert outcome["records_written"] == 42


def test_source_failure(bizon):
    source = generator(count=100, page_size=10, fail_at_iteration=3)
    config = bizon.write("p.yml", pipeline("src", source, file_destination(buffer_size=0)))
    result = bizon.run("run", config, "--result-json", "r.json", check=1)

    assert STATUS_TEXT.format("source_error", "source_error") in result.stderr.splitlines()
    outcome = read_result(bizon.cwd / "r.json")
    check_shape(outcome)
    assert outcome["status"] == "failure"
    assert outcome["failure_class"] == "source"
    assert (outcome["producer"], outcome["consumer"], outcome["stream"]) == (
        "source_error",
        "source_error",
        None,
    )
    assert outcome["job_id"] == State(bizon.cwd).jobs()[0]["id"]
    assert outcome["records_written"] == 30  # Iterations 0-2 were written (to staging).
    assert outcome["error"].startswith("SourceError: ")
    assert "fail at iteration 3" in outcome["error"]


def test_destination_failure(bizon):
    # A path under a regular file cannot be created, whoever runs the test (root included).
    bizon.write("blocker", "not a directory\n")
    source = generator(count=100, page_size=10)
    config = bizon.write("p.yml", pipeline("dst", source, file_destination("blocker/out")))
    result = bizon.run("run", config, "--result-json", "r.json", check=1)
    assert "Error: Pipeline finished with status Failure (Producer: " in result.stderr
    outcome = read_result(bizon.cwd / "r.json")
    check_shape(outcome)
    assert outcome["failure_class"] == "destination"
    assert outcome["consumer"] == "destination_error"
    assert outcome["producer"] in ("killed_by_runner", "success")
    assert outcome["error"].startswith("DestinationError: ")
    assert "blocker/out" in outcome["error"]
    assert State(bizon.cwd).jobs()[0]["status"] == "failed"


def test_backend_failure(bizon):
    bizon.write("blocker", "not a directory\n")
    backend = {"backend": {"type": "sqlite", "config": {"database": "blocker/state", "schema": "x"}}}
    config = bizon.write("p.yml", pipeline("be", generator(count=10), engine=backend))
    result = bizon.run("run", config, "--result-json", "r.json", check=1)
    assert "Error: Pipeline finished with status Failure" in result.stderr
    outcome = read_result(bizon.cwd / "r.json")
    check_shape(outcome)
    assert outcome["failure_class"] == "backend"
    assert outcome["job_id"] is None
    assert outcome["error"].startswith("BackendError: ")
    assert "blocker/state" in outcome["error"]


@pytest.mark.parametrize(
    "text, mention",
    [
        ("name: [unclosed\n", "YAML"),
        ("name: x\nsurprise: 1\nsource: {name: generator, stream: records}\n"
         "destination: {name: logger, config: {}}\n", "surprise"),
        ("name: x\nsource: {name: generator, stream: nope}\n"
         "destination: {name: logger, config: {}}\n", "source.stream"),
    ],
)
def test_config_failure(bizon, text, mention):
    config = bizon.write("bad.yml", text)
    result = bizon.run("run", config, "--result-json", "r.json", check=1)
    assert mention in result.stderr
    outcome = read_result(bizon.cwd / "r.json")
    check_shape(outcome)
    assert outcome["status"] == "failure"
    assert outcome["failure_class"] == "config"
    assert outcome["job_id"] is None
    assert outcome["error"].startswith("ConfigError: ")
    assert not (bizon.cwd / "bizon.sqlite3").exists()  # Nothing ran.


def test_result_reads_running_while_the_run_is_in_progress(bizon):
    source = generator(count=100, page_size=5, sleep=0.05)
    config = bizon.write("p.yml", pipeline("slow", source))
    result_path = bizon.cwd / "r.json"
    result_path.write_text('{"status": "success"}')  # A previous run's outcome.
    process = spawn(bizon, "run", config, "--result-json", result_path)
    running = wait_for(
        lambda: result_path.exists() and read_result(result_path)["status"] == "running",
        what="status running",
    )
    assert running
    assert STARTED_AT.match(read_result(result_path)["started_at"])
    process.kill()  # Killed from outside: "running" stays, not the previous outcome.
    process.wait()
    assert read_result(result_path)["status"] == "running"


def test_stream_runner_failure(bizon):
    source = generator("stream", count=100, page_size=10, fail_at_iteration=2)
    config = bizon.write("p.yml", pipeline("st", source, engine=runner("stream")))
    result = bizon.run("run", config, "--result-json", "r.json", check=1)
    assert "Error: Pipeline finished with status Failure (Stream: source_error)" in result.stderr
    outcome = read_result(bizon.cwd / "r.json")
    check_shape(outcome)
    assert (outcome["producer"], outcome["consumer"], outcome["stream"]) == (None, None, "source_error")
    assert outcome["failure_class"] == "source"
    assert outcome["records_written"] == 20
    [job] = State(bizon.cwd).jobs()
    assert (job["status"], job["owner"]) == ("running", "")  # Resumable.

    # Once the source recovers, the next run resumes after the committed pages.
    source.pop("fail_at_iteration")
    bizon.write("p.yml", pipeline("st", source, engine=runner("stream")))
    bizon.run("run", config, check=0)
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(100))


def test_failed_full_refresh_is_marked_failed(bizon):
    source = generator(count=100, page_size=10, fail_at_iteration=3)
    config = bizon.write("p.yml", pipeline("fr", source))
    bizon.run("run", config, check=1)
    [job] = State(bizon.cwd).jobs()
    assert job["status"] == "failed"
    assert "fail at iteration 3" in job["error_message"]


def test_failed_incremental_stays_resumable(bizon):
    source = generator("incremental", count=100, page_size=10, fail_at_iteration=3)
    config = bizon.write("p.yml", pipeline("inc", source, file_destination(buffer_size=0)))
    bizon.run("run", config, "--result-json", "r.json", check=1)
    [job] = State(bizon.cwd).jobs()
    assert (job["status"], job["owner"]) == ("running", "")
    assert "fail at iteration 3" in job["error_message"]

    source.pop("fail_at_iteration")
    bizon.write("p.yml", pipeline("inc", source, file_destination(buffer_size=0)))
    result = bizon.run("run", config, "--result-json", "r.json", check=0)
    assert f"Resuming job {job['id']}" in result.stderr
    assert read_result(bizon.cwd / "r.json")["job_id"] == job["id"]
    assert ids_in(bizon.read_ndjson("out.json")) == list(range(100))


@pytest.mark.parametrize(
    "args",
    [
        ("run", "missing.yml"),
        ("run", "p.yml", "--runner", "fibre"),
        ("run", "p.yml", "--log-level", "LOUD"),
        ("run",),
        ("run", "p.yml", "--no-such-flag"),
    ],
)
def test_cli_usage_errors_exit_2(bizon, args):
    bizon.write("p.yml", pipeline("ok", generator(count=1)))
    bizon.run(*args, check=2)
    assert not (bizon.cwd / "bizon.sqlite3").exists()


def test_a_result_file_that_cannot_be_written_stops_the_run_before_it_starts(bizon):
    config = bizon.write("p.yml", pipeline("unwritable", generator("full_refresh", count=5)))
    result = bizon.run("run", config, "--result-json", "missing-dir/r.json")
    assert result.returncode == 1
    assert "Error: --result-json: cannot write the result file missing-dir/r.json.tmp" in (
        result.stderr), result.stderr
    assert "Pipeline finished successfully" not in result.stdout
    assert not (bizon.cwd / "missing-dir").exists()
    assert not list(bizon.cwd.glob("*.json"))  # Nothing was loaded.
    assert State(bizon.cwd).jobs() == []  # Nothing ran.
