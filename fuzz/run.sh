#!/usr/bin/env bash
# Builds the libFuzzer targets (the `fuzz` preset, clang 19) and runs each one for a bounded time
# on its committed corpus under ASan and UBSan. Fails when a target crashes, leaks, trips a
# sanitizer or times out on one input; the input is then in build/fuzz/findings/.
#
#   fuzz/run.sh [seconds per target, default 30] [target...]
#   fuzz/run.sh --build-only
#
# New inputs a run discovers go to build/fuzz/corpus/<target>/, not into fuzz/corpus/: the
# committed seeds change only by hand (or fuzz/corpus/generate.py).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
seconds="${1:-30}"
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(fuzz_yaml_config fuzz_json_page fuzz_avro_decoder fuzz_queue_frames)
fi

build_start=$SECONDS
if [[ ! -f build/fuzz/build.ninja ]]; then
  cmake --preset fuzz >/dev/null
fi
flock /tmp/bizon-build.lock cmake --build --preset fuzz
echo "fuzz: build took $((SECONDS - build_start)) s"
if [[ "$seconds" == --build-only ]]; then
  exit 0
fi

symbolizer="$(command -v llvm-symbolizer-19 llvm-symbolizer llvm-symbolizer-14 | head -n 1 || true)"
export ASAN_SYMBOLIZER_PATH="${symbolizer}"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# One target per core at a time: each libFuzzer process is single-threaded, so on N cores N
# targets run side by side and each still gets its full time.
run_target() {
  local target="$1" work="build/fuzz/corpus/$1" run_start=$SECONDS
  mkdir -p "$work"
  # -timeout: one input taking seconds is a finding too (the decoders run per message).
  # -rss_limit_mb: also the largest single allocation allowed (malloc_limit_mb defaults to it).
  if "build/fuzz/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="build/fuzz/findings/$target-" \
      "$work" "fuzz/corpus/$target" >"build/fuzz/$target.log" 2>&1; then
    echo "fuzz: $target ok in $((SECONDS - run_start)) s," \
      "$(grep -o 'stat::number_of_executed_units: [0-9]*' "build/fuzz/$target.log" | \
        awk '{print $2}') inputs"
  else
    echo "fuzz: $target FAILED after $((SECONDS - run_start)) s (build/fuzz/$target.log):"
    grep -E "ERROR|SUMMARY|runtime error|Test unit written" "build/fuzz/$target.log" | head -n 10
    return 1
  fi
}

status=0
mkdir -p build/fuzz/findings
slots="$(nproc)"
running=0
for target in "${targets[@]}"; do
  if ((running >= slots)); then
    wait -n || status=1
    running=$((running - 1))
  fi
  run_target "$target" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || status=1
  running=$((running - 1))
done
exit $status
