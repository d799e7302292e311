#!/usr/bin/env bash
# Builds the librdkafka that bizon links (statically) into build/third_party/librdkafka, once.
#
# Debian 12 ships librdkafka 2.0.2, whose SCRAM proofs Kafka 4 brokers refuse (fixed in 2.6.1) and
# whose consumer prefetch cannot be lowered below 1 MiB per partition batch. The source comes from
# a pinned package of the npm registry (node-rdkafka bundles librdkafka's release tree under
# deps/librdkafka), checked against its SHA-512 before it is unpacked. A second run with the same
# pin finds the stamp and does nothing.
#
# The build is kept per machine, like an installed package, in the user's cache
# (${XDG_CACHE_HOME:-~/.cache}/bizon/, named by version and checksum): a fresh clone copies it
# in seconds instead of compiling librdkafka again. BIZON_NO_CACHE=1 builds from source anyway.
#
# Usage: scripts/librdkafka.sh [prefix]   (default: <repository>/build/third_party/librdkafka)
set -euo pipefail

readonly package="node-rdkafka@3.6.1"
readonly librdkafka_version="2.12.0"
readonly tarball_sha512="sfpTbrT35429cs0RE8Yb9avGX9BiRRvpV7aweQsghKTjtrVZP3jBrKOPItWXAqHb8doyh3SkuGuUVBLgig1SRg=="

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${1:-$root/build/third_party/librdkafka}"
stamp="$prefix/.bizon-stamp"
wanted_stamp="$package librdkafka $librdkafka_version $tarball_sha512"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted_stamp" ]]; then
  exit 0
fi
cached="${XDG_CACHE_HOME:-$HOME/.cache}/bizon/librdkafka-$librdkafka_version-$(
  printf '%s' "$wanted_stamp" | sha256sum | cut -c1-16)"
if [[ "${BIZON_NO_CACHE:-}" != 1 && -f "$cached/.bizon-stamp" &&
  "$(cat "$cached/.bizon-stamp")" == "$wanted_stamp" ]]; then
  echo "librdkafka: $librdkafka_version from the machine's cache ($cached)"
  rm -rf "$prefix"
  mkdir -p "$(dirname "$prefix")"
  cp -a "$cached" "$prefix"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "librdkafka: fetching $package (librdkafka $librdkafka_version)"
(cd "$work" && npm pack --silent "$package" >/dev/null)
tarball=("$work"/node-rdkafka-*.tgz)
actual="$(openssl dgst -sha512 -binary "${tarball[0]}" | base64 -w0)"
if [[ "$actual" != "$tarball_sha512" ]]; then
  echo "librdkafka: checksum mismatch for $package: expected sha512-$tarball_sha512, got sha512-$actual" >&2
  exit 1
fi
tar -xzf "${tarball[0]}" -C "$work" package/deps/librdkafka
source_dir="$work/package/deps/librdkafka"
if ! grep -q "RD_KAFKA_VERSION  *0x020c00" "$source_dir/src/rdkafka.h"; then
  echo "librdkafka: $package does not bundle librdkafka $librdkafka_version" >&2
  exit 1
fi

echo "librdkafka: building $librdkafka_version into $prefix"
# Static, with what Debian's build has: OpenSSL (TLS, SCRAM, OAUTHBEARER), Cyrus SASL (GSSAPI),
# zlib, zstd, lz4 (the bundled copy) and libcurl (OIDC). No examples or tests.
cmake -S "$source_dir" -B "$work/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
  -DRDKAFKA_BUILD_STATIC=ON -DRDKAFKA_BUILD_EXAMPLES=OFF -DRDKAFKA_BUILD_TESTS=OFF \
  -DWITH_SSL=ON -DWITH_SASL=ON -DWITH_ZLIB=ON -DWITH_ZSTD=ON -DWITH_CURL=ON \
  -DENABLE_LZ4_EXT=OFF >"$work/configure.log" 2>&1 \
  || { cat "$work/configure.log" >&2; exit 1; }
cmake --build "$work/build" >"$work/build.log" 2>&1 \
  || { tail -50 "$work/build.log" >&2; exit 1; }
rm -rf "$prefix"
cmake --install "$work/build" >/dev/null
echo "$wanted_stamp" >"$stamp"
if [[ "${BIZON_NO_CACHE:-}" != 1 ]]; then
  rm -rf "$cached" "$cached.tmp"
  mkdir -p "$(dirname "$cached")"
  cp -a "$prefix" "$cached.tmp" && mv "$cached.tmp" "$cached"
fi
