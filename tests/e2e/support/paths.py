"""Where things are, all inside the repository: the root, the tests' data, the fakes, the
examples, and the bizon binary under test."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
E2E = ROOT / "tests" / "e2e"
DATA = E2E / "data"
#: Custom Python sources (and the events one of them emits) for the embedded-Python tests.
PYTHON_DATA = DATA / "python"
#: The project's configs in the shapes of the original's examples (its README maps them).
SHAPES = DATA / "original_shapes"
TRANSFORMS = DATA / "transforms"
FAKES = ROOT / "tests" / "fakes"
EXAMPLES = ROOT / "examples"


def bizon_binary() -> Path:
    """The binary the tests run: BIZON_BIN, else the dev build."""
    return Path(os.environ.get("BIZON_BIN", ROOT / "build" / "dev" / "bizon")).resolve()
