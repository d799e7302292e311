#!/usr/bin/env bash
# Starts, stops and describes the servers the tests talk to, each on loopback, with its state
# under build/test-servers/<server>/ so a `git clean` or a fresh clone starts from nothing.
#
#   scripts/test-servers.sh start   [server...]   start (idempotent; quick when already running)
#   scripts/test-servers.sh stop    [server...]   stop  (idempotent)
#   scripts/test-servers.sh restart [server...]   stop then start (the fault tests use it)
#   scripts/test-servers.sh env     [server...]   print `export NAME=value` lines for the tests
#   scripts/test-servers.sh status  [server...]   exit 0 when every named server is running
#
# With no server named, the command applies to all of them. `start` also prints the env lines, so
# `eval "$(scripts/test-servers.sh start)"` starts everything and exports its connection settings.
#
# Servers: postgres (BIZON_PG_*), kafka (BIZON_KAFKA_BOOTSTRAP), rabbitmq (BIZON_RABBITMQ_*),
# bigquery (BIGQUERY_EMULATOR_HOST, BIGQUERY_STORAGE_EMULATOR_HOST, BIZON_BIGQUERY_*) and gcs
# (STORAGE_EMULATOR_HOST, BIZON_GCS_*): the Google emulators, from build/emulators-venv; s3
# (BIZON_S3_*): versitygw, an S3 server built from its pinned Go module.
# postgres, kafka and rabbitmq also run TLS (and SASL) listeners with a throw-away CA made by
# openssl (BIZON_TLS_*, BIZON_PG_TLS_*, BIZON_KAFKA_SASL_*, BIZON_KAFKA_SSL_BOOTSTRAP,
# BIZON_RABBITMQ_TLS_PORT); when those cannot start, the plain servers start as before.
# `start` with several servers starts them in parallel. A restart is a real outage: the process
# stops, then starts again on the same port with the same data.
#
# Layout: this file is the entry point (the commands, the lock, the parallel start); the servers
# live in scripts/servers/: postgres.sh, kafka.sh, rabbitmq.sh, google.sh (bigquery and gcs,
# which share the emulators' virtualenv and helpers) and s3.sh. tls.sh makes the throw-away CA, and
# common.sh holds the helpers they all use (log, die, port_is_free, free_port_from, terminate)
# and the paths (root, state_root).
#
# Adding a server: write scripts/servers/<file>.sh with <server>_start (idempotent; returns once
# the server serves, dies when it cannot start), <server>_stop (idempotent), <server>_restart (a
# real outage, as above), <server>_env (the `export` lines while the server runs, nothing
# otherwise) and <server>_running (exit 0 while it runs); source the file below and add the
# server's name to `servers`. Diagnostics go to stderr; stdout carries only env lines.
set -euo pipefail

# shellcheck source=SCRIPTDIR/servers/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/servers/common.sh"
# Sourced by absolute path, so each file finds its neighbours as ${BASH_SOURCE[0]%/*}, without a
# dirname process (the tests run this script for every fixture).
# shellcheck source=SCRIPTDIR/servers/tls.sh
source "$root/scripts/servers/tls.sh"
# shellcheck source=SCRIPTDIR/servers/postgres.sh
source "$root/scripts/servers/postgres.sh"
# shellcheck source=SCRIPTDIR/servers/kafka.sh
source "$root/scripts/servers/kafka.sh"
# shellcheck source=SCRIPTDIR/servers/rabbitmq.sh
source "$root/scripts/servers/rabbitmq.sh"
# shellcheck source=SCRIPTDIR/servers/google.sh
source "$root/scripts/servers/google.sh"
# shellcheck source=SCRIPTDIR/servers/s3.sh
source "$root/scripts/servers/s3.sh"

servers=(postgres kafka rabbitmq bigquery gcs s3)

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//' >&2
  exit 2
}

command="${1:-}"
[[ -n "$command" ]] || usage
shift
selected=("$@")
((${#selected[@]} > 0)) || selected=("${servers[@]}")
for server in "${selected[@]}"; do
  [[ " ${servers[*]} " == *" $server "* ]] || die "unknown server '$server' (known: ${servers[*]})"
done

# One start, stop or restart at a time per state directory: two test sessions starting the same
# server together would launch it twice on the same data. The script runs again under flock, which
# holds the lock itself (-o), so the servers it launches do not inherit the lock's descriptor.
if [[ "$command" =~ ^(start|stop|restart)$ && -z "${BIZON_TEST_SERVERS_LOCKED:-}" ]] &&
  command -v flock >/dev/null; then
  mkdir -p "$state_root"
  BIZON_TEST_SERVERS_LOCKED=1 exec flock -o -w 600 "$state_root/.lock" "${BASH_SOURCE[0]}" \
    "$command" "$@"
fi

case "$command" in
  start)
    # In parallel: a cold start of all of them takes the time of the slowest, not of the sum.
    pids=()
    for server in "${selected[@]}"; do
      "${server}_start" &
      pids+=($!)
    done
    failed=0
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    ((failed == 0)) || die "start failed (see above)"
    for server in "${selected[@]}"; do "${server}_env"; done
    tls_env
    ;;
  stop)
    for server in "${selected[@]}"; do "${server}_stop"; done
    ;;
  restart)
    for server in "${selected[@]}"; do "${server}_restart"; done
    ;;
  env)
    for server in "${selected[@]}"; do "${server}_env"; done
    tls_env
    ;;
  status)
    for server in "${selected[@]}"; do "${server}_running" || exit 1; done
    ;;
  *) usage ;;
esac
