"""No file of the project may refer to a path outside the repository.

A clone has nothing beside it: a test, script or document that reads a sibling folder of the
repository works on the machine it was written on and fails everywhere else. This check reads
every file `git ls-files` lists and reports, as `path:line: reason`, each reference that leaves
the repository (BAD_LINES below has a sample of each kind):

* an absolute path into a machine's own tree (under work, home or Users at the root);
* a chain of `..` segments that climbs above the repository root, counted from the file's own
  directory (an include of a parent folder's header inside src stays inside), or from a name
  that stands for the root (the shell's root variables, Python's ROOT, CMake's source dir);
* in Python, `parents[N]`, `.parent` chains and nested `os.path.dirname` calls of `__file__`
  that go above the root, and the parent of a name that stands for the root;
* `shared` used as a path component, the sibling folder the suite once read. The word itself
  is fine in prose.

It is a text check, so it can be fooled (a path built from pieces it cannot see); it is there to
catch the plain mistakes. A line that must show such a path (a sample in the tests below) carries
the marker `repo-path: ok`, which the check honours on any line; grep for it to review them.
"""

from __future__ import annotations

import posixpath
import re
import subprocess
from pathlib import Path

import pytest

from support.paths import ROOT

ALLOW_MARKER = "repo-path: ok"

ABSOLUTE = re.compile(r"(?<![\w.\-/~$}])/(?:work|home|Users)/")
# A run of `..` segments and what follows it, not part of a longer run of dots (`...`) or of a
# word. Quoted components joined by `/` or `,` (`".." / ".."`, `"..", ".."`) count as one run.
DOTDOT_PATH = re.compile(r"(?<![\w.])\.\.(?:/\.\.)*(?![\w.])(?:/[\w.\-]+)*")
QUOTED_DOTDOTS = re.compile(r"""(?:(["'])\.\.\1\s*[/,]\s*)*(["'])\.\.\2""")
# Names that stand for the repository root in this project's scripts, Python and CMake.
ROOT_NAME = (
    r"(?:\$\{?(?:root|ROOT|repo_root|REPO_ROOT|CMAKE_SOURCE_DIR|PROJECT_SOURCE_DIR)\}?"
    r"|\bROOT|\bREPO_ROOT|\brepo_root)"
)
ROOT_THEN_UP = re.compile(ROOT_NAME + r"""\s*(?:/\s*["']?|,\s*["'])\.\.(?![\w.])""")
ROOT_PARENT = re.compile(r"\b(?:ROOT|REPO_ROOT|repo_root)\.parents?\b")
FILE_PARENTS = re.compile(r"__file__\)(?:\.resolve\(\))?(?:\.absolute\(\))?\.parents\[(\d+)\]")
FILE_PARENT_CHAIN = re.compile(r"__file__\)(?:\.resolve\(\))?(?:\.absolute\(\))?((?:\.parent\b)+)")
SHARED_COMPONENT = re.compile(
    r"""(["'])shared\1\s*/|/\s*(["'])shared\2|\bshared/reference\b|\.\./(?:\.\./)*shared\b"""
)


def climbs_above_root(directory: str, relative: str) -> bool:
    """Whether `relative`, read from `directory` (inside the repository), leaves it."""
    joined = posixpath.normpath(posixpath.join(directory, relative))
    return joined == ".." or joined.startswith("../")


def outside_references(file_path: str, text: str) -> list[tuple[int, str]]:
    """(line number, reason) for each reference in `text` to a path outside the repository.

    `file_path` is the file's path relative to the repository root, with `/` separators.
    """
    directory = posixpath.dirname(file_path)
    depth = len(directory.split("/")) if directory else 0
    found: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if ALLOW_MARKER in line:
            continue
        reasons: list[str] = []
        if match := ABSOLUTE.search(line):
            reasons.append(f"absolute path {line[match.start():match.end()]!r}")
        for match in DOTDOT_PATH.finditer(line):
            if climbs_above_root(directory, match.group(0)):
                reasons.append(f"{match.group(0)!r} climbs above the repository root")
        for match in QUOTED_DOTDOTS.finditer(line):
            ups = "/".join([".."] * match.group(0).count(".."))
            if climbs_above_root(directory, ups):
                reasons.append(f"{match.group(0)!r} climbs above the repository root")
        if match := ROOT_THEN_UP.search(line):
            reasons.append(f"{match.group(0)!r} goes above the repository root")
        if match := ROOT_PARENT.search(line):
            reasons.append(f"{match.group(0)!r} is the folder above the repository root")
        for match in FILE_PARENTS.finditer(line):
            if int(match.group(1)) > depth:
                reasons.append(f"__file__ parents[{match.group(1)}] is above the repository root")
        for match in FILE_PARENT_CHAIN.finditer(line):
            if match.group(1).count(".parent") - 1 > depth:
                reasons.append("a .parent chain of __file__ goes above the repository root")
        if "__file__" in line and line.count("dirname(") - 1 > depth:
            reasons.append("nested dirname() of __file__ goes above the repository root")
        if match := SHARED_COMPONENT.search(line):
            reasons.append(f"{match.group(0)!r} names the folder beside the repository")
        found += [(number, reason) for reason in reasons]
    return found


