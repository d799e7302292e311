#!/usr/bin/env bash
# Puts the DuckDB library that bizon links (statically) into build/third_party/duckdb, once.
#
# DuckDB's C API (duckdb.h) and its static libraries, parquet and json extensions included, come
# prebuilt for linux-amd64 in a pinned module of the Go module proxy (the one DuckDB's own Go
# driver links). `go mod download` fetches it into a throwaway module cache; the zip is checked
# against its SHA-256 before anything is copied. A second run with the same pin finds the stamp
# and does nothing. Building DuckDB from source instead takes about an hour on two cores.
#
# Usage: scripts/duckdb.sh [prefix]   (default: <repository>/build/third_party/duckdb)
set -euo pipefail

readonly module="github.com/duckdb/duckdb-go-bindings/lib/linux-amd64"
readonly module_version="v0.10506.0"
readonly duckdb_version="v1.5.6"
readonly zip_sha256="8d3a7324cdffa921b836b28d51198c3e4bc5f430d2f87adae206d94c23b2d23a"
# What the build links, in link order (jemalloc is left out: it would replace malloc under ASan).
readonly libraries=(duckdb_static duckdb_generated_extension_loader autocomplete_extension
  core_functions_extension icu_extension json_extension parquet_extension tpcds_extension
  tpch_extension duckdb_fastpforlib duckdb_fmt duckdb_fsst duckdb_hyperloglog duckdb_mbedtls
  duckdb_miniz duckdb_pg_query duckdb_re2 duckdb_skiplistlib duckdb_utf8proc duckdb_yyjson
  duckdb_zstd)

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${1:-$root/build/third_party/duckdb}"
stamp="$prefix/.bizon-stamp"
wanted_stamp="$module@$module_version duckdb $duckdb_version $zip_sha256"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted_stamp" ]]; then
  exit 0
fi
# The go command: on PATH, else where Go's own installer puts it.
go_bin="$(command -v go || echo /usr/local/go/bin/go)"
if [[ ! -x "$go_bin" ]]; then
  echo "duckdb: the go command is needed to fetch $module@$module_version" >&2
  exit 1
fi

work="$(mktemp -d)"
# The module cache is read-only by default; -modcacherw lets the trap remove it.
trap 'rm -rf "$work"' EXIT

echo "duckdb: fetching DuckDB $duckdb_version ($module@$module_version)"
(cd "$work" && GOPATH="$work/gopath" GOFLAGS=-modcacherw "$go_bin" mod download -json \
  "$module@$module_version" >"$work/download.json")
zip="$(sed -n 's/^[[:space:]]*"Zip": "\(.*\)",$/\1/p' "$work/download.json")"
dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' "$work/download.json")"
actual="$(sha256sum "$zip" | cut -d' ' -f1)"
if [[ "$actual" != "$zip_sha256" ]]; then
  echo "duckdb: checksum mismatch for $module@$module_version: expected $zip_sha256, got $actual" >&2
  exit 1
fi
if ! grep -q "$duckdb_version" <(strings "$dir/libduckdb_static.a" | grep -x "v[0-9.]*"); then
  echo "duckdb: $module@$module_version does not hold DuckDB $duckdb_version" >&2
  exit 1
fi

rm -rf "$prefix"
mkdir -p "$prefix/include" "$prefix/lib"
cp "$dir/duckdb.h" "$prefix/include/"
cp "$dir/LICENSE" "$prefix/LICENSE"
for library in "${libraries[@]}"; do
  cp "$dir/lib$library.a" "$prefix/lib/"
done
printf '%s\n' "${libraries[@]}" >"$prefix/libraries.txt"
chmod -R u+w "$prefix"
echo "$wanted_stamp" >"$stamp"
