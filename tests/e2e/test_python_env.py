"""The embedded interpreter's packages: pydantic 2 (bizon's own site directory, never Debian's
pydantic 1) for custom sources written against the original, and the user's virtualenv
(engine.runner.config.python_env or VIRTUAL_ENV) ahead of it on sys.path, for custom sources
and transforms alike, in the thread runner and in the process runner's transform workers."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from support.paths import PYTHON_DATA
from support.pipelines import dummy, pipeline
from support.python import needs_custom_source, needs_transforms
from support.results import read_result, source_data

pytestmark = [needs_custom_source, needs_transforms]

PYDANTIC2 = str(PYTHON_DATA / "pydantic2_source.py")
VENV_PACKAGE = str(PYTHON_DATA / "venv_package_source.py")
# Pure Python, on PyPI, not packaged by Debian (`apt-cache policy python3-pyhumps`: none), not in
# bizon's requirements: importable only from the test's virtualenv.
PACKAGE = "pyhumps==3.8.0"
EMBEDDED_PYTHON = "/usr/bin/python3"
NO_VENV = {"VIRTUAL_ENV": ""}  # The tests choose their environment, whatever the caller's is.


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A virtualenv of the embedded Python with pyhumps installed from PyPI."""
    root = tmp_path_factory.mktemp("user-env") / "venv"
    subprocess.run([EMBEDDED_PYTHON, "-m", "venv", str(root)], check=True, timeout=300)
    subprocess.run([str(root / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", PACKAGE], check=True, timeout=300)
    return root


@pytest.fixture
def other_python_venv(tmp_path) -> Path:
    """What `python3.12 -m venv` leaves, as far as bizon looks: pyvenv.cfg and lib/python3.12."""
    root = tmp_path / "venv312"
    (root / "lib" / "python3.12" / "site-packages").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text("home = /usr/local/bin\ninclude-system-site-packages = false\n"
                                     "version = 3.12.4\n")
    return root


def config_text(name: str, source: dict, transforms=None, runner: dict | None = None) -> str:
    root = {}
    if transforms is not None:
        root["transforms"] = transforms
    if runner is not None:
        root["engine"] = {"runner": runner}
    return pipeline(name, source, **root)


# --- pydantic 2 --------------------------------------------------------------------------------

def test_pydantic2_source_runs_and_its_validator_clamps(bizon):
    source = {"name": "clamped", "stream": "values", "source_file_path": PYDANTIC2,
              "count": 3, "ratio": 7.5, "label": "kept by extra=allow"}
    config = bizon.write("config.yml", config_text("clamped", source))
    bizon.run("run", config, env=NO_VENV, check=0)

    records = source_data(bizon.read_ndjson("out.json"))
    assert [record["index"] for record in records] == [0, 1, 2]
    assert {record["ratio"] for record in records} == {1.0}  # 7.5 clamped by the field_validator.
    assert {record["label"] for record in records} == {"kept by extra=allow"}
    assert all(record["pydantic"].startswith("2.") for record in records)


def test_a_broken_field_constraint_is_a_config_error_naming_the_key(bizon):
    source = {"name": "clamped", "stream": "values", "source_file_path": PYDANTIC2, "count": 0,
              "password_like": "s3cr3t-value"}
    config = bizon.write("config.yml", config_text("clamped", source))
    result = bizon.run("run", config, "--result-json", "r.json", env=NO_VENV)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "source config does not match ClampedSourceConfig: source.count: " in output
    assert "greater than or equal to 1" in output
    assert "Traceback" not in output
    assert "s3cr3t-value" not in output
    outcome = read_result(bizon.cwd / "r.json")
    assert outcome["failure_class"] == "config", outcome
    assert "source.count: " in outcome["error"] and "s3cr3t-value" not in outcome["error"]
    assert not (bizon.cwd / "out.json").exists()


# --- the user's virtualenv ---------------------------------------------------------------------

TRANSFORM = [{"label": "snake", "python": "import humps\ndata['snake'] = humps.decamelize('firstName')"}]


@pytest.mark.parametrize("runner", ["thread", "process"])
def test_venv_from_config_serves_a_custom_source_and_a_transform(bizon, venv, runner):
    source = {"name": "people", "stream": "people", "source_file_path": VENV_PACKAGE}
    engine = {"type": runner, "config": {"python_env": str(venv)}}
    config = bizon.write("config.yml", config_text("people", source, TRANSFORM, engine))
    bizon.run("run", config, env=NO_VENV, check=0)

    assert source_data(bizon.read_ndjson("out.json")) == [
        {"rowId": 1, "firstName": "ada", "snake": "first_name"},
        {"rowId": 2, "firstName": "grace", "snake": "first_name"},
    ]


def test_venv_from_config_reaches_process_runner_workers(bizon, venv):
    # A built-in source: only the transform workers' interpreters import from the venv.
    engine = {"type": "process", "config": {"python_env": str(venv), "max_workers": 2}}
    config = bizon.write("config.yml", config_text("creatures", dummy(), TRANSFORM, engine))
    bizon.run("run", config, env=NO_VENV, check=0)
    records = source_data(bizon.read_ndjson("out.json"))
    assert records and {record["snake"] for record in records} == {"first_name"}


@pytest.mark.parametrize("runner", ["thread", "process"])
def test_active_virtualenv_is_used(bizon, venv, runner):
    source = {"name": "people", "stream": "people", "source_file_path": VENV_PACKAGE}
    config = bizon.write("config.yml", config_text("people", source, TRANSFORM, {"type": runner}))
    bizon.run("run", config, env={"VIRTUAL_ENV": str(venv)}, check=0)
    assert [record["snake"] for record in source_data(bizon.read_ndjson("out.json"))] == ["first_name"] * 2


def test_without_the_venv_the_package_is_missing(bizon):
    source = {"name": "people", "stream": "people", "source_file_path": VENV_PACKAGE}
    config = bizon.write("config.yml", config_text("people", source))
    result = bizon.run("run", config, env=NO_VENV)
    assert result.returncode != 0
    assert "No module named 'humps'" in result.stdout + result.stderr


SYS_PATH = [{"label": "path", "python": "import sys\ndata = {'path': list(sys.path)}"}]


def test_sys_path_order_is_the_same_in_workers(bizon, venv, tmp_path):
    site = str(venv / "lib" / "python3.11" / "site-packages")
    extra = tmp_path / "extra"
    extra.mkdir()
    paths = {}
    for runner in ("thread", "process"):
        engine = {"type": runner, "config": {"python_env": str(venv), "max_workers": 1}}
        config = bizon.write("config.yml", config_text("creatures", dummy(), SYS_PATH, engine))
        bizon.run("run", config, env={**NO_VENV, "PYTHONPATH": str(extra)}, check=0)
        paths[runner] = source_data(bizon.read_ndjson("out.json"))[0]["path"]
    path = paths["thread"]
    assert paths["process"] == path
    private = [entry for entry in path if entry.endswith("python-site") or entry.endswith("lib/bizon/python")]
    assert len(private) == 1, path
    # PYTHONPATH first, as Python puts it; then the venv ahead of bizon's own packages.
    assert path.index(str(extra)) < path.index(site) < path.index(private[0])
    # The venv does not include system site packages: Debian's pydantic 1 is not reachable.
    assert "/usr/lib/python3/dist-packages" not in path


def test_pythonpath_comes_before_the_venv(bizon, venv, tmp_path):
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "humps.py").write_text("def decamelize(text):\n    return 'from PYTHONPATH'\n")
    config = bizon.write("config.yml", config_text("creatures", dummy(), TRANSFORM))
    bizon.run("run", config, env={"VIRTUAL_ENV": str(venv), "PYTHONPATH": str(shadow)}, check=0)
    assert {record["snake"] for record in source_data(bizon.read_ndjson("out.json"))} == {"from PYTHONPATH"}


def test_venv_of_another_python_in_config_is_refused_naming_both_versions(bizon, other_python_venv):
    engine = {"config": {"python_env": str(other_python_venv)}}
    config = bizon.write("config.yml", config_text("creatures", dummy(), TRANSFORM, engine))
    for command in (["config", "validate", config], ["run", config]):
        result = bizon.run(*command, env=NO_VENV)
        output = result.stdout + result.stderr
        assert result.returncode != 0, output
        assert "config.yml:" in output and ": engine.runner.config.python_env: " in output
        assert f"{other_python_venv} is Python 3.12, bizon embeds Python 3.11" in output
    assert not (bizon.cwd / "out.json").exists()


def test_active_virtualenv_of_another_python_is_refused(bizon, other_python_venv):
    source = {"name": "people", "stream": "people", "source_file_path": VENV_PACKAGE}
    config = bizon.write("config.yml", config_text("people", source))
    result = bizon.run("run", config, env={"VIRTUAL_ENV": str(other_python_venv)})
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "VIRTUAL_ENV (the active virtualenv): " in output
    assert "is Python 3.12, bizon embeds Python 3.11" in output


def test_missing_python_env_is_a_config_error(bizon, tmp_path):
    engine = {"config": {"python_env": str(tmp_path / "nowhere")}}
    config = bizon.write("config.yml", config_text("creatures", dummy(), None, engine))
    result = bizon.run("config", "validate", config, env=NO_VENV)
    assert result.returncode != 0
    assert "engine.runner.config.python_env: no such Python environment" in result.stdout + result.stderr
