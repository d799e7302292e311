#!/usr/bin/env bash
# The README's second command (and CI's): installs everything, builds the dev preset (ASan and
# UBSan), starts the servers the tests need on loopback, and runs every test: GoogleTest through
# ctest, the pytest end-to-end suite against the real binary and the install test; beside them, at
# the lowest priority, the checks (scripts/lint.sh: clang-format, shellcheck, clang-tidy), the core
# alone built with g++ and the fuzz targets' build; then the core's tests, and each fuzz target for
# 30 s. A table of each phase's wall time ends the output.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# Each phase's wall time and outcome, printed as a table at the end (also on failure).
phases=()
phase() {
  local name="$1"
  shift
  local started=$SECONDS outcome=ok
  "$@" || outcome="failed ($?)"
  phases+=("$(printf '%-28s %6d s  %s' "$name" $((SECONDS - started)) "$outcome")")
  [[ $outcome == ok ]]
}
# Called by the EXIT traps below, which shellcheck 0.9 does not count as calls (SC2317).
# shellcheck disable=SC2317
timing_table() {
  echo
  echo "test.sh phases (wall time):"
  printf '  %s\n' "${phases[@]}"
  printf '  %-28s %6d s\n' "total" "$SECONDS"
}
trap timing_table EXIT

phase "install" scripts/install-deps.sh --with-test-servers --with-fuzz --with-lint
# The tests' virtualenvs (the harness, the original bizon, dlt, clang-tidy, the BigQuery and GCS
# emulators; no-ops when up to date) fill from PyPI while the build compiles: they wait on the network, the build
# on the CPU. Their output is shown only if they fail.
envs_log="$(mktemp)"
(scripts/python-env.sh && scripts/emulators-env.sh) >"$envs_log" 2>&1 &
envs_pid=$!
trap 'kill "$envs_pid" 2>/dev/null || true; timing_table' EXIT
# Called through `phase` below, which shellcheck 0.9 does not count as a call (SC2317).
# shellcheck disable=SC2317
wait_for_environments() {
  local outcome=0
  wait "$envs_pid" || outcome=$?
  if ((outcome != 0)); then cat "$envs_log" >&2; fi
  rm -f "$envs_log"
  return "$outcome"
}
phase "build (dev)" scripts/build.sh dev
phase "python environments" wait_for_environments

# intercept_tls_get_addr=0: with glibc 2.36, GCC 12's LeakSanitizer can record a dlopen'ed
# module's dynamic TLS block (a Python extension's, such as pydantic-core's) at a bogus address
# and crash while scanning it at exit ("Tracer caught signal 11", "DTLS ... at 0x2638-...").
# Leak checking itself stays on; only dynamic TLS blocks are no longer scanned as roots.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# PostgreSQL, Kafka, RabbitMQ and the Google emulators on loopback (every server in
# scripts/test-servers.sh), stopped again on exit. They start in parallel: 20-30 s the first
# time on a machine (Maven fetches the Kafka broker's jars once), 8-12 s after that.
started=$SECONDS
eval "$(scripts/test-servers.sh start)"
phases+=("$(printf '%-28s %6d s  %s' "test servers" $((SECONDS - started)) ok)")
trap 'scripts/test-servers.sh stop; timing_table' EXIT

status=0
# The checks that need only the CPU (lint, the g++ builds and the fuzz targets' build) run beside
# the tests, at the lowest priority: the end-to-end tests spend much of their time waiting on
# servers, kills and timers, and the checks fill those idle cycles without taking a cycle the tests
# ask for (nice 19). Their output is kept and shown once they are done.
checks_log="$(mktemp)"
checks_phases="$(mktemp)"
# Called in the background below, which shellcheck 0.9 does not count as a call (SC2317).
# shellcheck disable=SC2317
run_checks() {
  local outcome=0
  renice -n 19 -p "$BASHPID" >/dev/null
  phases=()
  # Formatting, shellcheck, then clang-tidy with the build's compile commands (every finding
  # fails the run).
  phase "lint" scripts/lint.sh build/dev || outcome=1
  # The core alone (every optional family OFF) with g++; its tests run after the end-to-end ones.
  phase "core build (minimal, g++)" scripts/build.sh minimal || outcome=1
  # g++'s warnings on every source the minimal build leaves out (the dev build is clang's).
  phase "g++ check of the rest" python3 tests/minimal/gcc_warnings.py build/dev build/minimal ||
    outcome=1
  phase "fuzz build" fuzz/run.sh --build-only || outcome=1
  printf '%s\n' "${phases[@]}" >"$checks_phases"
  return "$outcome"
}
run_checks >"$checks_log" 2>&1 &
checks_pid=$!
# A process and everything it started (the checks' compilers), stopped when the run is cut short.
# shellcheck disable=SC2317
stop_tree() {
  local child
  for child in $(pgrep -P "$1"); do stop_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
trap 'stop_tree "$checks_pid"; scripts/test-servers.sh stop; timing_table' EXIT
# Called through `phase` below, which shellcheck 0.9 does not count as a call (SC2317).
# shellcheck disable=SC2317
wait_for_checks() {
  local outcome=0
  wait "$checks_pid" || outcome=$?
  cat "$checks_log"
  while read -r line; do
    phases+=("  beside: $line")
  done <"$checks_phases"
  rm -f "$checks_log" "$checks_phases"
  return "$outcome"
}

# GoogleTest in shards, 8 at a time (CMakePresets.json); a shard stuck past 300 s fails instead of
# holding up the run.
phase "unit tests (ctest)" ctest --preset dev || status=1
# The end-to-end suite in two passes: first every test that shares the servers safely, on
# BIZON_TEST_WORKERS pytest-xdist workers (default 3; each with its own BigQuery and GCS
# emulators, tests/e2e/conftest_google.py; the longest tests first), then the `serial` ones (they
# restart a server, or bound a time) alone. A test running past 900 s fails with its traceback.
workers="${BIZON_TEST_WORKERS:-3}"
pytest=(env BIZON_BIN="$root/build/dev/bizon" "$root/build/venv/bin/python" -m pytest -q
  -p no:cacheprovider --timeout 900)
phase "end-to-end (pytest -n $workers)" "${pytest[@]}" -n "$workers" --dist loadgroup \
  -m "not serial" tests/e2e "$@" || status=1
phase "end-to-end, serial (pytest)" "${pytest[@]}" -m serial tests/e2e "$@" || status=1
# The installed binary (and the .deb) runs the quickstart with nothing of the build tree.
phase "install test" tests/install/test_install.sh build/dev || status=1
phase "checks (beside the tests)" wait_for_checks || status=1
# The core alone: its unit tests, its link line and its refusals (the build above is reused).
phase "core alone (minimal)" tests/minimal/test_minimal_build.sh || status=1
# Each libFuzzer target for 30 s on its corpus (fuzz/README.md); built above.
phase "fuzz" fuzz/run.sh 30 || status=1
exit $status
