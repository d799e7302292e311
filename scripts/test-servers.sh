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
# (STORAGE_EMULATOR_HOST, BIZON_GCS_*): the Google emulators, from build/emulators-venv.
# postgres, kafka and rabbitmq also run TLS (and SASL) listeners with a throw-away CA made by
# openssl (BIZON_TLS_*, BIZON_PG_TLS_*, BIZON_KAFKA_SASL_*, BIZON_KAFKA_SSL_BOOTSTRAP,
# BIZON_RABBITMQ_TLS_PORT); when those cannot start, the plain servers start as before.
# `start` with several servers starts them in parallel. A restart is a real outage: the process
# stops, then starts again on the same port with the same data.
#
# Adding a server: write <server>_start, <server>_stop, <server>_restart, <server>_env and
# <server>_running below (same contracts as the postgres ones) and add its name to `servers`.
# Diagnostics go to stderr; stdout carries only env lines.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state_root="${BIZON_TEST_SERVERS_DIR:-$root/build/test-servers}"
servers=(postgres kafka rabbitmq bigquery gcs)

log() { echo "test-servers: $*" >&2; }
die() { log "$*"; exit 1; }

# Default ports sit below 32768, out of Linux's ephemeral range (32768-60999), so a client
# connection's local port can never be holding a server's port when it starts.

