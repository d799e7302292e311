#!/usr/bin/env python3
"""One compile command per source file, also for a unity build.

A unity build (CMAKE_UNITY_BUILD, on in the dev and minimal presets) compiles its sources in
batches: compile_commands.json then names the batch files (<target>.dir/Unity/unity_N_cxx.cxx),
not the sources. The tools that look at one source at a time (clang-tidy in scripts/lint.sh,
tests/minimal/gcc_warnings.py) need a command per source: each batch's command, with its file
replaced by each source the batch includes. Other entries are kept as they are.

Usage: per_file_commands.py <build dir>
Writes <build dir>/per-file/compile_commands.json and prints its path.
"""

import json
import os
import re
import sys

UNITY_FILE = re.compile(r"/Unity/unity_\d+_cxx\.cxx$")
INCLUDED = re.compile(r'^#include "([^"]+)"$', re.MULTILINE)


def per_source(entry):
    """The entries of the sources a unity batch includes (the entry itself if it is no batch)."""
    batch = entry["file"]
    if not UNITY_FILE.search(batch):
        return [entry]
    with open(batch, encoding="utf-8") as text:
        sources = INCLUDED.findall(text.read())
    if not sources:
        sys.exit(f"per_file_commands: {batch} includes no source")
    entries = []
    for source in sources:
        entries.append({"directory": entry["directory"], "file": source,
                        "command": entry["command"].replace(batch, source)})
    return entries


def expanded(build_dir):
    with open(os.path.join(build_dir, "compile_commands.json"), encoding="utf-8") as commands:
        return [each for entry in json.load(commands) for each in per_source(entry)]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = os.path.join(sys.argv[1], "per-file")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "compile_commands.json")
    with open(path, "w", encoding="utf-8") as out:
        json.dump(expanded(sys.argv[1]), out, indent=1)
    print(path)


if __name__ == "__main__":
    main()
