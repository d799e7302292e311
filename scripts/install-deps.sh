#!/usr/bin/env bash
# Installs the system packages bizon needs to build and test. Idempotent: a package already
# present is skipped, so a second run costs a dpkg query and nothing else.
set -euo pipefail

build_packages=(
  build-essential cmake ninja-build pkg-config
  libyaml-cpp-dev libsimdjson-dev libcurl4-openssl-dev libcli11-dev libspdlog-dev libfmt-dev
  libsqlite3-dev libpq-dev librabbitmq-dev libavro-dev libssl-dev
  # The BigQuery Storage Write API client (src/google/): gRPC and protobuf, with the protoc and
  # grpc_cpp_plugin that generate its C++ at build time from scripts/googleapis-protos.sh's files.
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  # librdkafka is built from source by scripts/librdkafka.sh (Debian's 2.0.2 cannot do SCRAM
  # with Kafka 4): its own dependencies (npm, which fetches its pinned source package and the
  # googleapis protos' packages, below).
  libzstd-dev libsasl2-dev zlib1g-dev
  python3-dev libpython3.11-dev pybind11-dev libgtest-dev libgmock-dev
  clang-format
  # CPack's .deb generator (dpkg-shlibdeps from build-essential's dpkg-dev needs it too).
  file
  # The build installs the embedded Python's packages (pydantic 2, requests, loguru) from PyPI
  # with pip (scripts/python-site.sh); python3-venv makes users' and tests' virtualenvs.
  python3-pip python3-venv
)
# clang 19 and its sanitizer runtimes, in Debian 12's main archive: the dev preset's compiler
# (scripts/test.sh builds it) and the libFuzzer targets'. The default clang 14 cannot compile the
# project (no std::expected with libstdc++ 12).
clang_packages=(clang-19 libclang-rt-19-dev)

test_packages=(
  "${clang_packages[@]}"
  postgresql rabbitmq-server python3-venv time
  # The Kafka test broker: Apache's jars, fetched once by Maven, run on Java 17.
  maven openjdk-17-jre-headless
  # The throw-away CA and certificates of the TLS listeners.
  openssl
)

# The libFuzzer targets (fuzz/README.md).
fuzz_packages=("${clang_packages[@]}")

# scripts/lint.sh: shellcheck; clang-tidy comes from PyPI (scripts/python-env.sh makes
# build/lint-venv) and clang-format from the build packages.
lint_packages=(shellcheck)

# bench/run.sh: kcat is the librdkafka floor the kafka case is compared with; psql's \copy the
# COPY floor of the postgres case; GNU time.
bench_packages=(kcat postgresql-client time)

wanted=("${build_packages[@]}")
for option in "$@"; do
  case "$option" in
    --with-test-servers) wanted+=("${test_packages[@]}") ;;
    --with-fuzz) wanted+=("${fuzz_packages[@]}") ;;
    --with-bench) wanted+=("${bench_packages[@]}") ;;
    --with-lint) wanted+=("${lint_packages[@]}") ;;
    *)
      echo "install-deps: unknown option $option (expected --with-test-servers, --with-fuzz, --with-bench, --with-lint)" >&2
      exit 2
      ;;
  esac
done


# npm: Debian's package only where no npm is on PATH (a Node.js of its own will do).
if ! command -v npm >/dev/null; then wanted+=(npm); fi

missing=()
for package in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} > 0)); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

"$(dirname "${BASH_SOURCE[0]}")/librdkafka.sh"
"$(dirname "${BASH_SOURCE[0]}")/googleapis-protos.sh"
"$(dirname "${BASH_SOURCE[0]}")/duckdb.sh"