# True when nothing listens on 127.0.0.1:$1.
port_is_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Stops server $1's process $2: SIGTERM (a clean shutdown), then SIGKILL if it is still there
# after 30 s. Returns once the process is gone.
terminate() {
  local name=$1 pid=$2 waited=0
  log "$name: stopping (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null && ((waited < 300)); do
    sleep 0.1
    waited=$((waited + 1))
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name: no clean shutdown after 30 s, killing it"
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
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
# TLS material for the secure listeners below: a throw-away CA made with openssl once per state
# directory, under build/test-servers/tls/ (BIZON_TLS_* in the env output):
#   ca.pem                      the CA the servers' certificate chains to (clients trust this)
#   server.pem, server.key      the servers' certificate (localhost, 127.0.0.1) and key
#   server.p12                  the same as PKCS#12 (Kafka's keystore, password tls_store_password)
#   client.pem, client.key      a client certificate from the same CA, CN bizon_cert (the
#                               PostgreSQL user that logs in by certificate)
#   other-ca.pem, other-client.pem, other-client.key
#                               a second CA and a client certificate from it, which no server
#                               trusts (the tests' wrong credentials)
# The secure listeners are an addition: when the material or a listener cannot be made, the
# server starts as before without it, says why on stderr, and its env lines leave out the
# secure settings (so the tests that need them skip, or fail under CI).

tls_dir="$state_root/tls"
tls_store_password=bizon-keystore

# Writes the material into the current directory (stops at the first failing command).
tls_generate() {
  local ca
  for ca in ca other-ca; do
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$ca.key" -out "$ca.pem" -days 3650 \
      -subj "/CN=bizon test $ca" -addext "basicConstraints=critical,CA:true" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" || return 1
  done
  tls_leaf server ca localhost "subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth" || return 1
  tls_leaf client ca bizon_cert "extendedKeyUsage=clientAuth" || return 1
  tls_leaf other-client other-ca bizon_cert "extendedKeyUsage=clientAuth" || return 1
  openssl pkcs12 -export -in server.pem -inkey server.key -name server \
    -passout "pass:$tls_store_password" -out server.p12 || return 1
  rm -f ./*.csr ./*.ext ./*.srl
  chmod 600 ./*.key server.p12
}

# tls_leaf <name> <ca> <common name> <x509v3 extensions>: a key and a certificate signed by <ca>.
tls_leaf() {
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$3" || return 1
  printf '%s\n' "$4" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 3650 \
    -sha256 -extfile "$1.ext" -out "$1.pem"
}

# Makes the material once; returns non-zero (after saying why) when it cannot.
tls_make() {
  [[ -f "$tls_dir/complete" ]] && return 0
  command -v openssl >/dev/null || {
    log "tls: openssl not found (apt-get install openssl): no TLS listeners"
    return 1
  }
  mkdir -p "$state_root"
  (
    # One maker at a time: the servers start in parallel and each asks for the material.
    exec 9>"$state_root/.tls.lock"
    flock 9
    [[ -f "$tls_dir/complete" ]] && exit 0
    work="$tls_dir.new"
    rm -rf "$work"
    mkdir -p "$work"
    cd "$work" || exit 1
    if ! tls_generate >"$work/openssl.log" 2>&1; then
      tail -n 20 "$work/openssl.log" >&2
      log "tls: openssl could not make the test CA and certificates: no TLS listeners"
      exit 1
    fi
    touch complete
    rm -rf "$tls_dir"
    mv "$work" "$tls_dir"
    log "tls: made a test CA and certificates in $tls_dir"
  )
}

tls_env() {
  [[ -f "$tls_dir/complete" ]] || return 0
  echo "export BIZON_TLS_CA=$tls_dir/ca.pem"
  echo "export BIZON_TLS_CLIENT_CERT=$tls_dir/client.pem"
  echo "export BIZON_TLS_CLIENT_KEY=$tls_dir/client.key"
  echo "export BIZON_TLS_OTHER_CA=$tls_dir/other-ca.pem"
  echo "export BIZON_TLS_OTHER_CLIENT_CERT=$tls_dir/other-client.pem"
  echo "export BIZON_TLS_OTHER_CLIENT_KEY=$tls_dir/other-client.key"
}

# ------------------------------------------------------------------------------------------------
# PostgreSQL (Debian's postgresql package): one cluster, user bizon / password bizon, database
# bizon_test, password (scram) auth over TCP on 127.0.0.1. With the TLS material (above), also
# ssl = on and a database bizon_tls that pg_hba.conf serves over TLS only: user bizon_tls by
# password, user bizon_cert by its client certificate (BIZON_PG_TLS_*, BIZON_PG_CERT_USER).
# PostgreSQL refuses to run as root, so as root the cluster belongs to the `postgres` system user (created by the package), or to a
# `bizon-test` system user made here when that one is missing.

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

# ------------------------------------------------------------------------------------------------
# Kafka: the Apache broker's jars (org.apache.kafka:kafka_2.13 and its runtime dependencies, which
# Maven resolves from scripts/kafka/pom.xml once into build/kafka/<version>/libs), run on Java 17
# as one KRaft node that is both broker and controller. PLAINTEXT on 127.0.0.1:<port>, controller
# on the next free port, data and logs under build/test-servers/kafka/. Settings for one node:
# every internal topic has one replica, topics are created on first use with one partition, and a
# new consumer group starts without the usual 3 s wait for more members.
#
# With the TLS material (above), three more listeners on the next free ports: SASL_SSL and
# SASL_PLAINTEXT (mechanisms PLAIN, from the JAAS line in server.properties, and SCRAM-SHA-256 and
# SCRAM-SHA-512, whose credentials kafka-configs' ConfigCommand stores in the cluster metadata
# after the first start), both for user bizon / kafka_sasl_password, and SSL that requires a
# client certificate from the test CA (BIZON_KAFKA_SASL_SSL_BOOTSTRAP,
# BIZON_KAFKA_SASL_PLAINTEXT_BOOTSTRAP, BIZON_KAFKA_SSL_BOOTSTRAP, BIZON_KAFKA_SASL_*). No
# authorizer: an authenticated client may do anything, as on the PLAINTEXT listener.

kafka_version="${BIZON_KAFKA_VERSION:-4.1.1}"
kafka_home="$root/build/kafka/$kafka_version"
kafka_dir="$state_root/kafka"
kafka_sasl_user=bizon
kafka_sasl_password=bizon-sasl-secret
kafka_secure_listeners=(sasl_ssl sasl_plaintext ssl)

kafka_java() {
  local candidate
  for candidate in "${JAVA_HOME:+$JAVA_HOME/bin/java}" /usr/lib/jvm/java-17-openjdk-amd64/bin/java \
    "$(command -v java 2>/dev/null || true)"; do
    if [[ -n "$candidate" && -x "$candidate" ]]; then
      echo "$candidate"
      return
    fi
  done
  die "kafka: Java not found (apt-get install openjdk-17-jre-headless, or set JAVA_HOME)"
}

# Copies the broker's jars into build/kafka/<version>/libs the first time; later calls only check
# the marker file written when the copy completed.
kafka_fetch() {
  [[ -f "$kafka_home/complete" ]] && return
  command -v mvn >/dev/null || die "kafka: mvn not found (apt-get install maven)"
  log "kafka: fetching the $kafka_version broker jars with Maven into $kafka_home"
  rm -rf "$kafka_home"
  mkdir -p "$kafka_home"
  mvn -B -q -f "$root/scripts/kafka/pom.xml" -Dkafka.version="$kafka_version" \
    -DincludeScope=runtime -DoutputDirectory="$kafka_home/libs" \
    dependency:copy-dependencies >"$kafka_home/mvn.log" 2>&1 ||
    { tail -n 30 "$kafka_home/mvn.log" >&2; die "kafka: Maven could not fetch the broker"; }
  [[ -f "$kafka_home/libs/kafka_2.13-$kafka_version.jar" ]] ||
    die "kafka: Maven ran but kafka_2.13-$kafka_version.jar is missing from $kafka_home/libs"
  # The SLF4J binding is pinned in the pom; another broker version may bring another log4j.
  local core binding
  core="$(cd "$kafka_home/libs" && ls log4j-core-*.jar 2>/dev/null | sed 's/^log4j-core-//')"
  binding="$(cd "$kafka_home/libs" && ls log4j-slf4j-impl-*.jar 2>/dev/null | sed 's/^log4j-slf4j-impl-//')"
  [[ "$core" == "$binding" ]] ||
    log "kafka: warning: log4j-core $core but log4j-slf4j-impl $binding (set log4j.version in scripts/kafka/pom.xml)"
  touch "$kafka_home/complete"
}

kafka_pid() {
  cat "$kafka_dir/kafka.pid" 2>/dev/null || echo ""
}

kafka_running() {
  local pid
  pid="$(kafka_pid)"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "kafka.Kafka $kafka_dir/"
}

kafka_port() {
  cat "$kafka_dir/port" 2>/dev/null || echo ""
}

# The ports of the secure listeners: kept from the last start while free, else all three moved
# to the free ports after the controller's.
kafka_secure_ports() {
  local name next kept=1
  for name in "${kafka_secure_listeners[@]}"; do
    next="$(cat "$kafka_dir/${name}_port" 2>/dev/null || true)"
    [[ -n "$next" ]] && port_is_free "$next" || kept=0
  done
  ((kept)) && return
  next=$(($(cat "$kafka_dir/controller_port") + 1))
  for name in "${kafka_secure_listeners[@]}"; do
    next="$(free_port_from "$next")"
    echo "$next" >"$kafka_dir/${name}_port"
    next=$((next + 1))
  done
}

# Writes server.properties for the ports in $kafka_dir/port and $kafka_dir/controller_port, and
# with $1 = on also the secure listeners on the ports in $kafka_dir/<listener>_port.
kafka_write_config() {
  local port controller_port listeners advertised map secure=""
  port="$(cat "$kafka_dir/port")"
  controller_port="$(cat "$kafka_dir/controller_port")"
  listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port"
  advertised="PLAINTEXT://127.0.0.1:$port"
  map="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
  if [[ "${1:-off}" == on ]]; then
    local name upper address
    for name in "${kafka_secure_listeners[@]}"; do
      upper="${name^^}"
      address="$upper://127.0.0.1:$(cat "$kafka_dir/${name}_port")"
      listeners+=",$address"
      advertised+=",$address"
      map+=",$upper:$upper"
    done
    local plain="org.apache.kafka.common.security.plain.PlainLoginModule required"
    plain+=" user_$kafka_sasl_user=\"$kafka_sasl_password\";"
    local scram="org.apache.kafka.common.security.scram.ScramLoginModule required;"
    secure="# The secure listeners (TLS material in $tls_dir).
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
ssl.keystore.type=PKCS12
ssl.keystore.location=$tls_dir/server.p12
ssl.keystore.password=$tls_store_password
ssl.truststore.type=PEM
ssl.truststore.location=$tls_dir/ca.pem
listener.name.ssl.ssl.client.auth=required"
    for name in sasl_ssl sasl_plaintext; do
      secure+="
listener.name.$name.plain.sasl.jaas.config=$plain
listener.name.$name.scram-sha-256.sasl.jaas.config=$scram
listener.name.$name.scram-sha-512.sasl.jaas.config=$scram"
    done
  fi
  cat >"$kafka_dir/server.properties" <<PROPERTIES
# Written by scripts/test-servers.sh: one KRaft node, broker and controller, on loopback.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller_port
listeners=$listeners
advertised.listeners=$advertised
listener.security.protocol.map=$map
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$kafka_dir/data
num.partitions=1
default.replication.factor=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
log.retention.hours=24
log.segment.delete.delay.ms=1000
log.segment.bytes=268435456
$secure
PROPERTIES
}

# Stores the SCRAM credentials of user bizon in the cluster metadata (kafka-configs), once per
# storage directory; the broker must be running.
kafka_scram_users() {
  [[ "$(cat "$kafka_dir/scram_users" 2>/dev/null)" == "$kafka_sasl_user" ]] && return 0
  local mechanism
  : >"$kafka_dir/logs/scram.log"
  # One mechanism per request: the broker refuses two changes of one user's credentials in one.
  for mechanism in SCRAM-SHA-256 SCRAM-SHA-512; do
    "$(kafka_java)" -Xmx256m -XX:TieredStopAtLevel=1 -cp "$kafka_home/libs/*" \
      -Dlog4j2.configurationFile="$root/scripts/kafka/log4j2.xml" \
      -Dkafka.logs.dir="$kafka_dir/logs" kafka.admin.ConfigCommand \
      --bootstrap-server "127.0.0.1:$(kafka_port)" --alter \
      --add-config "$mechanism=[password=$kafka_sasl_password]" --entity-type users \
      --entity-name "$kafka_sasl_user" >>"$kafka_dir/logs/scram.log" 2>&1 || return 1
  done
  echo "$kafka_sasl_user" >"$kafka_dir/scram_users"
}

# A first start: ports, config, and a storage directory formatted with a new cluster id.
kafka_init() {
  local port controller_port cluster_id
  rm -rf "$kafka_dir"
  mkdir -p "$kafka_dir/logs"
  port="$(free_port_from "${BIZON_KAFKA_PORT:-29092}")"
  controller_port="$(free_port_from $((port + 1)))"
  echo "$port" >"$kafka_dir/port"
  echo "$controller_port" >"$kafka_dir/controller_port"
  kafka_write_config off
  # A Kafka Uuid: 16 random bytes in unpadded URL-safe base64 that does not start with '-'.
  cluster_id="$(python3 -c 'import base64, os
while True:
    text = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
    if not text.startswith("-"):
        print(text)
        break')"
  log "kafka: formatting $kafka_dir/data (cluster $cluster_id, port $port, controller $controller_port)"
  "$(kafka_java)" -Xmx256m -cp "$kafka_home/libs/*" -Dlog4j2.configurationFile="$root/scripts/kafka/log4j2.xml" \
    -Dkafka.logs.dir="$kafka_dir/logs" kafka.tools.StorageTool format -t "$cluster_id" \
    -c "$kafka_dir/server.properties" >"$kafka_dir/format.log" 2>&1 ||
    { cat "$kafka_dir/format.log" >&2; die "kafka: formatting the storage failed"; }
}

# Launches the broker and waits until it serves metadata. Returns 1 when it exited during startup
# (after showing its log), dies when it is still not ready after 60 s.
kafka_launch() {
  local port pid started=$SECONDS
  port="$(kafka_port)"
  mkdir -p "$kafka_dir/logs"
  # setsid + nohup: the broker outlives this script and the test process that ran it, and holds
  # none of their file descriptors (a caller reading our stdout would otherwise wait for it).
  setsid nohup "$(kafka_java)" -Xmx512m -Xms256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$root/scripts/kafka/log4j2.xml" \
    -Dkafka.logs.dir="$kafka_dir/logs" -cp "$kafka_home/libs/*" \
    kafka.Kafka "$kafka_dir/server.properties" \
    </dev/null >"$kafka_dir/logs/stdout.log" 2>&1 &
  pid=$!
  echo "$pid" >"$kafka_dir/kafka.pid"
  while ! python3 "$root/scripts/kafka/ready.py" "$port" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$kafka_dir/logs/stdout.log" "$kafka_dir/logs/server.log" >&2 || true
      return 1
    fi
    if ((SECONDS - started > 60)); then
      tail -n 30 "$kafka_dir/logs/server.log" >&2 || true
      kafka_stop
      die "kafka: the broker was not ready after 60 s"
    fi
    sleep 0.3
  done
  log "kafka: ready after $((SECONDS - started)) s"
}

kafka_start() {
  if kafka_running; then
    return
  fi
  kafka_fetch
  [[ -f "$kafka_dir/data/meta.properties" ]] || kafka_init
  local port controller_port
  port="$(kafka_port)"
  controller_port="$(cat "$kafka_dir/controller_port")"
  if ! port_is_free "$port" || ! port_is_free "$controller_port"; then
    # Someone else took a port since the last start: move to free ones (the quorum is static and
    # read from server.properties, so the data stays valid).
    port="$(free_port_from "$port")"
    controller_port="$(free_port_from $((port + 1)))"
    echo "$port" >"$kafka_dir/port"
    echo "$controller_port" >"$kafka_dir/controller_port"
  fi
  rm -f "$kafka_dir/secure"
  local secure=off
  if tls_make; then
    kafka_secure_ports
    secure=on
  fi
  kafka_write_config "$secure"
  log "kafka: starting $kafka_version on 127.0.0.1:$port (TLS/SASL listeners $secure)"
  if ! kafka_launch; then
    [[ "$secure" == on ]] || die "kafka: the broker exited during startup"
    log "kafka: the broker exited during startup with the TLS/SASL listeners (above); starting it without them"
    secure=off
    kafka_write_config off
    kafka_launch || die "kafka: the broker exited during startup"
  fi
  if [[ "$secure" == on ]]; then
    if kafka_scram_users; then
      echo on >"$kafka_dir/secure"
    else
      tail -n 20 "$kafka_dir/logs/scram.log" >&2 || true
      log "kafka: could not store the SCRAM credentials (above): no TLS/SASL settings"
    fi
  fi
}

kafka_stop() {
  if kafka_running; then
    # A clean shutdown takes a second or two (it flushes and closes the logs).
    terminate kafka "$(kafka_pid)"
  fi
  rm -f "$kafka_dir/kafka.pid"
}

# A real outage: the JVM stops (clients lose their connections), then starts again on the same
# ports with the same data.
kafka_restart() {
  kafka_stop
  kafka_start
}

kafka_env() {
  kafka_running || return 0
  echo "export BIZON_KAFKA_BOOTSTRAP=127.0.0.1:$(kafka_port)"
  [[ "$(cat "$kafka_dir/secure" 2>/dev/null)" == on ]] || return 0
  local name
  for name in "${kafka_secure_listeners[@]}"; do
    echo "export BIZON_KAFKA_${name^^}_BOOTSTRAP=127.0.0.1:$(cat "$kafka_dir/${name}_port")"
  done
  echo "export BIZON_KAFKA_SASL_USER=$kafka_sasl_user"
  echo "export BIZON_KAFKA_SASL_PASSWORD=$kafka_sasl_password"
}

# ------------------------------------------------------------------------------------------------
# RabbitMQ (Debian's rabbitmq-server): a node of our own, bizon-test@localhost, with its config,
# data, logs and Erlang cookie under build/test-servers/rabbitmq/, AMQP on 127.0.0.1:<port>, and
# its own epmd on a private port, so neither a system RabbitMQ nor an epmd left over by anything
# else can clash with it. No plugins (so no management listener). User bizon / password bizon,
# created by the node's first boot; a run as root runs the node as root (the real scripts under
# /usr/lib/rabbitmq/bin; Debian's wrappers in /usr/sbin would switch to the rabbitmq user).
# With the TLS material (above), also an AMQPS listener on the next free port that requires a
# client certificate from the test CA (BIZON_RABBITMQ_TLS_PORT); the user still logs in with its
# password over it.

rabbitmq_user_name=bizon
rabbitmq_password=bizon
rabbitmq_node=bizon-test@localhost
rabbitmq_dir="$state_root/rabbitmq"
# Erlang distribution (node <-> CLI) listens on loopback only, like everything else here.
rabbitmq_loopback_dist="-kernel inet_dist_use_interface {127,0,0,1}"

rabbitmq_bin() {
  local candidate
  for candidate in "${BIZON_RABBITMQ_BIN:-}" /usr/lib/rabbitmq/bin; do
    if [[ -n "$candidate" && -x "$candidate/rabbitmq-server" ]]; then
      echo "$candidate"
      return
    fi
  done
  die "RabbitMQ not found (apt-get install rabbitmq-server, or set BIZON_RABBITMQ_BIN)"
}

rabbitmq_setting() {
  cat "$rabbitmq_dir/$1" 2>/dev/null || echo ""
}

# Runs a RabbitMQ command with this node's environment.
rabbitmq_with_env() {
  env HOME="$rabbitmq_dir/home" \
    ERL_EPMD_PORT="$(rabbitmq_setting epmd_port)" ERL_EPMD_ADDRESS=127.0.0.1 \
    RABBITMQ_CONF_ENV_FILE="$rabbitmq_dir/rabbitmq-env.conf" \
    RABBITMQ_NODENAME="$rabbitmq_node" RABBITMQ_USE_LONGNAME=false \
    RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$(rabbitmq_setting port)" \
    RABBITMQ_DIST_PORT="$(rabbitmq_setting dist_port)" \
    RABBITMQ_CONFIG_FILE="$rabbitmq_dir/rabbitmq.conf" \
    RABBITMQ_ADVANCED_CONFIG_FILE="$rabbitmq_dir/advanced.config" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$rabbitmq_dir/enabled_plugins" \
    RABBITMQ_MNESIA_BASE="$rabbitmq_dir/mnesia" RABBITMQ_LOG_BASE="$rabbitmq_dir/log" \
    RABBITMQ_PID_FILE="$rabbitmq_dir/rabbitmq.pid" \
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="$rabbitmq_loopback_dist" \
    RABBITMQ_CTL_ERL_ARGS="$rabbitmq_loopback_dist" \
    "$@"
}

rabbitmq_ctl() {
  rabbitmq_with_env "$(rabbitmq_bin)/rabbitmqctl" -n "$rabbitmq_node" "$@"
}

rabbitmq_pid() {
  rabbitmq_setting node.pid
}

rabbitmq_running() {
  local pid
  pid="$(rabbitmq_pid)"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "-home $rabbitmq_dir/home"
}

# A first start: ports, cookie and config files.
rabbitmq_init() {
  local port dist_port epmd_port
  rm -rf "$rabbitmq_dir"
  mkdir -p "$rabbitmq_dir/home" "$rabbitmq_dir/mnesia" "$rabbitmq_dir/log"
  port="$(free_port_from "${BIZON_RABBITMQ_PORT:-26672}")"
  dist_port="$(free_port_from $((port + 1)))"
  epmd_port="$(free_port_from $((dist_port + 1)))"
  echo "$port" >"$rabbitmq_dir/port"
  echo "$dist_port" >"$rabbitmq_dir/dist_port"
  echo "$epmd_port" >"$rabbitmq_dir/epmd_port"
  # A private cookie: only the CLI run through rabbitmq_ctl can talk to this node.
  head -c 32 /dev/urandom | sha256sum | cut -c1-32 >"$rabbitmq_dir/home/.erlang.cookie"
  chmod 400 "$rabbitmq_dir/home/.erlang.cookie"
  : >"$rabbitmq_dir/rabbitmq-env.conf" # Instead of /etc/rabbitmq/rabbitmq-env.conf.
  echo "[]." >"$rabbitmq_dir/enabled_plugins"
  echo "[]." >"$rabbitmq_dir/advanced.config"
  cat >"$rabbitmq_dir/rabbitmq.conf" <<CONF
# Written by scripts/test-servers.sh. The AMQP listener comes from RABBITMQ_NODE_IP_ADDRESS and
# RABBITMQ_NODE_PORT.
default_vhost = /
default_user = $rabbitmq_user_name
default_pass = $rabbitmq_password
default_user_tags.administrator = true
default_permissions.configure = .*
default_permissions.read = .*
default_permissions.write = .*
loopback_users = none
log.console = false
log.file.level = info
CONF
  log "rabbitmq: new node $rabbitmq_node in $rabbitmq_dir (port $port, dist $dist_port, epmd $epmd_port)"
}

# Rewrites the TLS part at the end of rabbitmq.conf: with $1 = on, the AMQPS listener on the
# port in $rabbitmq_dir/tls_port; with off, none.
rabbitmq_configure_tls() {
  sed -i '/^# --- TLS listener (scripts\/test-servers.sh) ---$/,$d' "$rabbitmq_dir/rabbitmq.conf"
  [[ "$1" == on ]] || return 0
  cat >>"$rabbitmq_dir/rabbitmq.conf" <<CONF
# --- TLS listener (scripts/test-servers.sh) ---
listeners.ssl.default = 127.0.0.1:$(rabbitmq_setting tls_port)
ssl_options.cacertfile = $tls_dir/ca.pem
ssl_options.certfile = $tls_dir/server.pem
ssl_options.keyfile = $tls_dir/server.key
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = true
CONF
}

# Launches the node and waits for its boot. Returns 1 when it exited during startup (after
# showing its log), dies when it is not listening after 60 s.
rabbitmq_launch() {
  local bin pid launcher port started=$SECONDS
  bin="$(rabbitmq_bin)"
  port="$(rabbitmq_setting port)"
  # setsid + nohup: the node outlives this script and holds none of its file descriptors.
  ERL_CRASH_DUMP="$rabbitmq_dir/log/erl_crash.dump" rabbitmq_with_env setsid nohup \
    "$bin/rabbitmq-server" </dev/null >"$rabbitmq_dir/log/startup.log" 2>&1 &
  launcher=$!
  # The node writes its OS pid into RABBITMQ_PID_FILE early in its boot.
  while true; do
    pid="$(cat "$rabbitmq_dir/rabbitmq.pid" 2>/dev/null || true)"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
      echo "$pid" >"$rabbitmq_dir/node.pid"
      if ! port_is_free "$port"; then
        break
      fi
    elif ! kill -0 "$launcher" 2>/dev/null; then
      tail -n 30 "$rabbitmq_dir/log/startup.log" >&2 || true
      rm -f "$rabbitmq_dir/node.pid" "$rabbitmq_dir/rabbitmq.pid"
      return 1
    fi
    if ((SECONDS - started > 60)); then
      tail -n 30 "$rabbitmq_dir/log/startup.log" "$rabbitmq_dir/log/$rabbitmq_node.log" >&2 || true
      die "rabbitmq: the node was not listening after 60 s"
    fi
    sleep 0.2
  done
  rabbitmq_ctl await_startup --timeout 60 >/dev/null 2>"$rabbitmq_dir/log/await.log" ||
    { cat "$rabbitmq_dir/log/await.log" >&2; die "rabbitmq: the node did not finish its boot"; }
  log "rabbitmq: ready after $((SECONDS - started)) s"
}

rabbitmq_start() {
  if rabbitmq_running; then
    return
  fi
  [[ -f "$rabbitmq_dir/rabbitmq.conf" ]] || rabbitmq_init
  local port dist_port tls_port
  port="$(rabbitmq_setting port)"
  dist_port="$(rabbitmq_setting dist_port)"
  if ! port_is_free "$port" || ! port_is_free "$dist_port"; then
    # Someone else took a port since the last start: move to free ones (the data stays valid).
    port="$(free_port_from "$port")"
    dist_port="$(free_port_from $((port + 1)))"
    echo "$port" >"$rabbitmq_dir/port"
    echo "$dist_port" >"$rabbitmq_dir/dist_port"
  fi
  rm -f "$rabbitmq_dir/tls"
  local tls=off
  if tls_make; then
    tls=on
    tls_port="$(rabbitmq_setting tls_port)"
    if [[ -z "$tls_port" ]] || ! port_is_free "$tls_port" ||
      [[ "$tls_port" == "$port" || "$tls_port" == "$dist_port" ]]; then
      local highest
      highest="$(printf '%s\n' "$port" "$dist_port" "$(rabbitmq_setting epmd_port)" | sort -n | tail -n 1)"
      tls_port="$(free_port_from $((highest + 1)))"
      echo "$tls_port" >"$rabbitmq_dir/tls_port"
    fi
  fi
  rabbitmq_configure_tls "$tls"
  log "rabbitmq: starting $rabbitmq_node on 127.0.0.1:$port (TLS listener $tls)"
  if ! rabbitmq_launch; then
    [[ "$tls" == on ]] || die "rabbitmq: the node exited during startup"
    log "rabbitmq: the node exited during startup with the TLS listener (above); starting it without"
    tls=off
    rabbitmq_configure_tls off
    rabbitmq_launch || die "rabbitmq: the node exited during startup"
  fi
  if [[ "$tls" == on ]]; then
    if port_is_free "$(rabbitmq_setting tls_port)"; then
      log "rabbitmq: nothing listens on the TLS port $(rabbitmq_setting tls_port) (see $rabbitmq_dir/log): no TLS settings"
    else
      echo on >"$rabbitmq_dir/tls"
    fi
  fi
}

# Stops the node (SIGTERM: a clean shutdown, as `rabbitmqctl stop` does, without a CLI VM).
rabbitmq_stop_node() {
  if rabbitmq_running; then
    terminate rabbitmq "$(rabbitmq_pid)"
  fi
  rm -f "$rabbitmq_dir/node.pid" "$rabbitmq_dir/rabbitmq.pid"
}

rabbitmq_stop() {
  rabbitmq_stop_node
  # The node's epmd, on the private port only this node used (started by its first boot).
  local epmd_port
  epmd_port="$(rabbitmq_setting epmd_port)"
  if [[ -n "$epmd_port" ]] && ! port_is_free "$epmd_port"; then
    ERL_EPMD_PORT="$epmd_port" epmd -kill >/dev/null 2>&1 || log "rabbitmq: epmd on $epmd_port did not stop"
  fi
}

# A real outage: the node stops (connections are closed) and starts again on the same port with
# the same data (durable queues and their persistent messages survive). epmd stays up.
rabbitmq_restart() {
  rabbitmq_stop_node
  rabbitmq_start
}

rabbitmq_env() {
  rabbitmq_running || return 0
  echo "export BIZON_RABBITMQ_HOST=127.0.0.1"
  echo "export BIZON_RABBITMQ_PORT=$(rabbitmq_setting port)"
  echo "export BIZON_RABBITMQ_USER=$rabbitmq_user_name"
  echo "export BIZON_RABBITMQ_PASSWORD=$rabbitmq_password"
  [[ "$(rabbitmq_setting tls)" == on ]] || return 0
  echo "export BIZON_RABBITMQ_TLS_PORT=$(rabbitmq_setting tls_port)"
}

# ------------------------------------------------------------------------------------------------
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

emulators_venv="${BIZON_EMULATORS_VENV:-$root/build/emulators-venv}"
gcs_dir="$state_root/gcs"
gcs_bucket=bizon-buffer
bigquery_dir="$state_root/bigquery"
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
    port="$(free_port_from "${BIZON_GCS_PORT:-29023}")"
    echo "$port" >"$gcs_dir/port"
  fi
  log "gcs: starting gcp-storage-emulator on 127.0.0.1:$port"
  started=$(date +%s%N)
  # -d (an absolute path) goes before the subcommand. setsid + nohup: as the broker above.
  setsid nohup "$emulators_venv/bin/gcp-storage-emulator" -d "$gcs_dir/data" start \
    --host 127.0.0.1 --port "$port" --default-bucket "$gcs_bucket" -q \
    </dev/null >"$gcs_dir/server.log" 2>&1 &
  pid=$!
  echo "$pid" >"$gcs_dir/gcs.pid"
  wait_http_ready gcs "http://127.0.0.1:$port/storage/v1/b/$gcs_bucket" "$pid" 30 "$gcs_dir/server.log"
  log "gcs: ready after $(( ($(date +%s%N) - started) / 1000000 )) ms"
}

gcs_stop() {
  if gcs_running; then
    terminate gcs "$(gcs_pid)"
  fi
  rm -f "$gcs_dir/gcs.pid"
}

# An outage: the process stops and starts again on the same port; stored objects stay.
gcs_restart() {
  gcs_stop
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
    port="$(free_port_from "${BIZON_BIGQUERY_PORT:-29050}")"
    grpc_port="$(free_port_from $((port + 10)))"
    echo "$port" >"$bigquery_dir/port"
    echo "$grpc_port" >"$bigquery_dir/grpc_port"
  fi
  log "bigquery: starting bqemulator on 127.0.0.1:$port (gRPC $grpc_port)"
  started=$(date +%s%N)
  HOME="$emulators_venv/home" BQEMU_GCS_LOCAL_ROOT="$gcs_dir/data/.cloudstorage" \
    setsid nohup "$emulators_venv/bin/bqemulator" start --rest-host 127.0.0.1 \
    --rest-port "$port" --grpc-host 127.0.0.1 --grpc-port "$grpc_port" \
    --project "$bigquery_project" --persistent --data-dir "$bigquery_dir/data" \
    --log-level warning </dev/null >"$bigquery_dir/server.log" 2>&1 &
  pid=$!
  echo "$pid" >"$bigquery_dir/bigquery.pid"
  wait_http_ready bigquery "http://127.0.0.1:$port/readyz" "$pid" 60 "$bigquery_dir/server.log"
  log "bigquery: ready after $(( ($(date +%s%N) - started) / 1000000 )) ms"
}

bigquery_stop() {
  if bigquery_running; then
    terminate bigquery "$(bigquery_pid)"
  fi
  rm -f "$bigquery_dir/bigquery.pid"
}

# An outage: the process stops (its ports are free once it has exited) and starts again on the
# same ports with the same DuckDB file.
bigquery_restart() {
  bigquery_stop
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

# ------------------------------------------------------------------------------------------------

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
