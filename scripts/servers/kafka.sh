# shellcheck shell=bash
# Kafka: the Apache broker's jars (org.apache.kafka:kafka_2.13 and its runtime dependencies, which
# Maven resolves from scripts/kafka/pom.xml once into build/kafka/<version>/libs), run on Java 17
# as one KRaft node that is both broker and controller. PLAINTEXT on 127.0.0.1:<port>, controller
# on the next free port, data and logs under build/test-servers/kafka/. Settings for one node:
# every internal topic has one replica, topics are created on first use with one partition, and a
# new consumer group starts without the usual 3 s wait for more members.
#
# With the TLS material (tls.sh), three more listeners on the next free ports: SASL_SSL and
# SASL_PLAINTEXT (mechanisms PLAIN, from the JAAS line in server.properties, and SCRAM-SHA-256 and
# SCRAM-SHA-512, whose credentials kafka-configs' ConfigCommand stores in the cluster metadata
# after the first start), both for user bizon / kafka_sasl_password, and SSL that requires a
# client certificate from the test CA (BIZON_KAFKA_SASL_SSL_BOOTSTRAP,
# BIZON_KAFKA_SASL_PLAINTEXT_BOOTSTRAP, BIZON_KAFKA_SSL_BOOTSTRAP, BIZON_KAFKA_SASL_*). No
# authorizer: an authenticated client may do anything, as on the PLAINTEXT listener.
#
# Sourced by scripts/test-servers.sh.
# shellcheck source=SCRIPTDIR/common.sh
source "${BASH_SOURCE[0]%/*}/common.sh"
# shellcheck source=SCRIPTDIR/tls.sh
source "${BASH_SOURCE[0]%/*}/tls.sh"

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
  core="$(find "$kafka_home/libs" -maxdepth 1 -name 'log4j-core-*.jar' -printf '%f\n' |
    sed 's/^log4j-core-//' | sort)"
  binding="$(find "$kafka_home/libs" -maxdepth 1 -name 'log4j-slf4j-impl-*.jar' -printf '%f\n' |
    sed 's/^log4j-slf4j-impl-//' | sort)"
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
