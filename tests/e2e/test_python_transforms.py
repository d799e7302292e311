"""Transforms through `bizon run`: mutation, None, escaping, a raising transform, a syntax
error. Engine spec §6."""

from __future__ import annotations

import json

from support.paths import PYTHON_DATA
from support.pipelines import CREATURES, dummy, file_destination, pipeline
from support.python import needs_custom_source, needs_transforms
from support.results import read_result


@needs_transforms
def test_transform_mutates_each_record(bizon):
    transforms = [{"label": "older", "python": "data['age'] += 1\ndata['name'] = data['name'] + ' é'"}]
    config = bizon.write("config.yml", pipeline("transform", dummy(), transforms=transforms))
    bizon.run("run", config, check=0)

    rows = bizon.read_ndjson("out.json")
    expected = [dict(c, age=c["age"] + 1, name=c["name"] + " é") for c in CREATURES]
    assert [row["source_data"] for row in rows] == [json.dumps(e) for e in expected]
    assert [row["source_record_id"] for row in rows] == [str(c["id"]) for c in CREATURES]


@needs_transforms
def test_data_none_writes_null(bizon):
    drop = [{"label": "drop", "python": "data = None"}]
    config = bizon.write("config.yml", pipeline("none", dummy(), transforms=drop))
    bizon.run("run", config, check=0)
    assert [row["source_data"] for row in bizon.read_ndjson("out.json")] == ["null"] * 5


@needs_transforms
@needs_custom_source
def test_transformed_output_is_ascii_escaped_and_raw_output_is_not(bizon):
    source = {"name": "animals", "stream": "animals", "source_file_path": str(PYTHON_DATA / "paginated_source.py")}
    plain = bizon.write("plain.yml", pipeline("plain", source, file_destination("plain")))
    bizon.run("run", plain, check=0)
    noop = [{"label": "noop", "python": "pass"}]
    passed = bizon.write("passed.yml",
                         pipeline("passed", source, file_destination("passed"), transforms=noop))
    bizon.run("run", passed, check=0)

    raw = [row["source_data"] for row in bizon.read_ndjson("plain.json")]
    escaped = [row["source_data"] for row in bizon.read_ndjson("passed.json")]
    assert raw[1] == '{"id": 2, "name": "élan", "habitat": "forêt"}'
    assert escaped[1] == '{"id": 2, "name": "\\u00e9lan", "habitat": "for\\u00eat"}'
    assert [json.loads(r) for r in raw] == [json.loads(e) for e in escaped]


@needs_transforms
def test_raising_transform_fails_the_run_with_label_record_and_traceback(bizon):
    transforms = [{"label": "boom", "python": "if data['name'] == 'froggy':\n    raise ValueError('no frogs')"}]
    config = bizon.write("config.yml", pipeline("boom", dummy(), transforms=transforms))
    result = bizon.run("run", config, "--result-json", "result.json")

    assert result.returncode != 0
    assert "Error applying transformation 'boom' to record '98'" in result.stderr
    assert "ValueError: no frogs" in result.stderr
    assert "Traceback (most recent call last):" in result.stderr
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["status"] == "failure"
    assert outcome["failure_class"] == "transform"
    assert outcome["consumer"] == "transform_error"


@needs_transforms
def test_syntax_error_is_reported_before_anything_runs(bizon):
    config = bizon.write(
        "config.yml",
        "name: broken\n"
        "source:\n  name: dummy\n  stream: creatures\n"
        "  authentication:\n    type: api_key\n    params:\n      token: dummy_key\n"
        "destination:\n  name: file\n  config:\n    destination_id: out\n"
        "transforms:\n"
        "  - label: broken\n"
        "    python: |\n"
        "      x = 1\n"
        "      if x\n"
        "          data = None\n",
    )
    validate = bizon.run("config", "validate", config)
    assert validate.returncode != 0
    assert "config.yml:17: transforms[0].python: syntax error in transform 'broken' at line 2" in (
        validate.stdout + validate.stderr
    )
    run = bizon.run("run", config)
    assert run.returncode != 0
    assert "syntax error in transform 'broken'" in run.stdout + run.stderr
    assert not (bizon.cwd / "out.json").exists()
