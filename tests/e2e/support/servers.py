"""The test servers: run scripts/test-servers.sh for a fixture and read the connection settings it
prints, and decide whether a missing server skips its suite or fails it. Used by the conftest_*
modules."""

from __future__ import annotations

import importlib
import os
import subprocess
from pathlib import Path

import pytest

from support.paths import ROOT

SERVERS = ROOT / "scripts" / "test-servers.sh"


def servers_required() -> bool:
    """True under CI (CI=true, as CI systems set it, and .ci/run): there every suite's server must
    run, so a server that is missing fails its tests instead of skipping them unnoticed."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def skip_or_fail(reason: str):
    """Skips the test on a developer's machine that lacks a server; fails it under CI."""
    if servers_required():
        pytest.fail(f"{reason} (CI is set: a suite whose server cannot start fails, not skips)")
    pytest.skip(reason)


def import_or_skip(module: str):
    """pytest.importorskip, except under CI, where a missing client library is a failure."""
    if servers_required():
        return importlib.import_module(module)
    return pytest.importorskip(module)


def run_servers(command: str, server: str, timeout: int = 240) -> dict[str, str]:
    """`scripts/test-servers.sh <command> <server>`; fails the test with the script's stderr when
    it fails, else returns the NAME -> value of the `export NAME=value` lines it printed."""
    done = subprocess.run([str(SERVERS), command, server], capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        pytest.fail(f"scripts/test-servers.sh {command} {server} failed:\n{done.stderr}")
    settings = {}
    for line in done.stdout.splitlines():
        name, separator, value = line.removeprefix("export ").partition("=")
        if line.startswith("export ") and separator:
            settings[name] = value
    return settings


def server_pid(server: str) -> int | None:
    """The process id scripts/test-servers.sh recorded for `server` (kafka or rabbitmq), if any:
    a restart changes it."""
    state = Path(os.environ.get("BIZON_TEST_SERVERS_DIR") or ROOT / "build" / "test-servers")
    files = {"kafka": state / "kafka" / "kafka.pid", "rabbitmq": state / "rabbitmq" / "node.pid"}
    try:
        return int(files[server].read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
