#!/usr/bin/env bash
# Benchmarks our bizon against the original (PyPI) on the same pipelines; see docs/performance.md.
#
#   bench/run.sh [--runs 5] [--scale 1] [--cases generator,python-source,...] [--update-docs]
#
# 1. bench/.venv: the original bizon (pinned, with the extras the selected cases need) and
#    matplotlib. Reinstalled only when that list changes.
# 2. The release binary: scripts/build.sh release (skip with BIZON_BIN=/path/to/bizon).
# 3. bench/bench.py with the remaining arguments: results in bench/results/<timestamp>/.
#
# Servers: unless BIZON_BENCH_KAFKA or BIZON_BENCH_POSTGRES is set, or BIZON_BENCH_SERVERS=none,
# it starts the test suite's Kafka broker and PostgreSQL on loopback (scripts/test-servers.sh; the
# first time installs them: `scripts/install-deps.sh --with-test-servers`, then Maven fetches the
# broker's jars), points the kafka, postgres, merge and members cases at them, and stops them at
# the end.
# Environment: BIZON_BENCH_KAFKA=host:port enables the kafka case (installs bizon[kafka]);
# BIZON_BENCH_POSTGRES=postgresql://user:password@host:port/database (a libpq URI) enables the
# postgres, merge and members cases (BIZON_BENCH_KAFKA too for members);
# BIGQUERY_EMULATOR_HOST, STORAGE_EMULATOR_HOST, BIZON_GCS_BUCKET and BIZON_BIGQUERY_PROJECT (as
# scripts/test-servers.sh start bigquery gcs prints them) enable the bigquery case (bizon[bigquery]);
# BIZON_BENCH_ORIGINAL overrides the pip requirement of the original (default bizon==0.6.4);
# BIZON_BENCH_DLT that of dlt, the rest, postgres, merge, parquet and duckdb cases' peer (default
# dlt[postgres,parquet,duckdb]==1.31.0, with DuckDB pinned to the version bizon links);
# BIZON_BENCH_PYTHON picks the interpreter for the venv (3.10 to 3.12; default python3).
# Not run by CI: it takes about 15 minutes at the default scale.
set -euo pipefail
bench="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$bench/.." && pwd)"
venv="$bench/.venv"
python="${BIZON_BENCH_PYTHON:-python3}"

# The original requires Python >= 3.10, < 3.13.
if ! "$python" -c 'import sys; sys.exit(not ((3, 10) <= sys.version_info[:2] < (3, 13)))'; then
  echo "bench: $python is $("$python" --version 2>&1); the original bizon needs 3.10 to 3.12." >&2
  echo "bench: set BIZON_BENCH_PYTHON to such an interpreter." >&2
  exit 1
fi

# Build dependencies and the bench tools (kcat, psql, GNU time), idempotent; python3-venv is
# checked below. With the servers started here, also what they need (PostgreSQL, Java, Maven).
own_servers=0
if [[ -z "${BIZON_BENCH_KAFKA:-}" && -z "${BIZON_BENCH_POSTGRES:-}" &&
      "${BIZON_BENCH_SERVERS:-}" != none ]]; then
  own_servers=1
  "$root/scripts/install-deps.sh" --with-bench --with-test-servers
else
  "$root/scripts/install-deps.sh" --with-bench
fi
if ((own_servers)); then
  started=()  # Stopped again at the end; servers already running stay up.
  for server in kafka postgres; do
    "$root/scripts/test-servers.sh" status "$server" 2>/dev/null || started+=("$server")
  done
  echo "bench: starting Kafka and PostgreSQL on loopback (scripts/test-servers.sh)"
  eval "$("$root/scripts/test-servers.sh" start kafka postgres)"
  if ((${#started[@]} > 0)); then
    trap '"$root/scripts/test-servers.sh" stop "${started[@]}"' EXIT
  fi
  export BIZON_BENCH_KAFKA="$BIZON_KAFKA_BOOTSTRAP"
  export BIZON_BENCH_POSTGRES="postgresql://$BIZON_PG_USER:$BIZON_PG_PASSWORD@$BIZON_PG_HOST:$BIZON_PG_PORT/$BIZON_PG_DATABASE"
fi
if ! "$python" -c 'import ensurepip' 2>/dev/null; then
  echo "bench: installing python3-venv"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends python3-venv
fi

# 1. The original, in its own venv.
wanted=()
if [[ -n "${BIZON_BENCH_KAFKA:-}" ]]; then wanted+=(kafka); fi
if [[ -n "${BIGQUERY_EMULATOR_HOST:-}" ]]; then wanted+=(bigquery); fi
extras=""
if [[ ${#wanted[@]} -gt 0 ]]; then extras="[$(IFS=,; echo "${wanted[*]}")]"; fi
original="${BIZON_BENCH_ORIGINAL:-bizon==0.6.4}"
original="${original/bizon/bizon$extras}"
requirements=("$original" "matplotlib>=3.7")
stamp="$venv/.installed"
if [[ ! -x "$venv/bin/bizon" || ! -f "$stamp" || "$(cat "$stamp")" != "${requirements[*]}" ]]; then
  echo "bench: installing ${requirements[*]} into $venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${requirements[@]}"
  echo "${requirements[*]}" > "$stamp"
fi

# 1b. dlt, the peer of the rest, postgres and merge cases, in a venv of its own (its dependencies
# and the original's need not agree).
dlt_requirement="${BIZON_BENCH_DLT:-dlt[postgres,parquet,duckdb]==1.31.0}"
# The duckdb case compares the two loaders on the same DuckDB release (scripts/duckdb.sh's).
dlt_duckdb="duckdb==1.5.6"
dlt_venv="$bench/.venv-dlt"
if [[ ! -x "$dlt_venv/bin/python" || "$(cat "$dlt_venv/.installed" 2>/dev/null)" != "$dlt_requirement $dlt_duckdb" ]]; then
  echo "bench: installing $dlt_requirement $dlt_duckdb into $dlt_venv"
  "$python" -m venv "$dlt_venv"
  "$dlt_venv/bin/python" -m pip install --quiet --disable-pip-version-check "$dlt_requirement" \
    "$dlt_duckdb"
  echo "$dlt_requirement $dlt_duckdb" > "$dlt_venv/.installed"
fi

# 2. Our release binary.
if [[ -z "${BIZON_BIN:-}" ]]; then
  echo "bench: building the release binary (scripts/build.sh release)"
  "$root/scripts/build.sh" release
  BIZON_BIN="$root/build/release/bizon"
fi

# 3. The cases.
"$venv/bin/python" "$bench/bench.py" --ours "$BIZON_BIN" --original "$venv/bin/bizon" \
  --dlt-python "$dlt_venv/bin/python" "$@"
