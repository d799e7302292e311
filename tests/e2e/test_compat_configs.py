"""Configs the original bizon 0.6.4 accepts get the same verdict from ours (issue 34): each case is
one extra key the original ignores, in a block where ours used to refuse it. The original builds
each pipeline (RunnerFactory.create_from_yaml, which validates the whole config without running
it) in one process of build/original-venv's Python; ours runs `bizon config validate`, which must
accept the file and warn about the key by its YAML path and line. A key the original refuses
(under engine.queue.config) stays refused by both."""

from __future__ import annotations

import copy
import json
import subprocess

import pytest
import yaml

from support.paths import ROOT
from support.servers import skip_or_fail

ORIGINAL_PYTHON = ROOT / "build" / "original-venv" / "bin" / "python"

BASE = {
    "name": "compat_config",
    "source": {"name": "dummy", "stream": "creatures",
               "authentication": {"type": "api_key", "params": {"token": "dummy_key"}}},
    "destination": {"name": "logger", "config": {"dummy": "dummy"}},
}

BIGQUERY = {"name": "bigquery", "config": {
    "project_id": "p", "dataset_id": "d", "gcs_buffer_bucket": "b", "gcs_buffer_format": "parquet",
    "unnest": True, "record_schemas": [{"destination_id": "creatures", "record_schema": [
        {"name": "id", "type": "INTEGER", "mode": "REQUIRED", "nullable": False,
         "policy_tags": ["projects/p/taxonomies/1/policyTags/2"]}]}]}}


def with_extra(config: dict, case: str) -> dict:
    config = copy.deepcopy(config)
    if case == "auth_params":
        config["source"]["authentication"]["params"]["extra_param"] = 1
    elif case == "transform":
        config["transforms"] = [{"label": "t", "python": "data['x'] = 1\n", "note": "hello"}]
    elif case == "python_queue":
        config["engine"] = {"queue": {"type": "python_queue", "config": {
            "max_nb_messages": 100, "queue": {"max_size": 10, "poll_interval": 2}}}}
    elif case == "api_config":
        config["source"]["api_config"] = {"retry_limit": 5, "backoff": 2}
    elif case == "slack":
        config["alerting"] = {"type": "slack", "log_levels": ["ERROR"], "config": {
            "webhook_url": "http://127.0.0.1:9/hook", "channel": "#alerts"}}
    elif case == "record_schema":
        config["destination"] = BIGQUERY
    elif case == "runner_delays":
        config["engine"] = {"runner": {"type": "thread", "config": {
            "consumer_start_delay": 5, "is_alive_check_interval": 7}}}
    elif case == "echo_engine":
        config["engine"] = {"backend": {"type": "sqlite", "config": {
            "database": "bizon", "schema": "public", "syncCursorInDBEvery": 2,
            "echoEngine": True}}}
    elif case == "queue_poll":
        config["engine"] = {"queue": {"type": "python_queue", "config": {
            "max_nb_messages": 100, "consumer": {"poll_interval": 3}}}}
    elif case == "destination_alias":
        config["destination"]["alias"] = "my_logger"
    elif case == "kafka_json":
        config["source"] = {
            "name": "kafka", "stream": "topic", "sync_mode": "stream",
            "bootstrap_servers": "127.0.0.1:9", "message_encoding": "json",
            "topics": [{"name": "t", "destination_id": "t"}],
            "authentication": {"type": "basic", "params": {"username": "u", "password": "p"}}}
    elif case == "cycle_bearer":
        config["source"] = {"name": "cycle", "stream": "customers", "slug": "acme",
                            "authentication": {"type": "bearer", "params": {"token": "t"}}}
    elif case == "cycle_without_slug":
        config["source"] = {"name": "cycle", "stream": "customers",
                            "authentication": {"type": "api_key", "params": {"token": "t"}}}
    elif case == "negative_max_iterations":
        config["source"]["max_iterations"] = -1
    elif case == "queue_config":
        config["engine"] = {"queue": {"type": "python_queue", "config": {
            "max_nb_messages": 100, "unknown_q": 1}}}
    return config


# case -> (the warned path, its line in the YAML dump below)
ACCEPTED = {
    "auth_params": "source.authentication.params.extra_param: unknown key 'extra_param' is ignored",
    "transform": "transforms[0].note: unknown key 'note' is ignored",
    "python_queue": "engine.queue.config.queue.poll_interval: unknown key 'poll_interval' is ignored",
    "api_config": "source.api_config.backoff: unknown key 'backoff' is ignored",
    "slack": "alerting.config.channel: unknown key 'channel' is ignored",
    "record_schema": ("destination.config.record_schemas[0].record_schema[0].nullable: "
                      "unknown key 'nullable' is ignored"),
}
REFUSED = {"queue_config": "engine.queue.config.unknown_q: unknown key 'unknown_q'"}
# case -> the error ours gives for a config the original builds but cannot run as written
# (docs/migration.md, "Configs refused here that the original builds").
REFUSED_HERE = {
    "kafka_json": "source.message_encoding: expected one of avro, utf-8, got 'json'",
    "cycle_bearer": "source.authentication.type: expected one of api_key, got 'bearer'",
    "cycle_without_slug": "source.slug: required key is missing",
    "negative_max_iterations": "source.max_iterations: must be at least 0, got -1",
}
# case -> the warnings ours gives for keys it accepts but that change nothing here.
NO_EFFECT = {
    "runner_delays": ["engine.runner.config.consumer_start_delay: 'consumer_start_delay' has no "
                      "effect: the consumer starts at once",
                      "engine.runner.config.is_alive_check_interval: 'is_alive_check_interval' "
                      "has no effect: a failing producer or consumer stops the run at once"],
    "echo_engine": ["engine.backend.config.echoEngine: 'echoEngine' has no effect: there is no "
                    "SQLAlchemy engine to echo"],
    "queue_poll": ["engine.queue.config.consumer.poll_interval: 'poll_interval' has no effect: "
                   "the consumer wakes as soon as a message arrives"],
}
# case -> the key the original reads and ours reads too, so both accept it without a word:
# `destination.alias` names the destination in Datadog data-streams produce checkpoints.
SAME = {"destination_alias": "destination.alias"}