def tracked_files() -> list[str]:
    result = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        pytest.skip(f"not a git checkout, nothing to list: {result.stderr.strip()}")
    return [name for name in result.stdout.split("\0") if name]


def read_text(path: Path) -> str | None:
    """The file's text, or None for a binary file, a submodule or a deleted one."""
    try:
        data = path.read_bytes()
    except (IsADirectoryError, FileNotFoundError):
        return None
    if b"\0" in data:
        return None
    return data.decode("utf-8", errors="replace")


def test_no_tracked_file_refers_outside_the_repository():
    files = tracked_files()
    assert len(files) > 50, f"git ls-files listed only {len(files)} files"
    problems = []
    for name in files:
        text = read_text(ROOT / name)
        if text is None:
            continue
        found = outside_references(name, text)
        problems += [f"{name}:{number}: {reason}" for number, reason in found]
    assert not problems, "references outside the repository:\n" + "\n".join(problems)


# The checker itself: each bad line must be reported from the file it is planted in, each good
# line must not. The marker after each bad sample keeps the tree check above from reporting this
# file's own samples; it is a comment, not part of the sample.
E2E = "tests/e2e/t.py"  # two folders below the root
FAKES = "tests/fakes/h.py"

# The sibling folder's name is assembled so this file never spells the reference it tests for.
SIBLING = "sha" + "red"

BAD_LINES = [
    (E2E, f'EXAMPLES = ROOT.parent / "{SIBLING}" / "reference" / "examples"'),  # repo-path: ok
    (FAKES, 'EXAMPLES = Path(__file__).resolve().parents[3] / "examples"'),  # repo-path: ok
    (FAKES, 'DATA = Path(__file__).parent.parent.parent.parent / "data"'),  # repo-path: ok
    (E2E, "d = dirname(dirname(dirname(dirname(__file__))))"),  # repo-path: ok
    (E2E, f'config = Path("../../../{SIBLING}/reference/a.yml")'),  # repo-path: ok
    (E2E, 'config = Path("../../../elsewhere/a.yml")'),  # repo-path: ok
    (E2E, 'config = Path(__file__).parent / ".." / ".." / ".." / "x"'),  # repo-path: ok
    ("scripts/x.sh", f'cat "$root/../{SIBLING}/spec/engine.md"'),  # repo-path: ok
    ("scripts/x.sh", 'cd "$(dirname "$0")/../.."'),  # repo-path: ok
    ("CMakeLists.txt", "include(${CMAKE_SOURCE_DIR}/../common.cmake)"),  # repo-path: ok
    ("src/config/validator.cc", '#include "../../../outside.h"'),  # repo-path: ok
    ("README.md", f"See [the spec](../{SIBLING}/spec/connectors.md)."),  # repo-path: ok
    ("docs/x.md", f"Read /work/{SIBLING}/spec/engine.md first."),  # repo-path: ok
    ("bench/bench.py", 'OUT = Path("/home/someone/bizon/results")'),  # repo-path: ok
    (E2E, f'EXAMPLES = BASE / "{SIBLING}" / "reference"'),  # repo-path: ok
]

GOOD_LINES = [
    (E2E, "ROOT = Path(__file__).resolve().parents[2]"),
    (E2E, 'sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fakes"))'),
    (FAKES, 'FIXTURES = Path(__file__).resolve().parent.parent / "e2e" / "data"'),
    ("bench/bench.py", "ROOT = BENCH.parent"),
    ("src/config/validator.cc", '#include "../common/status.h"'),
    # Inside the repository from its own file, not from this one: hence the marker.
    ("src/connectors/sources/x/x.cc", '#include "../../../common/value.h"'),  # repo-path: ok
    ("scripts/test.sh", 'root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"'),
    ("bench/README.md", "the figures in [docs/performance.md](../docs/performance.md)"),
    ("docs/x.md", "Helpers shared by the engine tests; the shared producer reconnects."),
    ("docs/x.md", "Wait... then retry, and so on..."),
    ("bench/servers/s.py", '"next": "http://127.0.0.1:<port>/items?offset=..&limit=.."'),
    ("src/x_test.cc", 'FormatIsoTimestamp(micros);  // "...T..:..:...ffffffZ"'),
    (E2E, 'url = "https://example.com/work/items"'),
]


@pytest.mark.parametrize(("file_path", "line"), BAD_LINES)
def test_checker_reports_a_planted_bad_line(file_path: str, line: str):
    found = outside_references(file_path, f"first line\n{line}\nlast line\n")
    assert found and {number for number, _ in found} == {2}, (file_path, line, found)


@pytest.mark.parametrize(("file_path", "line"), GOOD_LINES)
def test_checker_accepts_a_path_inside_the_repository(file_path: str, line: str):
    assert outside_references(file_path, line) == [], (file_path, line)


def test_marker_silences_only_its_own_line():
    bad = 'EXAMPLES = ROOT.parent / "examples"'  # repo-path: ok
    found = outside_references("tests/e2e/t.py", f"{bad}  # {ALLOW_MARKER}\n{bad}\n")
    assert found and {number for number, _ in found} == {2}, found
