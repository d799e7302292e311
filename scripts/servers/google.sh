# shellcheck shell=bash
# The Google emulators, both Python, from build/emulators-venv (scripts/emulators-env.sh makes it
# from scripts/emulators-requirements.txt; called here too, a no-op once done):
# * gcs: gcp-storage-emulator, the GCS JSON API on 127.0.0.1:<port>, objects stored as plain
#   files under build/test-servers/gcs/data/.cloudstorage/<bucket>/<name>, bucket bizon-buffer
#   made at start;
# * bigquery: bqemulator, BigQuery REST v2 on 127.0.0.1:<port> and the Storage Write API (gRPC)
#   on the next free port, project test-project, persistent (DuckDB file under
#   build/test-servers/bigquery/data, so a restart keeps the tables). Its gs:// URIs resolve
#   into the GCS emulator's directory (BQEMU_GCS_LOCAL_ROOT), so an object uploaded over the GCS
#   API can be loaded by a load job. It runs with HOME=build/emulators-venv/home, where
#   emulators-env.sh installed DuckDB's spatial and avro extensions (DuckDB would otherwise try
#   to download them into the user's ~/.duckdb).
# Neither checks credentials; both speak plaintext HTTP (and gRPC) only.
#
# BIZON_GOOGLE_INSTANCE=<n> (n >= 1) selects another pair of emulators, with state directories
# gcs-<n> and bigquery-<n> and ports 100*n above the defaults: each pytest-xdist worker has its
# own pair (tests/e2e/conftest_google.py), so no emulator ever serves two tests at once. `stop`
# without it stops every pair.
#
# Sourced by scripts/test-servers.sh.
# shellcheck source=SCRIPTDIR/common.sh
source "${BASH_SOURCE[0]%/*}/common.sh"

emulators_venv="${BIZON_EMULATORS_VENV:-$root/build/emulators-venv}"
google_instance="${BIZON_GOOGLE_INSTANCE:-0}"
[[ "$google_instance" =~ ^[0-9]+$ ]] ||
  die "BIZON_GOOGLE_INSTANCE must be a number, got '$google_instance'"
google_suffix=""
((google_instance == 0)) || google_suffix="-$google_instance"
google_port_offset=$((100 * google_instance))
gcs_dir="$state_root/gcs$google_suffix"
gcs_bucket=bizon-buffer
bigquery_dir="$state_root/bigquery$google_suffix"
bigquery_project=test-project

emulators_env() {
  BIZON_EMULATORS_VENV="$emulators_venv" "$root/scripts/emulators-env.sh" ||
    die "the emulators' virtualenv could not be made (scripts/emulators-env.sh)"
}