ORIGINAL_VERDICTS = """
import json, os, sys
from bizon.engine.engine import RunnerFactory
verdicts = {}
for name, path in json.load(open(sys.argv[1])).items():
    os.chdir(os.path.dirname(path))
    try:
        RunnerFactory.create_from_yaml(path)
        verdicts[name] = "accepted"
    except Exception as error:  # The verdict, compared with ours by the test.
        verdicts[name] = f"refused: {type(error).__name__}: {str(error)[:300]}"
json.dump(verdicts, open(sys.argv[2], "w"))
"""


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("compat_configs")
    paths = {}
    for case in [*ACCEPTED, *REFUSED, *NO_EFFECT, *REFUSED_HERE, *SAME]:
        folder = root / case
        folder.mkdir()
        path = folder / "config.yml"
        path.write_text(yaml.safe_dump(with_extra(BASE, case), sort_keys=False))
        paths[case] = str(path)
    return paths


@pytest.fixture(scope="module")
def original_verdicts(cases, tmp_path_factory) -> dict[str, str]:
    if not ORIGINAL_PYTHON.exists():
        skip_or_fail("the original bizon is not installed at build/original-venv: "
                     "run scripts/python-env.sh")
    folder = tmp_path_factory.mktemp("original_verdicts")
    (folder / "cases.json").write_text(json.dumps(cases))
    done = subprocess.run([str(ORIGINAL_PYTHON), "-c", ORIGINAL_VERDICTS, str(folder / "cases.json"),
                           str(folder / "verdicts.json")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads((folder / "verdicts.json").read_text())


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_a_key_the_original_ignores_is_accepted_with_a_warning(bizon, cases, original_verdicts,
                                                               case):
    assert original_verdicts[case] == "accepted"
    result = bizon.run("config", "validate", cases[case], check=0)
    warning = next((line for line in result.stderr.splitlines() if "unknown key" in line), "")
    assert warning.startswith("warning: ") and warning.endswith(ACCEPTED[case]), result.stderr
    assert f"{cases[case]}:" in warning  # The file and the key's line.
    strict = bizon.run("config", "validate", cases[case], "--strict", check=1)
    assert ACCEPTED[case] in strict.stderr


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_key_the_original_refuses_stays_refused(bizon, cases, original_verdicts, case):
    assert original_verdicts[case].startswith("refused: ")
    assert "extra_forbidden" in original_verdicts[case] or "Extra inputs" in original_verdicts[case]
    result = bizon.run("config", "validate", cases[case], check=1)
    assert REFUSED[case] in result.stderr


@pytest.mark.parametrize("case", sorted(NO_EFFECT))
def test_a_key_without_effect_here_is_accepted_with_a_warning_naming_it(bizon, cases,
                                                                         original_verdicts, case):
    assert original_verdicts[case] == "accepted"
    result = bizon.run("config", "validate", cases[case], check=0)
    warnings = [line for line in result.stderr.splitlines() if "has no effect" in line]
    assert len(warnings) == len(NO_EFFECT[case]), result.stderr
    for expected in NO_EFFECT[case]:
        assert any(expected in line and line.startswith("warning: ") for line in warnings), (
            expected, result.stderr)


@pytest.mark.parametrize("case", sorted(SAME))
def test_a_key_with_its_effect_here_is_accepted_without_a_warning(bizon, cases, original_verdicts,
                                                                  case):
    assert original_verdicts[case] == "accepted"
    result = bizon.run("config", "validate", cases[case], check=0)
    assert SAME[case] not in result.stderr, result.stderr
    bizon.run("config", "validate", cases[case], "--strict", check=0)


@pytest.mark.parametrize("case", sorted(REFUSED_HERE))
def test_a_config_the_original_builds_but_cannot_run_is_refused_with_its_line(
        bizon, cases, original_verdicts, case):
    assert original_verdicts[case] == "accepted"
    result = bizon.run("config", "validate", cases[case], check=1)
    assert f"{cases[case]}:" in result.stderr and REFUSED_HERE[case] in result.stderr, result.stderr
    migration = (ROOT / "docs" / "migration.md").read_text()
    assert "Configs refused here that the original builds" in migration
