"""bench/bench.py and its cases: every module of bench/cases/ and bench/harness/ imports, every
case of ALL_CASES is planned by a function of one argument (the Harness) in a module of
bench/cases/, and the command line answers --help. Each check runs in a Python of its own, since
bench/ puts packages named `cases` and `harness` first on sys.path."""

from __future__ import annotations

import subprocess
import sys

from support.paths import ROOT

BENCH = ROOT / "bench"

# Run with bench/ as the working directory, so that `-c` finds bench.py and its packages.
CHECK = """
import importlib, inspect, pkgutil
import bench, cases, harness

for package in (cases, harness):
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")
assert list(bench.CASES) == bench.ALL_CASES, (list(bench.CASES), bench.ALL_CASES)
for name, planner in bench.CASES.items():
    assert inspect.isfunction(planner), f"{name}: {planner!r} is not a function"
    assert planner.__module__.startswith("cases."), f"{name}: planned in {planner.__module__}"
    assert len(inspect.signature(planner).parameters) == 1, f"{name}: {planner.__name__}"
"""


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], cwd=BENCH, capture_output=True, text=True,
                          timeout=120)


def test_every_case_module_imports_and_every_case_has_its_planner():
    done = run("-c", CHECK)
    assert done.returncode == 0, done.stderr


def test_the_command_line_answers_help():
    done = run(str(BENCH / "bench.py"), "--help")
    assert done.returncode == 0, done.stderr
    for option in ("--cases", "--scale", "--sides", "--update-docs"):
        assert option in done.stdout