# True when process $1 is alive and its command line contains $2.
pid_runs() {
  [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2"
}

# True when GET $1 answers 2xx (no proxy: everything here is loopback).
http_ready() {
  curl --noproxy '*' -sf -o /dev/null --max-time 2 "$1"
}

# Waits until $2 answers, while process $3 lives; at most $4 s. $1 names the server, $5 its log.
wait_http_ready() {
  local name=$1 url=$2 pid=$3 limit=$4 log_file=$5 started=$SECONDS
  while ! http_ready "$url"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$log_file" >&2 || true
      die "$name: the emulator exited during startup"
    fi
    if ((SECONDS - started > limit)); then
      tail -n 30 "$log_file" >&2 || true
      die "$name: the emulator was not ready after $limit s"
    fi
    sleep 0.05
  done
}

gcs_pid() { cat "$gcs_dir/gcs.pid" 2>/dev/null || echo ""; }
gcs_port() { cat "$gcs_dir/port" 2>/dev/null || echo ""; }

gcs_running() {
  pid_runs "$(gcs_pid)" "-d $gcs_dir/data start"
}

gcs_start() {
  if gcs_running; then
    return
  fi
  emulators_env
  mkdir -p "$gcs_dir/data"
  local port pid started
  port="$(gcs_port)"
  if [[ -z "$port" ]] || ! port_is_free "$port"; then
    port="$(free_port_from $((${BIZON_GCS_PORT:-29023} + google_port_offset)))"
    echo "$port" >"$gcs_dir/port"
  fi
  log "gcs$google_suffix: starting gcp-storage-emulator on 127.0.0.1:$port"
  started=$(date +%s%N)
  # -d (an absolute path) goes before the subcommand. setsid + nohup: the emulator outlives this
  # script and holds none of its file descriptors.
  setsid nohup "$emulators_venv/bin/gcp-storage-emulator" -d "$gcs_dir/data" start \
    --host 127.0.0.1 --port "$port" --default-bucket "$gcs_bucket" -q \
    </dev/null >"$gcs_dir/server.log" 2>&1 &
  pid=$!
  echo "$pid" >"$gcs_dir/gcs.pid"
  wait_http_ready gcs "http://127.0.0.1:$port/storage/v1/b/$gcs_bucket" "$pid" 30 "$gcs_dir/server.log"
  log "gcs: ready after $(( ($(date +%s%N) - started) / 1000000 )) ms"
}

gcs_stop() {
  gcs_stop_this
  if [[ -z "${BIZON_GOOGLE_INSTANCE:-}" ]]; then google_stop_instances gcs; fi
}

gcs_stop_this() {
  if gcs_running; then
    terminate "gcs$google_suffix" "$(gcs_pid)"
  fi
  rm -f "$gcs_dir/gcs.pid"
}

# Stops the other pairs' $1 (gcs or bigquery): those the xdist workers started.
google_stop_instances() {
  local dir pid
  for dir in "$state_root/$1"-[0-9]*; do
    [[ -d "$dir" ]] || continue
    pid="$(cat "$dir/$1.pid" 2>/dev/null || echo "")"
    if pid_runs "$pid" "$dir/data"; then terminate "${dir##*/}" "$pid"; fi
    rm -f "$dir/$1.pid"
  done
}

# An outage: the process stops and starts again on the same port; stored objects stay.
gcs_restart() {
  gcs_stop_this
  gcs_start
}

gcs_env() {
  gcs_running || return 0
  echo "export STORAGE_EMULATOR_HOST=http://127.0.0.1:$(gcs_port)"
  echo "export BIZON_GCS_BUCKET=$gcs_bucket"
  # The emulator's object directory: <bucket>/<name> files (also bqemulator's gs:// root).
  echo "export BIZON_GCS_LOCAL_ROOT=$gcs_dir/data/.cloudstorage"
}

bigquery_pid() { cat "$bigquery_dir/bigquery.pid" 2>/dev/null || echo ""; }
bigquery_setting() { cat "$bigquery_dir/$1" 2>/dev/null || echo ""; }

bigquery_running() {
  pid_runs "$(bigquery_pid)" "--data-dir $bigquery_dir/data"
}

bigquery_start() {
  if bigquery_running; then
    return
  fi
  emulators_env
  mkdir -p "$bigquery_dir/data" "$gcs_dir/data/.cloudstorage"
  local port grpc_port pid started
  port="$(bigquery_setting port)"
  grpc_port="$(bigquery_setting grpc_port)"
  if [[ -z "$port" || -z "$grpc_port" ]] || ! port_is_free "$port" || ! port_is_free "$grpc_port"; then
    port="$(free_port_from $((${BIZON_BIGQUERY_PORT:-29050} + google_port_offset)))"
    grpc_port="$(free_port_from $((port + 10)))"
    echo "$port" >"$bigquery_dir/port"
    echo "$grpc_port" >"$bigquery_dir/grpc_port"
  fi
  log "bigquery$google_suffix: starting bqemulator on 127.0.0.1:$port (gRPC $grpc_port)"
  started=$(date +%s%N)
  # Through scripts/servers/bqemulator_serialized.py: bqemulator itself can deadlock when a REST
  # request and a Storage Write append reach its DuckDB connection at once (see that file).
  HOME="$emulators_venv/home" BQEMU_GCS_LOCAL_ROOT="$gcs_dir/data/.cloudstorage" \
    setsid nohup "$emulators_venv/bin/python" "$root/scripts/servers/bqemulator_serialized.py" start \
    --rest-host 127.0.0.1 \
    --rest-port "$port" --grpc-host 127.0.0.1 --grpc-port "$grpc_port" \
    --project "$bigquery_project" --persistent --data-dir "$bigquery_dir/data" \
    --log-level warning </dev/null >"$bigquery_dir/server.log" 2>&1 &
  pid=$!
  echo "$pid" >"$bigquery_dir/bigquery.pid"
  wait_http_ready bigquery "http://127.0.0.1:$port/readyz" "$pid" 60 "$bigquery_dir/server.log"
  log "bigquery: ready after $(( ($(date +%s%N) - started) / 1000000 )) ms"
}

bigquery_stop() {
  bigquery_stop_this
  if [[ -z "${BIZON_GOOGLE_INSTANCE:-}" ]]; then google_stop_instances bigquery; fi
}

bigquery_stop_this() {
  if bigquery_running; then
    terminate "bigquery$google_suffix" "$(bigquery_pid)"
  fi
  rm -f "$bigquery_dir/bigquery.pid"
}

# An outage: the process stops (its ports are free once it has exited) and starts again on the
# same ports with the same DuckDB file.
bigquery_restart() {
  bigquery_stop_this
  bigquery_start
}

bigquery_env() {
  bigquery_running || return 0
  # With a scheme, as google-cloud-bigquery reads it.
  echo "export BIGQUERY_EMULATOR_HOST=http://127.0.0.1:$(bigquery_setting port)"
  # host:port of the Storage Write API (plaintext gRPC); Google defines no variable for it.
  echo "export BIGQUERY_STORAGE_EMULATOR_HOST=127.0.0.1:$(bigquery_setting grpc_port)"
  echo "export BIZON_BIGQUERY_PROJECT=$bigquery_project"
}
