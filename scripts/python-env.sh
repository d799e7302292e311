#!/usr/bin/env bash
# Creates the virtual environment the test harness uses (build/venv) and installs its packages.
# Idempotent: skipped when requirements.txt has not changed since the last install.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/build/venv"
requirements="$root/tests/requirements.txt"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
echo "$want" > "$stamp"
