#!/usr/bin/env bash
# Creates build/emulators-venv with the Google emulators the tests run (BigQuery: bqemulator, REST
# and gRPC; GCS: gcp-storage-emulator), pinned in scripts/emulators-requirements.txt, and installs
# the DuckDB extensions bqemulator needs (spatial, avro) from their PyPI packages into a home
# directory of the venv's own, build/emulators-venv/home, never the user's ~/.duckdb.
# scripts/test-servers.sh runs bqemulator with HOME set to it, so DuckDB's `INSTALL spatial`
# finds the extension there and never goes to extensions.duckdb.org.
#
# Idempotent: nothing is done when the requirements have not changed since the last install.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${BIZON_EMULATORS_VENV:-$root/build/emulators-venv}"
requirements="$root/scripts/emulators-requirements.txt"
stamp="$venv/.requirements.sha256"
want="$(cat "$requirements" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"

up_to_date() {
  [[ -x "$venv/bin/bqemulator" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]
}
up_to_date && exit 0

# scripts/test-servers.sh starts both emulators in parallel, each calling this: one installs.
if [[ -z "${BIZON_EMULATORS_ENV_LOCKED:-}" ]] && command -v flock >/dev/null; then
  mkdir -p "$(dirname "$venv")"
  BIZON_EMULATORS_ENV_LOCKED=1 exec flock -w 900 "$venv.lock" "${BASH_SOURCE[0]}" "$@"
fi
up_to_date && exit 0

echo "emulators-env: installing $requirements into $venv" >&2
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --only-binary=:all: \
  -r "$requirements"

# DuckDB keeps extensions in $HOME/.duckdb/extensions/v<version>/<platform>/; INSTALL '<file>'
# copies a local extension file there.
mkdir -p "$venv/home"
HOME="$venv/home" "$venv/bin/python" - <<'PY'
import pathlib

import duckdb
import duckdb_extension_avro
import duckdb_extension_spatial

for module in (duckdb_extension_spatial, duckdb_extension_avro):
    folder = pathlib.Path(module.__file__).parent / "extensions" / f"v{duckdb.__version__}"
    files = sorted(folder.glob("*.duckdb_extension"))
    if not files:
        raise SystemExit(f"emulators-env: no extension file for duckdb {duckdb.__version__} in {folder}")
    duckdb.execute(f"INSTALL '{files[0]}'")
installed = duckdb.execute(
    "SELECT extension_name FROM duckdb_extensions() WHERE installed AND extension_name IN ('spatial', 'avro')"
).fetchall()
if len(installed) != 2:
    raise SystemExit(f"emulators-env: DuckDB extensions not installed: {installed}")
PY
echo "$want" >"$stamp"
