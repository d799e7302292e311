#!/usr/bin/env bash
# Fetches the .proto files of the BigQuery Storage Write API into build/third_party/googleapis,
# once. The build generates C++ from them with Debian's protoc and grpc_cpp_plugin (never
# committed: generated code must match the libprotobuf that links it).
#
# Debian 12 packages no googleapis protos. They come from two pinned packages of the npm registry,
# each checked against its SHA-512 before it is unpacked:
#   @google-cloud/bigquery-storage  build/protos/google/cloud/bigquery/storage/v1/*.proto
#   google-gax (its dependency)     build/protos/google/{api,rpc}/*.proto they import
# (the first ships no google/api or google/rpc files). google/protobuf/*.proto come with Debian's
# libprotobuf-dev. A second run with the same pins finds the stamp and does nothing.
#
# Usage: scripts/googleapis-protos.sh [prefix]   (default: <repository>/build/third_party/googleapis)
set -euo pipefail

readonly storage_package="@google-cloud/bigquery-storage@5.1.2"
readonly storage_sha512="Hz4R+yaBItMGQEVt9eE5XW8fmF0GhCfRGtQw2uoZ7AacBiniCB31f5hM8GEOH0iViZuXSihSXNFm3/esEvbiIA=="
readonly common_package="google-gax@5.0.7"
readonly common_sha512="EhiqaWWJ+9h7sCcKJTsoo6tMcjokVHhWsbSuWCnZJT4vIBP3y4mAoFLnt9SzgkVZeq24ZsFaArr06nnYYku2yA=="

readonly storage_protos=(
  google/cloud/bigquery/storage/v1/annotations.proto
  google/cloud/bigquery/storage/v1/arrow.proto
  google/cloud/bigquery/storage/v1/avro.proto
  google/cloud/bigquery/storage/v1/protobuf.proto
  google/cloud/bigquery/storage/v1/storage.proto
  google/cloud/bigquery/storage/v1/stream.proto
  google/cloud/bigquery/storage/v1/table.proto
)
readonly common_protos=(
  google/api/annotations.proto
  google/api/client.proto
  google/api/field_behavior.proto
  google/api/http.proto
  google/api/launch_stage.proto
  google/api/resource.proto
  google/rpc/status.proto
)

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${1:-$root/build/third_party/googleapis}"
stamp="$prefix/.bizon-stamp"
wanted_stamp="$storage_package $storage_sha512 $common_package $common_sha512"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted_stamp" ]]; then
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# fetch <package> <sha512> <directory>: packs, checks and unpacks one package into <directory>.
fetch() {
  local package="$1" sha512="$2" directory="$3"
  mkdir -p "$directory"
  echo "googleapis-protos: fetching $package"
  (cd "$directory" && npm pack --silent "$package" >/dev/null)
  local tarball=("$directory"/*.tgz)
  local actual
  actual="$(openssl dgst -sha512 -binary "${tarball[0]}" | base64 -w0)"
  if [[ "$actual" != "$sha512" ]]; then
    echo "googleapis-protos: checksum mismatch for $package: expected sha512-$sha512, got sha512-$actual" >&2
    exit 1
  fi
  tar -xzf "${tarball[0]}" -C "$directory" package/build/protos
}

fetch "$storage_package" "$storage_sha512" "$work/storage"
fetch "$common_package" "$common_sha512" "$work/common"

staging="$work/out"
copy() {
  local from="$1" file="$2"
  if [[ ! -f "$from/package/build/protos/$file" ]]; then
    echo "googleapis-protos: $file is missing from its package" >&2
    exit 1
  fi
  mkdir -p "$staging/$(dirname "$file")"
  cp "$from/package/build/protos/$file" "$staging/$file"
}
for file in "${storage_protos[@]}"; do copy "$work/storage" "$file"; done
for file in "${common_protos[@]}"; do copy "$work/common" "$file"; done

rm -rf "$prefix"
mkdir -p "$(dirname "$prefix")"
mv "$staging" "$prefix"
echo "$wanted_stamp" >"$stamp"
echo "googleapis-protos: ${#storage_protos[@]} + ${#common_protos[@]} files in $prefix"
