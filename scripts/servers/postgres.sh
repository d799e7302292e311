# shellcheck shell=bash
# PostgreSQL (Debian's postgresql package): one cluster, user bizon / password bizon, database
# bizon_test, password (scram) auth over TCP on 127.0.0.1. With the TLS material (tls.sh), also
# ssl = on and a database bizon_tls that pg_hba.conf serves over TLS only: user bizon_tls by
# password, user bizon_cert by its client certificate (BIZON_PG_TLS_*, BIZON_PG_CERT_USER).
# PostgreSQL refuses to run as root, so as root the cluster belongs to the `postgres` system user
# (created by the package), or to a `bizon-test` system user made here when that one is missing.
#
# Sourced by scripts/test-servers.sh.
# shellcheck source=SCRIPTDIR/common.sh
source "${BASH_SOURCE[0]%/*}/common.sh"
# shellcheck source=SCRIPTDIR/tls.sh
source "${BASH_SOURCE[0]%/*}/tls.sh"

pg_user_name=bizon
pg_password=bizon
pg_database=bizon_test
pg_tls_database=bizon_tls
pg_tls_user=bizon_tls
pg_tls_password=bizon-tls-secret
pg_cert_user=bizon_cert

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
  port="$(free_port_from "${BIZON_PG_PORT:-25432}")"
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

# The TLS settings of a cluster: with $1 = on, ssl = on with copies of the server's certificate
# and key (owned by the cluster's owner, as PostgreSQL demands) and the TLS-only pg_hba.conf
# lines; with off, ssl = off (the pg_hba.conf lines then match nothing). postgresql.conf includes
# bizon-tls.conf, so a cluster made before these settings existed gets them too.
postgres_configure_tls() {
  local owner file
  owner="$(pg_os_user)"
  grep -q "^include_if_exists = 'bizon-tls.conf'" "$pg_data/postgresql.conf" ||
    echo "include_if_exists = 'bizon-tls.conf'" >>"$pg_data/postgresql.conf"
  if [[ "$1" != on ]]; then
    echo "ssl = off" >"$pg_data/bizon-tls.conf"
    chown "$owner" "$pg_data/bizon-tls.conf"
    return
  fi
  for file in server.pem server.key ca.pem; do
    install -m 600 -o "$owner" "$tls_dir/$file" "$pg_data/tls-$file"
  done
  printf '%s\n' "# Written by scripts/test-servers.sh." "ssl = on" \
    "ssl_cert_file = 'tls-server.pem'" "ssl_key_file = 'tls-server.key'" \
    "ssl_ca_file = 'tls-ca.pem'" >"$pg_data/bizon-tls.conf"
  chown "$owner" "$pg_data/bizon-tls.conf"
  if ! grep -q '^# --- scripts/test-servers.sh: TLS' "$pg_data/pg_hba.conf"; then
    # First match wins: these go before initdb's lines.
    {
      echo "# --- scripts/test-servers.sh: TLS only for $pg_tls_database ---"
      echo "hostnossl $pg_tls_database all 127.0.0.1/32 reject"
      echo "hostssl $pg_tls_database $pg_cert_user 127.0.0.1/32 cert"
      echo "hostssl $pg_tls_database all 127.0.0.1/32 scram-sha-256"
      cat "$pg_data/pg_hba.conf"
    } >"$pg_data/pg_hba.conf.new"
    chown "$owner" "$pg_data/pg_hba.conf.new"
    chmod 600 "$pg_data/pg_hba.conf.new"
    mv "$pg_data/pg_hba.conf.new" "$pg_data/pg_hba.conf"
  fi
}

# The TLS database and its two users (idempotent), made over the plain connection as bizon.
postgres_tls_setup() {
  local bin port
  bin="$(pg_bin)"
  port="$(postgres_port)"
  PGPASSWORD="$pg_password" "$bin/psql" -h 127.0.0.1 -p "$port" -U "$pg_user_name" -d postgres \
    -v ON_ERROR_STOP=1 -Atq <<SQL || return 1
SELECT 'CREATE ROLE $pg_tls_user LOGIN'
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$pg_tls_user') \gexec
SELECT 'CREATE ROLE $pg_cert_user LOGIN'
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$pg_cert_user') \gexec
ALTER ROLE $pg_tls_user PASSWORD '$pg_tls_password';
SELECT 'CREATE DATABASE $pg_tls_database OWNER $pg_tls_user'
WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '$pg_tls_database') \gexec
GRANT CREATE, CONNECT ON DATABASE $pg_tls_database TO $pg_cert_user;
SQL
  PGPASSWORD="$pg_password" PGSSLMODE=require "$bin/psql" -h 127.0.0.1 -p "$port" \
    -U "$pg_user_name" -d "$pg_tls_database" -v ON_ERROR_STOP=1 -Atqc \
    "GRANT CREATE, USAGE ON SCHEMA public TO $pg_cert_user" || return 1
}

postgres_start() {
  local bin
  bin="$(pg_bin)"
  if postgres_running; then
    return
  fi
  [[ -f "$pg_data/PG_VERSION" ]] || postgres_init
  rm -f "$pg_dir/tls"
  local tls=off
  tls_make && tls=on
  postgres_configure_tls "$tls"
  local port
  port="$(postgres_port)"
  if ! port_is_free "$port"; then
    # Someone else took the port since initdb: move to a free one.
    port="$(free_port_from "$port")"
    echo "$port" > "$pg_dir/port"
    sed -i "s/^port = .*/port = $port/" "$pg_data/postgresql.conf"
  fi
  log "postgres: starting on 127.0.0.1:$port (TLS $tls)"
  if ! pg_as_owner "$bin/pg_ctl" start -D "$pg_data" -l "$pg_dir/server.log" -w -t 60 >/dev/null; then
    [[ "$tls" == on ]] || { tail -n 20 "$pg_dir/server.log" >&2; die "postgres: the server did not start"; }
    tail -n 20 "$pg_dir/server.log" >&2
    log "postgres: the server did not start with ssl = on (above); starting it without TLS"
    tls=off
    postgres_configure_tls off
    pg_as_owner "$bin/pg_ctl" start -D "$pg_data" -l "$pg_dir/server.log" -w -t 60 >/dev/null ||
      { tail -n 20 "$pg_dir/server.log" >&2; die "postgres: the server did not start"; }
  fi
  if ! PGPASSWORD="$pg_password" "$bin/psql" -h 127.0.0.1 -p "$port" -U "$pg_user_name" \
    -d postgres -Atqc "SELECT 1 FROM pg_database WHERE datname = '$pg_database'" | grep -q 1; then
    PGPASSWORD="$pg_password" "$bin/createdb" -h 127.0.0.1 -p "$port" -U "$pg_user_name" \
      "$pg_database"
  fi
  if [[ "$tls" == on ]]; then
    if postgres_tls_setup 2>"$pg_dir/tls-setup.log"; then
      echo on >"$pg_dir/tls"
    else
      cat "$pg_dir/tls-setup.log" >&2
      log "postgres: could not make the TLS database $pg_tls_database (above): no TLS settings"
    fi
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
  [[ "$(cat "$pg_dir/tls" 2>/dev/null)" == on ]] || return 0
  echo "export BIZON_PG_TLS_DATABASE=$pg_tls_database"
  echo "export BIZON_PG_TLS_USER=$pg_tls_user"
  echo "export BIZON_PG_TLS_PASSWORD=$pg_tls_password"
  echo "export BIZON_PG_CERT_USER=$pg_cert_user"
}
