#!/usr/bin/env bash
# Configures and builds one CMake preset (dev or release). Incremental: a second run with
# nothing changed takes a second.
set -euo pipefail
preset="${1:-release}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# The Storage Write API's .proto files (idempotent: a stamp check once they are there).
scripts/googleapis-protos.sh
# The DuckDB library (idempotent: a stamp check once it is there).
scripts/duckdb.sh
if [[ ! -f "build/$preset/build.ninja" ]]; then
  cmake --preset "$preset" >/dev/null
fi
cmake --build --preset "$preset"
