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
# Adding a server: write <server>_start, <server>_stop, <server>_env and <server>_running below
# (same contracts as the postgres ones) and add its name to `servers`. Diagnostics go to stderr;
# stdout carries only env lines.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state_root="${BIZON_TEST_SERVERS_DIR:-$root/build/test-servers}"
servers=(postgres)

log() { echo "test-servers: $*" >&2; }
die() { log "$*"; exit 1; }

# True when nothing listens on 127.0.0.1:$1.
port_is_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# The first free port at or after $1.
free_port_from() {
  local port=$1
  while ! port_is_free "$port"; do
    port=$((port + 1))
    ((port < $1 + 100)) || die "no free port in $1..$((port - 1))"
  done
  echo "$port"
}

# ------------------------------------------------------------------------------------------------
# PostgreSQL (Debian's postgresql package): one cluster, user bizon / password bizon, database
# bizon_test, password (scram) auth over TCP on 127.0.0.1. PostgreSQL refuses to run as root, so
# as root the cluster belongs to the `postgres` system user (created by the package), or to a
# `bizon-test` system user made here when that one is missing.

pg_user_name=bizon
pg_password=bizon
pg_database=bizon_test

pg_bin() {
  local candidate
  for candidate in "${BIZON_PG_BIN:-}" /usr/lib/postgresql/*/bin; do
    if [[ -n "$candidate" && -x "$candidate/pg_ctl" ]]; then
      echo "$candidate"
      return
    fi
  done
  die "PostgreSQL server binaries not found (apt-get install postgresql, or set BIZON_PG_BIN)"
}

# The OS user that owns and runs the cluster.
pg_os_user() {
  if [[ $(id -u) -ne 0 ]]; then
    id -un
  elif id postgres >/dev/null 2>&1; then
    echo postgres
  else
    id bizon-test >/dev/null 2>&1 ||
      useradd --system --no-create-home --shell /usr/sbin/nologin bizon-test
    echo bizon-test
  fi
}

# The cluster's directory: build/test-servers/pg, unless the owner cannot reach it (a checkout
# under a private home directory), then a directory of this checkout's own under /tmp.
pg_state_dir() {
  local preferred="$state_root/pg" owner
  owner="$(pg_os_user)"
  mkdir -p "$preferred"
  if [[ "$owner" == "$(id -un)" ]] || runuser -u "$owner" -- test -x "$preferred" 2>/dev/null; then
    echo "$preferred"
  else
    local fallback
    fallback="/tmp/bizon-test-servers-$(printf '%s' "$state_root" | sha256sum | cut -c1-12)/pg"
    mkdir -p "$fallback"
    chmod 755 "$(dirname "$fallback")"
    echo "$fallback"
  fi
}

# Runs a command as the cluster's owner.
pg_as_owner() {
  local owner
  owner="$(pg_os_user)"
  if [[ "$owner" == "$(id -un)" ]]; then
    "$@"
  else
    runuser -u "$owner" -- "$@"
  fi
}

pg_dir=""
pg_data=""
pg_locate() {
  if [[ -z "$pg_dir" ]]; then
    pg_dir="$(pg_state_dir)"
    pg_data="$pg_dir/data"
  fi
}

postgres_running() {
  pg_locate
  [[ -f "$pg_data/PG_VERSION" ]] && pg_as_owner "$(pg_bin)/pg_ctl" status -D "$pg_data" >/dev/null 2>&1
}

postgres_port() {
  pg_locate
  cat "$pg_dir/port" 2>/dev/null || echo ""
}

postgres_init() {
  local bin owner port
  bin="$(pg_bin)"
  owner="$(pg_os_user)"
  pg_locate
  rm -rf "$pg_data"
  port="$(free_port_from "${BIZON_PG_PORT:-55432}")"
  echo "$port" > "$pg_dir/port"
  printf '%s\n' "$pg_password" > "$pg_dir/pwfile"
  chown -R "$owner" "$pg_dir"
  log "postgres: initdb in $pg_data (owner $owner, port $port)"
  pg_as_owner "$bin/initdb" -D "$pg_data" -U "$pg_user_name" --pwfile="$pg_dir/pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 \
    >"$pg_dir/initdb.log" 2>&1 || { cat "$pg_dir/initdb.log" >&2; die "postgres: initdb failed"; }
  # A test server: durability off (a crash of the test machine loses nothing that matters), and
  # enough connections for concurrent test runs.
  cat >>"$pg_data/postgresql.conf" <<EOF
# --- scripts/test-servers.sh ---
listen_addresses = '127.0.0.1'
port = $port
# TCP only: no socket path to outgrow the 107-byte limit in a deep checkout.
unix_socket_directories = ''
max_connections = 200
fsync = off
full_page_writes = off
synchronous_commit = off
logging_collector = off
EOF
}

postgres_start() {
  local bin
  bin="$(pg_bin)"
  if postgres_running; then
    return
  fi
  [[ -f "$pg_data/PG_VERSION" ]] || postgres_init
  local port
  port="$(postgres_port)"
  if ! port_is_free "$port"; then
    # Someone else took the port since initdb: move to a free one.
    port="$(free_port_from "$port")"
    echo "$port" > "$pg_dir/port"
    sed -i "s/^port = .*/port = $port/" "$pg_data/postgresql.conf"
  fi
  log "postgres: starting on 127.0.0.1:$port"
  pg_as_owner "$bin/pg_ctl" start -D "$pg_data" -l "$pg_dir/server.log" -w -t 60 >/dev/null ||
    { tail -n 20 "$pg_dir/server.log" >&2; die "postgres: the server did not start"; }
  if ! PGPASSWORD="$pg_password" "$bin/psql" -h 127.0.0.1 -p "$port" -U "$pg_user_name" \
    -d postgres -Atqc "SELECT 1 FROM pg_database WHERE datname = '$pg_database'" | grep -q 1; then
    PGPASSWORD="$pg_password" "$bin/createdb" -h 127.0.0.1 -p "$port" -U "$pg_user_name" \
      "$pg_database"
  fi
}

postgres_stop() {
  if postgres_running; then
    log "postgres: stopping"
    pg_as_owner "$(pg_bin)/pg_ctl" stop -D "$pg_data" -m fast -w -t 60 >/dev/null
  fi
}

# A restart that a running client sees as an outage: connections are cut (fast shutdown).
postgres_restart() {
  if postgres_running; then
    log "postgres: restarting (fast)"
    pg_as_owner "$(pg_bin)/pg_ctl" restart -D "$pg_data" -m fast -l "$pg_dir/server.log" -w \
      -t 60 >/dev/null
  else
    postgres_start
  fi
}

postgres_env() {
  postgres_running || return 0
  echo "export BIZON_PG_HOST=127.0.0.1"
  echo "export BIZON_PG_PORT=$(postgres_port)"
  echo "export BIZON_PG_USER=$pg_user_name"
  echo "export BIZON_PG_PASSWORD=$pg_password"
  echo "export BIZON_PG_DATABASE=$pg_database"
}

# ------------------------------------------------------------------------------------------------

usage() {
  sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
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

case "$command" in
  start)
    for server in "${selected[@]}"; do "${server}_start"; done
    for server in "${selected[@]}"; do "${server}_env"; done
    ;;
  stop)
    for server in "${selected[@]}"; do "${server}_stop"; done
    ;;
  restart)
    for server in "${selected[@]}"; do "${server}_restart"; done
    ;;
  env)
    for server in "${selected[@]}"; do "${server}_env"; done
    ;;
  status)
    for server in "${selected[@]}"; do "${server}_running" || exit 1; done
    ;;
  *) usage ;;
esac
