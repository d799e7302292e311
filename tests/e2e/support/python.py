"""The embedded-Python probes of the end-to-end tests (test_python_*.py and the tests that use a
transform or a custom source).

The transforms and custom sources of src/python/ reach `bizon run` once the engine routes them;
until then the tests skip, on a probe: a tiny run whose error says the build lacks the runtime.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from support.paths import PYTHON_DATA, bizon_binary
from support.pipelines import dummy, pipeline

NOT_WIRED = (
    "transforms need the embedded Python runtime",
    "is declared but not implemented",
)

# The Debezium events the custom source emits, for computing the expected output.
sys.path.insert(0, str(PYTHON_DATA))
from debezium_events import change_events  # noqa: E402,F401


@functools.lru_cache(maxsize=None)
def missing_capability(kind: str) -> str | None:
    """Why `kind` ("transforms" or "custom_source") cannot run through this binary, or None."""
    binary = bizon_binary()
    if not binary.exists():
        return None  # conftest's bizon_bin fixture fails the test with the right message.
    if kind == "transforms":
        config = pipeline("probe", dummy(), transforms=[{"label": "probe", "python": "data = data"}])
        extra = []
    else:
        config = pipeline("probe", {"name": "probe_animals", "stream": "animals"})
        extra = ["--custom-source", str(PYTHON_DATA / "paginated_source.py")]
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "probe.yml"
        path.write_text(config)
        result = subprocess.run(
            [str(binary), "run", str(path), *extra],
            cwd=directory, capture_output=True, text=True, timeout=120,
        )
    output = result.stdout + result.stderr
    for marker in NOT_WIRED:
        if marker in output:
            return f"bizon run does not route {kind} to src/python yet ({marker!r})"
    return None


needs_transforms = pytest.mark.skipif(
    missing_capability("transforms") is not None, reason=str(missing_capability("transforms"))
)
needs_custom_source = pytest.mark.skipif(
    missing_capability("custom_source") is not None, reason=str(missing_capability("custom_source"))
)
