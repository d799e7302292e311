"""Shared fixtures for the end-to-end tests: they run the real `bizon` binary."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import FAKES, bizon_binary

# The fake servers (tests/fakes) are imported by name, as the tests' own modules are.
sys.path.insert(0, str(FAKES))


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "serial: restarts or stops a server the whole suite shares, or asserts a time bound; "
        "scripts/test.sh runs these alone, after the parallel pass (-m serial)")
    config.addinivalue_line(
        "markers",
        "long: takes a quarter of a minute or more (a kill-and-resume loop); collected first, so "
        "the parallel pass starts these at once instead of leaving one worker a long tail")


def pytest_collection_modifyitems(config, items):
    # A stable sort: the long tests first, everything else in its usual order. Every xdist worker
    # collects the same order, as xdist requires.
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture(scope="session")
def bizon_bin() -> Path:
    path = bizon_binary()
    if not path.exists():
        pytest.fail(f"bizon binary not found at {path}; build it with scripts/build.sh dev")
    return path


class Bizon:
    """Runs bizon in a working directory of its own."""

    def __init__(self, binary: Path, cwd: Path):
        self.binary = binary
        self.cwd = cwd

    def run(self, *args, env=None, timeout=120, check=None):
        full_env = dict(os.environ)
        full_env.update(env or {})
        result = subprocess.run(
            [str(self.binary), *map(str, args)],
            cwd=self.cwd,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check is not None:
            assert result.returncode == check, (
                f"exit {result.returncode}, expected {check}\nstdout:\n{result.stdout}\n"
                f"stderr:\n{result.stderr}"
            )
        return result

    def write(self, name: str, text: str) -> Path:
        path = self.cwd / name
        path.write_text(text)
        return path

    def read_ndjson(self, name: str):
        path = self.cwd / name
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def bizon(bizon_bin, tmp_path) -> Bizon:
    return Bizon(bizon_bin, tmp_path)


@pytest.fixture
def oauth():
    """The fake Google token endpoint (tests/fakes/fake_google_oauth.py), for the suites that
    talk to Google APIs; it must have seen no request off the documented protocol."""
    from fake_google_oauth import FakeGoogleOAuth

    server = FakeGoogleOAuth().start()
    yield server
    server.stop()
    assert server.violations == []
