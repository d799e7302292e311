#!/usr/bin/env bash
# The lint step of the test command: clang-format in check mode over every tracked C++ file, then
# every tracked shell script through shellcheck, then clang-tidy (.clang-tidy's checks, every
# finding an error) over the sources of the library and the binary, with the compile commands of
# a configured build (default: build/dev).
# Usage: scripts/lint.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${1:-build/dev}"
if [[ ! -f "$build/compile_commands.json" ]]; then
  echo "lint: $build/compile_commands.json is missing: configure that build first" >&2
  exit 2
fi
# A command per source, also when the build compiles them in unity batches.
commands="$(python3 scripts/per_file_commands.py "$build")"
mapfile -t cxx_files < <(git ls-files '*.cc' '*.h')
# The sources this build compiles: a file of an optional family's other side (without_python.cc
# when Python is ON) is not in its compile commands.
mapfile -t tidy_files < <(git ls-files 'src/*.cc' | grep -v '_test\.cc$' |
  while read -r file; do
    if grep -q "\"file\": \"$root/$file\"" "$commands"; then echo "$file"; fi
  done)
mapfile -t shell_files < <(git ls-files '*.sh' .ci/run)

status=0
echo "lint: clang-format --dry-run on ${#cxx_files[@]} files"
clang-format --dry-run --Werror "${cxx_files[@]}" || status=1

# -x: follow the files a script sources (each names them in a `# shellcheck source=` directive).
echo "lint: shellcheck on ${#shell_files[@]} files"
shellcheck -x "${shell_files[@]}" || status=1

# clang-tidy from build/lint-venv (scripts/python-env.sh, pinned in scripts/lint-requirements.txt).
tidy_bin="$root/build/lint-venv/bin"
if [[ ! -x "$tidy_bin/clang-tidy" ]]; then
  echo "lint: $tidy_bin/clang-tidy is missing: run scripts/python-env.sh" >&2
  exit 2
fi
echo "lint: $("$tidy_bin/clang-tidy" --version | grep -o 'LLVM version [0-9.]*') clang-tidy on" \
  "${#tidy_files[@]} files"
"$tidy_bin/python" "$tidy_bin/run-clang-tidy.py" -p "$(dirname "$commands")" -j "$(nproc)" -quiet \
  -clang-tidy-binary "$tidy_bin/clang-tidy" -warnings-as-errors='*' "${tidy_files[@]}" \
  >"$build/clang-tidy.log" 2>&1 || status=1
# The findings only (run-clang-tidy also echoes each command and clang's warning counts).
grep -E '(warning|error):' "$build/clang-tidy.log" | sort -u || true
if [[ $status -ne 0 ]]; then
  echo "lint: failed (findings above; clang-tidy's full output in $build/clang-tidy.log)" >&2
else
  echo "lint: clean"
fi
exit $status
