# shellcheck shell=bash
# S3: versitygw (the Versity S3 Gateway, Apache 2.0), a real S3 server that checks every request's
# SigV4 signature, serving a POSIX directory: build/test-servers/s3/data/<bucket>/<object>. Path-
# style addressing on 127.0.0.1:<port>, region us-east-1, one root user whose keys this file
# makes up. The binary is built once from its pinned Go module into build/versitygw/<version>/
# (about a minute; the go command comes with the machine).
#
# Sourced by scripts/test-servers.sh.
# shellcheck source=SCRIPTDIR/common.sh
source "${BASH_SOURCE[0]%/*}/common.sh"

s3_version=v1.8.0
s3_module=github.com/versity/versitygw/cmd/versitygw
s3_home="$root/build/versitygw/$s3_version"
s3_dir="$state_root/s3"
s3_bucket=bizon-lake
s3_access_key=bizon-test-key
s3_secret_key=bizon-test-secret-key

s3_pid() { cat "$s3_dir/s3.pid" 2>/dev/null || echo ""; }
s3_port() { cat "$s3_dir/port" 2>/dev/null || echo ""; }

s3_running() {
  local pid
  pid="$(s3_pid)"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "posix $s3_dir/data"
}

# Builds the pinned versitygw the first time; later calls only check it is there.
s3_install() {
  [[ -x "$s3_home/versitygw" ]] && return
  # The go command: on PATH, else where Go's own installer puts it.
  local go_bin
  go_bin="$(command -v go || echo /usr/local/go/bin/go)"
  [[ -x "$go_bin" ]] || die "s3: the go command is needed to build $s3_module@$s3_version"
  log "s3: building versitygw $s3_version into $s3_home"
  mkdir -p "$s3_home"
  GOBIN="$s3_home" GOFLAGS=-buildvcs=false "$go_bin" install "$s3_module@$s3_version" \
    >"$s3_home/build.log" 2>&1 ||
    { tail -n 30 "$s3_home/build.log" >&2; die "s3: go install $s3_module@$s3_version failed"; }
}

# True when the server answers at all: an unsigned request gets its 403.
s3_answers() {
  local code
  code="$(curl --noproxy '*' -s -o /dev/null -w '%{http_code}' --max-time 2 \
    "http://127.0.0.1:$1/" || true)"
  [[ "$code" != "000" ]]
}

s3_start() {
  if s3_running; then
    return
  fi
  s3_install
  mkdir -p "$s3_dir/data/$s3_bucket"
  local port pid started
  port="$(s3_port)"
  if [[ -z "$port" ]] || ! port_is_free "$port"; then
    port="$(free_port_from "${BIZON_S3_PORT:-29500}")"
    echo "$port" >"$s3_dir/port"
  fi
  log "s3: starting versitygw on 127.0.0.1:$port"
  started=$SECONDS
  ROOT_ACCESS_KEY_ID="$s3_access_key" ROOT_SECRET_ACCESS_KEY="$s3_secret_key" \
    setsid nohup "$s3_home/versitygw" --port "127.0.0.1:$port" --region us-east-1 --quiet \
    posix "$s3_dir/data" </dev/null >"$s3_dir/server.log" 2>&1 &
  pid=$!
  echo "$pid" >"$s3_dir/s3.pid"
  while ! s3_answers "$port"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$s3_dir/server.log" >&2 || true
      die "s3: versitygw exited during startup"
    fi
    ((SECONDS - started < 30)) || die "s3: versitygw was not ready after 30 s"
    sleep 0.05
  done
  log "s3: ready after $((SECONDS - started)) s"
}

s3_stop() {
  if s3_running; then
    terminate s3 "$(s3_pid)"
  fi
  rm -f "$s3_dir/s3.pid"
}

# An outage: the process stops and starts again on the same port; stored objects stay.
s3_restart() {
  s3_stop
  s3_start
}

s3_env() {
  s3_running || return 0
  echo "export BIZON_S3_ENDPOINT=http://127.0.0.1:$(s3_port)"
  echo "export BIZON_S3_BUCKET=$s3_bucket"
  echo "export BIZON_S3_REGION=us-east-1"
  echo "export BIZON_S3_ACCESS_KEY_ID=$s3_access_key"
  echo "export BIZON_S3_SECRET_ACCESS_KEY=$s3_secret_key"
  # The server's directory: <bucket>/<object> files, for tests that look behind its back.
  echo "export BIZON_S3_LOCAL_ROOT=$s3_dir/data"
}
