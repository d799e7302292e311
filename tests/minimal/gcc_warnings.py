#!/usr/bin/env python3
"""GCC's warnings on the sources the minimal build leaves out.

The dev preset compiles with clang (faster, and its sanitizer data is a fraction of GCC's), while
users build the release binary with g++, whose -Werror warnings differ. The minimal build compiles
the core with g++; this checks every other source of the dev build (the optional families and
their tests, and the files with a section for a family that is ON) with `g++ -fsyntax-only`,
using the dev build's own flags minus the sanitizers, so a GCC-only warning fails the test
command instead of a user's build.

Usage: gcc_warnings.py <dev build dir> <minimal build dir>
"""

import concurrent.futures
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import per_file_commands  # noqa: E402  (scripts/per_file_commands.py)

# Flags of a compile command that are about its output or the sanitizers, not its warnings.
DROPPED_WITH_VALUE = {"-o", "-MT", "-MF"}
DROPPED = {"-c", "-MD"}


def uses_build_features(path):
    """Whether a file has sections for a family's ON side, which the minimal build skips."""
    with open(path, encoding="utf-8") as source:
        return "build_features.h" in source.read()


def compiled_files(build_dir):
    """Each source the build compiles, with its command (one per source, also in a unity build)."""
    return {entry["file"]: entry for entry in per_file_commands.expanded(build_dir)}


def syntax_only(entry):
    args = shlex.split(entry["command"])[1:]
    kept = ["g++", "-fsyntax-only"]
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
        elif arg in DROPPED_WITH_VALUE:
            skip_next = True
        elif arg in DROPPED or arg.startswith(("-fsanitize", "-fno-sanitize")) or arg == entry["file"]:
            continue
        else:
            kept.append(arg)
    kept.append(entry["file"])
    return kept


def check(entry):
    result = subprocess.run(syntax_only(entry), cwd=entry["directory"], capture_output=True,
                            text=True, check=False)
    return entry["file"], result.returncode, result.stderr


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    dev, minimal = compiled_files(sys.argv[1]), compiled_files(sys.argv[2])
    source_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ours = [entry for path, entry in sorted(dev.items())
            if (path not in minimal or uses_build_features(path))
            and path.startswith(source_root + "/")
            and not path.startswith(os.path.join(source_root, "build") + "/")]
    if not ours:
        sys.exit("gcc warnings: no source of the dev build is outside the minimal one")
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        for path, returncode, stderr in pool.map(check, ours):
            if returncode != 0:
                failed += 1
                print(f"gcc warnings: {os.path.relpath(path, source_root)}:\n{stderr}",
                      file=sys.stderr)
    if failed:
        sys.exit(f"gcc warnings: {failed} of {len(ours)} files fail under g++")
    print(f"gcc warnings: {len(ours)} sources outside the minimal build are clean under g++")


if __name__ == "__main__":
    main()
