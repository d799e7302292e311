# shellcheck shell=bash
# TLS material for the secure listeners of postgres.sh, kafka.sh and rabbitmq.sh: a throw-away CA
# made with openssl once per state directory, under build/test-servers/tls/ (BIZON_TLS_* in the
# env output):
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
#
# Sourced by scripts/test-servers.sh and by the server files that use it; the guard makes every
# source after the first a no-op.
[[ -z "${test_servers_tls_sourced:-}" ]] || return 0
test_servers_tls_sourced=1

# shellcheck source=SCRIPTDIR/common.sh
source "${BASH_SOURCE[0]%/*}/common.sh"

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
