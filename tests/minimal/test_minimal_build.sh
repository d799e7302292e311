#!/usr/bin/env bash
# The core alone: builds the `minimal` preset (every optional connector family OFF, with g++), runs
# its unit tests, checks that nothing of the families reached the binary, runs the quickstart with
# it, and checks that a pipeline asking for a left-out family is refused naming the option.
# scripts/test.sh builds the preset beside the end-to-end tests, then runs this (the build is then
# a no-op) with the test servers' environment, which the emulator-backed unit tests need.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
bin="$root/build/minimal/bizon"

scripts/build.sh minimal
ctest --preset minimal

fail() {
  echo "minimal build: $*" >&2
  exit 1
}

# Nothing of gRPC, libpq, CPython, librabbitmq, Avro among the shared libraries; nothing of the
# statically linked librdkafka and DuckDB among the symbols.
libraries="$(ldd "$bin")"
for library in libgrpc libprotobuf libpq libpython librabbitmq libavro; do
  if grep -q "$library" <<<"$libraries"; then fail "links $library"; fi
done
symbols="$(nm -C "$bin")"
for symbol in rd_kafka_new duckdb_open PQconnectdb Py_Initialize; do
  if grep -q "$symbol" <<<"$symbols"; then fail "holds $symbol"; fi
done

version="$("$bin" --version)"
[[ "$version" == *"without kafka, bigquery, postgres, rabbitmq, python, duckdb"* ]] ||
  fail "--version does not list the families left out: $version"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cp examples/quickstart.yml "$scratch/"
(cd "$scratch" && "$bin" run quickstart.yml --result-json result.json >run.log 2>&1) ||
  fail "the quickstart failed: $(cat "$scratch/run.log")"
grep -q '"status": *"success"' "$scratch/result.json" || fail "the quickstart did not succeed"

# Each family's part refused with its line and option: a connector at validation, a backend, a
# queue and a transform when the run starts.
expect_refused() {
  local file="$1" needle="$2" output
  if output="$(cd "$scratch" && "$bin" run "$file" 2>&1)"; then
    fail "$file ran in a build without its family"
  fi
  [[ "$output" == *"$needle"* ]] || fail "$file: no '$needle' in: $output"
}
cat >"$scratch/kafka.yml" <<'YAML'
name: needs-kafka
source:
  name: kafka
  stream: topic
  sync_mode: stream
  bootstrap_servers: 127.0.0.1:9
  topics: [{name: t, destination_id: t}]
destination:
  name: logger
  config: {}
YAML
expect_refused kafka.yml "kafka.yml:3: source.name: the 'kafka' source is not built into this binary"
expect_refused kafka.yml "rebuild with -DBIZON_WITH_KAFKA=ON"
for backend in postgres duckdb; do
  sed "s/dummy_key/dummy_key\nengine:\n  backend:\n    type: $backend\n    config: {database: state, schema: s, host: h, port: 5432, username: u, password: p}/" \
    examples/quickstart.yml >"$scratch/$backend.yml"
  expect_refused "$backend.yml" "the '$backend' backend is not built into this binary"
done
# Parquet output (DuckDB writes it) at validation, with the line of `format`; an object store's
# default format is Parquet too.
sed 's/    destination_id: out/    destination_id: out\n    format: parquet/' \
  tests/minimal/data/file_destination.yml >"$scratch/parquet.yml"
expect_refused parquet.yml "parquet.yml:15: destination.config.format: format: parquet"
expect_refused parquet.yml "rebuild with -DBIZON_WITH_DUCKDB=ON"
sed 's/  name: file/  name: s3/; s/    destination_id: out/    destination_id: out\n    bucket: b/' \
  tests/minimal/data/file_destination.yml >"$scratch/s3.yml"
expect_refused s3.yml "format: parquet, the default"
sed 's/    bucket: b/    bucket: b\n    format: json/' "$scratch/s3.yml" >"$scratch/s3-json.yml"
(cd "$scratch" && "$bin" config validate s3-json.yml >/dev/null) ||
  fail "an s3 destination writing json was refused"
{ cat examples/quickstart.yml; printf 'transforms:\n  - label: up\n    python: |\n      data["x"] = 1\n'; } \
  >"$scratch/transform.yml"
expect_refused transform.yml "rebuild with -DBIZON_WITH_PYTHON=ON"
echo "minimal build: ok ($version)"
