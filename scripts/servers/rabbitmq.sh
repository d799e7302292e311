# shellcheck shell=bash
# RabbitMQ (Debian's rabbitmq-server): a node of our own, bizon-test@localhost, with its config,
# data, logs and Erlang cookie under build/test-servers/rabbitmq/, AMQP on 127.0.0.1:<port>, and
# its own epmd on a private port, so neither a system RabbitMQ nor an epmd left over by anything
# else can clash with it. No plugins (so no management listener). User bizon / password bizon,
# created by the node's first boot; a run as root runs the node as root (the real scripts under
# /usr/lib/rabbitmq/bin; Debian's wrappers in /usr/sbin would switch to the rabbitmq user).
# With the TLS material (tls.sh), also an AMQPS listener on the next free port that requires a
# client certificate from the test CA (BIZON_RABBITMQ_TLS_PORT); the user still logs in with its
# password over it.
#
# Sourced by scripts/test-servers.sh.
# shellcheck source=SCRIPTDIR/common.sh
source "${BASH_SOURCE[0]%/*}/common.sh"
# shellcheck source=SCRIPTDIR/tls.sh
source "${BASH_SOURCE[0]%/*}/tls.sh"

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
