# shellcheck shell=bash
# What every part of scripts/test-servers.sh uses: the checkout's root, the state directory, the
# diagnostics on stderr, and the port and process helpers. Sourced by scripts/test-servers.sh and
# by each file beside this one (each names what it uses, so shellcheck can check it alone); the
# guard makes every source after the first a no-op.
[[ -z "${test_servers_common_sourced:-}" ]] || return 0
test_servers_common_sourced=1

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Used only by the files that source this one, which shellcheck reports as unused here (SC2034).
# shellcheck disable=SC2034
state_root="${BIZON_TEST_SERVERS_DIR:-$root/build/test-servers}"

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
