#!/usr/bin/env bash
# The README's first command: installs what bizon needs, builds the release binary and runs the
# quickstart pipeline (dummy source -> logger destination, SQLite backend, in-process queue).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" release
cd "$root/examples"
exec "$root/build/release/bizon" run quickstart.yml
