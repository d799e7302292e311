"""How the suite treats a missing server: skipped on a developer's machine, failed under CI."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from support.paths import ROOT
from support.servers import import_or_skip, servers_required, skip_or_fail


@pytest.mark.parametrize("value", ["true", "TRUE", "1", "yes"])
def test_ci_makes_a_missing_server_fail(monkeypatch, value):
    monkeypatch.setenv("CI", value)
    assert servers_required()
    with pytest.raises(pytest.fail.Exception, match="CI is set"):
        skip_or_fail("PostgreSQL is not installed")
    with pytest.raises(ModuleNotFoundError):
        import_or_skip("no_such_client_library_for_bizon_tests")


@pytest.mark.parametrize("value", [None, "", "false", "0"])
def test_outside_ci_a_missing_server_skips(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    assert not servers_required()
    with pytest.raises(pytest.skip.Exception, match="RabbitMQ is not installed"):
        skip_or_fail("RabbitMQ is not installed")
    with pytest.raises(pytest.skip.Exception):
        import_or_skip("no_such_client_library_for_bizon_tests")


UNIT_TESTS = ROOT / "build" / "dev" / "bizon_unit_tests"
# The C++ suites that need a server: PostgreSQL, the BigQuery and GCS emulators.
SERVER_SUITES = ("PostgresBackendTest.*:PostgresDestinationTest.*:BigQueryBackendTest.*:"
                 "*BackendConformanceTest.*:GcsClientEmulatorTest.*:BigQueryClientEmulatorTest.*")
SERVER_VARIABLES = ("BIZON_PG_HOST", "BIZON_PG_DATABASE", "BIGQUERY_EMULATOR_HOST",
                    "STORAGE_EMULATOR_HOST", "BIZON_GCS_BUCKET")


def run_server_suites(ci: str | None) -> subprocess.CompletedProcess:
    if not UNIT_TESTS.exists():
        skip_or_fail(f"{UNIT_TESTS} is not built (scripts/build.sh dev)")
    env = {k: v for k, v in os.environ.items() if k not in SERVER_VARIABLES and k != "CI"}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([str(UNIT_TESTS), f"--gtest_filter={SERVER_SUITES}"],
                          env=env, capture_output=True, text=True, timeout=300)


def test_cpp_server_suites_fail_under_ci_without_their_servers():
    result = run_server_suites("true")
    assert result.returncode != 0, result.stdout[-2000:]
    failed = set(re.findall(r"\[  FAILED  \] (?:\w+/)?(\w+)\.", result.stdout))
    assert {"PostgresBackendTest", "PostgresDestinationTest", "BigQueryBackendTest",
            "GcsClientEmulatorTest", "BigQueryClientEmulatorTest",
            "BackendConformanceTest"} <= failed, failed
    assert "CI is set: a missing test server fails the test" in result.stdout
    assert "[  SKIPPED ]" not in result.stdout


def test_cpp_server_suites_skip_without_ci():
    result = run_server_suites(None)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "[  FAILED  ]" not in result.stdout
    skipped = set(re.findall(r"\[  SKIPPED \] (?:\w+/)?(\w+)\.", result.stdout))
    assert {"PostgresBackendTest", "PostgresDestinationTest", "BigQueryBackendTest"} <= skipped
