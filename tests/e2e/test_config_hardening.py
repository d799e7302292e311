"""Config edge cases a new user meets: an alias bomb, deprecated keys at their default, blocks this
build does not act on yet, and record schemas given per stream."""

from __future__ import annotations

import time

import pytest
import yaml

from support.paths import PYTHON_DATA
from support.pipelines import quickstart_text
from support.python import needs_custom_source
from support.results import read_result

QUICKSTART = quickstart_text()


def alias_bomb(levels: int = 12) -> str:
    """About a kilobyte that names 9^12 nodes: each anchor holds nine aliases of the previous."""
    lines = ["name: bomb", "l0: &l0 [lol]"]
    for level in range(1, levels):
        uses = ", ".join([f"*l{level - 1}"] * 9)
        lines.append(f"l{level}: &l{level} [{uses}]")
    lines += ["source:", "  name: dummy", "  stream: creatures",
              "  authentication: {type: api_key, params: {token: dummy_key}}",
              f"  extra: *l{levels - 1}", "destination:", "  name: logger",
              "  config: {dummy: dummy}"]
    return "\n".join(lines) + "\n"


@pytest.mark.serial  # bounds a run's time
def test_alias_bomb_is_refused_quickly_by_validate_and_run(bizon):
    config = bizon.write("bomb.yml", alias_bomb())
    assert len(config.read_bytes()) < 1200
    for command in (["config", "validate", config], ["run", config, "--result-json", "r.json"]):
        started = time.monotonic()
        result = bizon.run(*command, timeout=20)
        assert time.monotonic() - started < 5, "the loader expanded the aliases"
        assert result.returncode == 1, result.stderr
        # The seventh *l4 inside l5 is the first use that takes the document past the bound.
        assert f"{config}:7: the alias *l4 expands the document past 100000 nodes" in result.stderr
    outcome = read_result(bizon.cwd / "r.json")
    assert outcome["failure_class"] == "config"
    assert not (bizon.cwd / "bizon.sqlite3").exists()


def test_reset_false_is_not_a_deprecation_warning(bizon):
    text = QUICKSTART.replace("  stream: creatures\n", "  stream: creatures\n  reset: false\n")
    config = bizon.write("p.yml", text)
    result = bizon.run("config", "validate", config, "--strict")
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr
    # Asking for the reset in the file still draws the warning, and --strict refuses it.
    config = bizon.write("p.yml", text.replace("reset: false", "reset: true"))
    result = bizon.run("config", "validate", config, "--strict")
    assert result.returncode == 1
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "reset: false" in l)
    assert f"{config}:{line}: source.reset: deprecated" in result.stderr


def test_monitoring_and_alerting_blocks_draw_no_unbuilt_warning(bizon):
    # Both are built: validate and run accept the blocks without a warning, so --strict passes.
    text = QUICKSTART + (
        "monitoring:\n  type: datadog\n  config:\n    datadog_agent_host: 127.0.0.1\n"
        "alerting:\n  type: slack\n  config:\n    webhook_url: https://hooks.invalid/x\n"
        "  log_levels: [ERROR]\n")
    config = bizon.write("p.yml", text)
    validated = bizon.run("config", "validate", config)
    assert validated.returncode == 0, validated.stderr
    ran = bizon.run("run", config)
    assert ran.returncode == 0, ran.stderr
    for result in (validated, ran):
        assert "not built" not in result.stderr, result.stderr
        # A successful run logs no ERROR, so nothing is posted and nothing names alerting.
        assert "alerting" not in result.stderr, result.stderr
    assert "Monitoring: DogStatsD to 127.0.0.1:8125" in ran.stderr
    strict = bizon.run("config", "validate", config, "--strict")
    assert strict.returncode == 0, strict.stderr


def test_gsm_reference_skipped_at_validation_is_left_alone(bizon):
    text = QUICKSTART.replace("token: dummy_key", "token: gsm://my-token")
    config = bizon.write("p.yml", text)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "gsm://my-token" in l)
    # No Google settings at all: resolving fails (no project) before any request, so a pass
    # with --skip-references shows the reference was not resolved.
    env = {"GOOGLE_APPLICATION_CREDENTIALS": "", "GOOGLE_CLOUD_PROJECT": "", "GCLOUD_PROJECT": "",
           "CLOUDSDK_CONFIG": str(bizon.cwd / "gcloud"), "GCE_METADATA_HOST": "127.0.0.1:1",
           "BIZON_SECRETMANAGER_ENDPOINT": "http://127.0.0.1:1"}
    for flags in ([], ["--strict"]):
        result = bizon.run("config", "validate", config, "--skip-references", *flags, env=env)
        assert result.returncode == 0, result.stderr
        # gsm:// is built: no warning about it any more, and the reference is not echoed.
        assert "gsm" not in result.stderr and "my-token" not in result.stderr, result.stderr
    resolved = bizon.run("config", "validate", config, env=env)
    assert resolved.returncode == 1
    assert (f"{config}:{line}: source.authentication.params.token: failed to resolve reference: "
            "cannot resolve gsm://my-token: no GCP project.") in resolved.stderr


@needs_custom_source
def test_record_schema_of_a_stream_reaches_the_unnesting_destination(bizon):
    config = {
        "name": "routed",
        "source": {"name": "routed", "stream": "changes", "sync_mode": "stream",
                   "max_iterations": 1},
        "destination": {"name": "file", "config": {"unnest": True}},
        "streams": [
            {"name": "users", "destination": {"table_id": "shop.crm.users", "record_schema": [
                {"name": "id", "type": "INTEGER"}, {"name": "email", "type": "STRING"}]}},
            {"name": "orders", "destination": {"table_id": "shop.crm.orders", "record_schema": [
                {"name": "id", "type": "INTEGER"}, {"name": "user_id", "type": "INTEGER"},
                {"name": "total", "type": "FLOAT"}]}},
        ],
        "engine": {"runner": {"type": "stream"}},
    }
    path = bizon.write("p.yml", yaml.safe_dump(config, sort_keys=False))
    result = bizon.run("run", path, "--custom-source", PYTHON_DATA / "routed_source.py",
                       "--result-json", "r.json")
    assert result.returncode == 0, result.stderr
    assert bizon.read_ndjson("shop.crm.users.json") == [
        {"id": 1, "email": "ada@example.org"}, {"id": 2, "email": "grace@example.org"}]
    assert bizon.read_ndjson("shop.crm.orders.json") == [
        {"id": 10, "user_id": 1, "total": 12.5}, {"id": 11, "user_id": 2, "total": 7.0}]
