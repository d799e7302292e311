"""The original bizon 0.6.4's public Python API inside our binary (issue 34): every module of the
original's package, and every public name its bizon.source, bizon.common and bizon.engine
modules define, is either provided by our compatibility package (src/python/compat/) or refused
at import with the reason, never a bare "No module named" or AttributeError. The lists come from
the real package's files (build/original-venv, made by scripts/python-env.sh), so a module or
name the original has and ours forgot fails here. Also: the error of a source that imports a
package we do not bundle names python_env, and the original's RunnerFactory is refused with what
to run instead."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import yaml

from support.paths import PYTHON_DATA, ROOT
from support.python import needs_custom_source
from support.servers import skip_or_fail

pytestmark = [needs_custom_source]

# The text every refusal carries (bizon/_original.py), and where it sends the reader.
REFUSED = "is not provided by the bizon binary's Python package: "
SEE = "migration.md"
# The packages whose public names are checked one by one (the list).
NAMED_PACKAGES = ("source", "common", "engine")
# The caller's virtualenv (pytest's own, say) must not stand in for the user's.
NO_VENV = {"VIRTUAL_ENV": ""}


@pytest.fixture(scope="module")
def original_package() -> Path:
    found = sorted((ROOT / "build" / "original-venv" / "lib").glob("python3*/site-packages/bizon"))
    if not found:
        skip_or_fail("the original bizon is not installed in build/original-venv: run scripts/python-env.sh")
    return found[0]


def original_modules(package: Path) -> set[str]:
    """Module paths (after `bizon.`) of the original's files, packages included, tests left out."""
    modules = set()
    for path in package.rglob("*.py"):
        parts = path.relative_to(package).with_suffix("").parts
        if "tests" in parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        for depth in range(1, len(parts) + 1):
            modules.add(".".join(parts[:depth]))
    return modules


def defined_names(path: Path) -> list[str]:
    """Public names a module's own code binds at top level (classes, functions, assignments;
    not imports)."""
    names = []

    def visit(statements):
        for node in statements:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                names.append(node.name)
            elif isinstance(node, ast.Assign):
                names.extend(target.id for target in node.targets if isinstance(target, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.append(node.target.id)
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body + node.orelse + [n for h in getattr(node, "handlers", []) for n in h.body])
    visit(ast.parse(path.read_text()).body)
    return sorted({name for name in names if not name.startswith("_")})


def module_file(package: Path, module: str) -> Path | None:
    base = package.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


@pytest.fixture(scope="module")
def listed(original_package) -> dict[str, list[str]]:
    """Every module of the original -> its public names (for bizon.source/common/engine)."""
    names = {}
    for module in sorted(original_modules(original_package)):
        path = module_file(original_package, module)
        checked = module.split(".")[0] in NAMED_PACKAGES
        names[module] = defined_names(path) if checked and path is not None else []
    return names


@pytest.fixture(scope="module")
def probed(tmp_path_factory, bizon_bin, listed) -> dict[str, dict]:
    """What our binary's interpreter did with each module and name (compat_probe_source.py)."""
    from conftest import Bizon

    bizon = Bizon(bizon_bin, tmp_path_factory.mktemp("probe"))
    (bizon.cwd / "names.json").write_text(json.dumps(listed))
    config = {"name": "compat-probe",
              "source": {"name": "probe", "stream": "names", "names_file": str(bizon.cwd / "names.json"),
                         "source_file_path": str(PYTHON_DATA / "compat_probe_source.py")},
              "destination": {"name": "file", "config": {"destination_id": "out"}}}
    bizon.write("config.yml", yaml.safe_dump(config))
    bizon.run("run", "config.yml", env=NO_VENV, check=0, timeout=180)
    return {row["source_record_id"]: json.loads(row["source_data"]) for row in bizon.read_ndjson("out.json")}


def is_refusal(outcome: dict) -> bool:
    return outcome["outcome"] == "refused" and REFUSED in outcome["message"] and SEE in outcome["message"]


def test_every_module_of_the_original_is_provided_or_refused_with_its_reason(listed, probed):
    unexplained = {module: probed[module] for module in listed
                   if probed[module]["outcome"] != "provided" and not is_refusal(probed[module])}
    assert unexplained == {}
    # What the issue found missing is provided now.
    for module in ("source.auth.authenticators.abstract_oauth", "source.auth.authenticators.abstract_token",
                   "source.cursor", "common.models", "common.errors.backoff", "engine.backend.models"):
        assert probed[module]["outcome"] == "provided", module
    # The original's connectors (no original in python_env here) say how to get them.
    refusal = probed["connectors.sources.dummy.src.source"]
    assert is_refusal(refusal) and "engine.runner.config.python_env" in refusal["message"]


def test_every_public_name_is_provided_or_refused_with_its_reason(listed, probed):
    unexplained = {}
    provided = set()
    for module, names in listed.items():
        if probed[module]["outcome"] != "provided":
            continue  # The module's refusal covers its names (checked above).
        for name in names:
            outcome = probed[module]["names"][name]
            if outcome["outcome"] == "provided":
                provided.add(f"{module}.{name}")
            elif not is_refusal(outcome):
                unexplained[f"{module}.{name}"] = outcome
    assert unexplained == {}
    assert {"source.auth.authenticators.abstract_oauth.AbstractOauth2Authenticator",
            "source.auth.authenticators.abstract_token.AbstractHeaderAuthenticator",
            "source.cursor.Cursor", "source.session.CappedRetry", "source.session.legacy_retry_policy",
            "source.config.HttpConfig", "common.models.StreamConfig", "engine.runner.config.RunnerStatus",
            "engine.pipeline.models.PipelineReturnStatus"} <= provided
    runner_factory = probed["engine.engine"]["names"]["RunnerFactory"]
    assert is_refusal(runner_factory) and "`bizon run <config.yml>`" in runner_factory["message"]


def test_the_list_of_the_original_modules_in_the_package_is_the_real_one(original_package, probed):
    # connectors.sources.* is matched by prefix, so its modules are not listed one by one.
    real = {module for module in original_modules(original_package) if not module.startswith("connectors.sources.")}
    assert set(probed["#original_modules"]["modules"]) == real


def run_source(bizon, file_name: str, stream: str):
    config = {"name": "compat-refused",
              "source": {"name": "refused", "stream": stream, "source_file_path": str(PYTHON_DATA / file_name)},
              "destination": {"name": "file", "config": {"destination_id": "out"}}}
    bizon.write("config.yml", yaml.safe_dump(config))
    result = bizon.run("run", "config.yml", env=NO_VENV, timeout=180)
    assert result.returncode != 0
    return result.stdout + result.stderr


def test_a_package_we_do_not_bundle_names_python_env(bizon):
    output = run_source(bizon, "compat_missing_package_source.py", "frames")
    assert "No module named 'polars'" in output
    assert "The bizon binary bundles pydantic 2" in output
    assert "name it in engine.runner.config.python_env" in output


def test_runner_factory_is_refused_with_what_to_run_instead(bizon):
    output = run_source(bizon, "compat_runner_factory_source.py", "runs")
    assert "bizon.engine.engine.RunnerFactory " + REFUSED in output
    assert "run it as a subprocess and read --result-json" in output
