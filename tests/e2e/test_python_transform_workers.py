"""Transforms in the process runner's worker processes, and the Python time limit.

The process runner hands each batch to one of `engine.runner.config.max_workers` worker
processes in turn and takes the results back in arrival order, so the output keeps the source's
order exactly. A failing or dying worker fails the run with failure_class transform and nothing
is published.
"""

from __future__ import annotations

import json

import pytest

from support.paths import PYTHON_DATA
from support.pipelines import file_destination, generator, pipeline
from support.python import needs_custom_source, needs_transforms
from support.results import read_result

COUNT = 6000
PAGE = 250  # 24 batches: every worker gets several.


def generator_pipeline(name: str, transforms: list[dict], runner: str = "process", workers: int = 3,
                       python_timeout: float | None = None, count: int = COUNT) -> str:
    runner_config: dict = {"max_workers": workers}
    if python_timeout is not None:
        runner_config["python_timeout"] = python_timeout
    return pipeline(name, generator(count=count, page_size=PAGE), file_destination(buffer_size=0),
                    transforms=transforms,
                    engine={"runner": {"type": runner, "config": runner_config}})


@needs_transforms
def test_workers_transform_every_record_and_keep_source_order(bizon):
    transforms = [
        {"label": "tag", "python": "import os\ndata['pid'] = os.getpid()"},
        {"label": "double", "python": "data['twice'] = data['id'] * 2"},
    ]
    config = bizon.write("config.yml", generator_pipeline("workers", transforms, workers=3))
    result = bizon.run("run", config, check=0)
    assert "worker processes" in result.stderr

    payloads = [json.loads(row["source_data"]) for row in bizon.read_ndjson("out.json")]
    assert [p["id"] for p in payloads] == list(range(COUNT))
    assert all(p["twice"] == 2 * p["id"] for p in payloads)
    # Round robin over 24 batches: exactly three worker processes did the work, one batch each
    # in turn, and each batch stayed whole within one worker.
    pids = [p["pid"] for p in payloads]
    assert len(set(pids)) == 3
    batch_pids = [pids[i] for i in range(0, COUNT, PAGE)]
    assert all(pids[i:i + PAGE] == [pids[i]] * PAGE for i in range(0, COUNT, PAGE))
    assert batch_pids[:3] == batch_pids[3:6]


@needs_transforms
def test_process_runner_output_equals_thread_runner_output(bizon):
    transforms = [{"label": "shape", "python": "data = {'k': data['id'] % 7, 'name': data['name'].upper()}"}]
    bizon.run("run", bizon.write("thread.yml", generator_pipeline("same", transforms, "thread")), check=0)
    threaded = [row["source_data"] for row in bizon.read_ndjson("out.json")]
    bizon.run("run", bizon.write("process.yml", generator_pipeline("same2", transforms)), check=0)
    processed = [row["source_data"] for row in bizon.read_ndjson("out.json")]
    assert len(threaded) == COUNT
    assert processed == threaded


@needs_transforms
def test_raising_transform_in_a_worker_fails_the_run_and_publishes_nothing(bizon):
    transforms = [{"label": "boom", "python": "if data['id'] == 4321:\n    raise KeyError('no such key')"}]
    config = bizon.write("config.yml", generator_pipeline("boom", transforms))
    result = bizon.run("run", config, "--result-json", "result.json")

    assert result.returncode != 0
    assert "Error applying transformation 'boom' to record '4321'" in result.stderr
    assert "KeyError" in result.stderr
    assert "Traceback (most recent call last):" in result.stderr
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "transform"
    assert outcome["consumer"] == "transform_error"
    assert not (bizon.cwd / "out.json").exists() or bizon.read_ndjson("out.json") == []


@needs_transforms
def test_a_worker_killed_mid_run_fails_the_run_cleanly(bizon):
    transforms = [{"label": "die", "python": "import os, signal\nif data['id'] == 3000:\n"
                                             "    os.kill(os.getpid(), signal.SIGKILL)"}]
    config = bizon.write("config.yml", generator_pipeline("die", transforms))
    result = bizon.run("run", config, "--result-json", "result.json")

    assert result.returncode != 0
    assert "was killed by signal 9" in result.stderr
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "transform"
    assert not (bizon.cwd / "out.json").exists() or bizon.read_ndjson("out.json") == []


@needs_transforms
@pytest.mark.parametrize("runner", ["thread", "process"])
def test_a_transform_that_never_returns_fails_after_python_timeout(bizon, runner):
    transforms = [{"label": "spin", "python": "if data['id'] == 10:\n    while True:\n        pass"}]
    config = bizon.write("config.yml", generator_pipeline("spin", transforms, runner, python_timeout=1,
                                                          count=500))
    result = bizon.run("run", config, "--result-json", "result.json", timeout=120)

    assert result.returncode != 0
    assert "'spin'" in result.stderr and "no result after 1 s" in result.stderr
    assert read_result(bizon.cwd / "result.json")["failure_class"] == "transform"


@needs_custom_source
@pytest.mark.parametrize("stream, expected", [
    ("hangs", "no result after 1 s"),
    ("wrong_type", "SourceIteration"),
])
def test_a_misbehaving_custom_source_fails_the_run_with_a_clear_error(bizon, stream, expected):
    source = {"name": "misbehaving", "stream": stream,
              "source_file_path": str(PYTHON_DATA / "misbehaving_source.py")}
    engine = {"runner": {"type": "thread", "config": {"python_timeout": 1}}}
    path = bizon.write("config.yml", pipeline(f"misbehaving-{stream}", source, engine=engine))
    result = bizon.run("run", path, "--result-json", "result.json", timeout=120)

    assert result.returncode != 0
    assert expected in result.stderr
    assert read_result(bizon.cwd / "result.json")["failure_class"] == "source"
    assert not (bizon.cwd / "out.json").exists() or bizon.read_ndjson("out.json") == []
