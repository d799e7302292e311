#!/usr/bin/env bash
# Creates the virtual environments the test harness uses and installs their packages:
# * build/venv: pytest and the test clients (tests/requirements.txt);
# * build/original-venv: the original bizon from PyPI with its postgres and bigquery extras
#   (tests/e2e/test_original_state.py runs it against ours on one backend; the bench runs it
#   against the BigQuery and GCS emulators).
# * build/dlt-venv: dlt, the peer tests/e2e/test_rest_api_dlt.py compares the rest_api source
#   with (tests/dlt-requirements.txt);
# * build/lint-venv: clang-tidy for scripts/lint.sh (scripts/lint-requirements.txt): its
#   wheel is a newer clang-tidy than Debian 12's, which skips the system headers' code and so
#   checks a file in a third of the time.
# Idempotent: each is skipped when its requirements have not changed since its last install.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# install <venv> <stamp text> <pip arguments...>
install() {
  local venv="$1" want="$2"
  shift 2
  local stamp="$venv/.requirements.sha256"
  if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
  echo "$want" > "$stamp"
}

requirements="$root/tests/requirements.txt"
install "$root/build/venv" "$(sha256sum "$requirements" | cut -d' ' -f1)" -r "$requirements"
dlt_requirements="$root/tests/dlt-requirements.txt"
install "$root/build/dlt-venv" "$(sha256sum "$dlt_requirements" | cut -d' ' -f1)" \
  -r "$dlt_requirements"
lint_requirements="$root/scripts/lint-requirements.txt"
install "$root/build/lint-venv" "$(sha256sum "$lint_requirements" | cut -d' ' -f1)" \
  -r "$lint_requirements"

# The original requires Python 3.10 to 3.12; without such a python3 its tests skip, saying so.
original="bizon[postgres,bigquery]==0.6.4"
if python3 -c 'import sys; sys.exit(not ((3, 10) <= sys.version_info[:2] < (3, 13)))'; then
  install "$root/build/original-venv" "$original" "$original"
else
  echo "python-env: $(python3 --version 2>&1) cannot run the original bizon (3.10 to 3.12);" \
    "skipping build/original-venv" >&2
fi
