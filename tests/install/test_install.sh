#!/usr/bin/env bash
# Installs bizon the two ways a user would and runs the quickstart (examples/quickstart.yml:
# dummy -> logger, five creatures) from each, in a temporary directory, with a PATH of only the
# installed bin/ and /usr/bin:
#   1. `cmake --install <build> --prefix <tmp>/prefix/usr`;
#   2. `cpack -G DEB` in <build>, the package unpacked with `dpkg-deb -x`; its Depends must name
#      the Debian package of every library the binary links.
# Also checks that the binary links nothing from the repository (ldd).
#
#   tests/install/test_install.sh [build directory, default build/dev]
#
# scripts/test.sh runs it on the dev build (clang, ASan + UBSan, whose runtimes are linked in);
# `cpack -G DEB` in build/release makes the package users get.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
build="$(cd "${1:-build/dev}" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

fail() {
  echo "install test: FAILED: $*" >&2
  exit 1
}

# The Debian packages of the libraries `binary` links directly (its NEEDED entries), one a line.
linked_packages() {
  local binary="$1" soname path package
  for soname in $(readelf -d "$binary" | awk '/\(NEEDED\)/ {gsub(/[][]/, "", $5); print $5}'); do
    path="$(ldd "$binary" | awk -v name="$soname" '$1 == name && $2 == "=>" {print $3}')"
    [[ -n "$path" ]] || fail "ldd does not resolve $soname"
    # Merged /usr: dpkg knows some libraries by their /lib path, others by /usr/lib.
    package="$(dpkg -S "$path" 2>/dev/null || dpkg -S "${path#/usr}" 2>/dev/null ||
      dpkg -S "/usr$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null || true)"
    [[ -n "$package" ]] || fail "no Debian package owns $path ($soname)"
    echo "${package%%:*}"
  done | sort -u
}

# `bizon run <config>` in <work> with nothing but the installed bin/ and /usr/bin on PATH and an
# empty environment; stdout.txt and stderr.txt stay in <work>, stderr is shown on failure.
run_installed() {
  local prefix="$1" work="$2" config="$3" status=0
  (cd "$work" && env -i PATH="$prefix/bin:/usr/bin" HOME="$work" \
    ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
    bizon run "$config" >stdout.txt 2>stderr.txt) || status=$?
  if ((status != 0)); then
    cat "$work/stderr.txt" >&2
    echo "install test: bizon run $config exited with $status" >&2
  fi
  return "$status"
}

run_quickstart() {
  local prefix="$1" label="$2"
  local binary="$prefix/bin/bizon"
  [[ -x "$binary" ]] || fail "$label: no executable $binary"
  if ldd "$binary" | grep -q "not found"; then
    fail "$label: unresolved libraries: $(ldd "$binary" | grep "not found" | tr '\n' ' ')"
  fi
  if ldd "$binary" | grep -qF "$root"; then
    fail "$label: links a library from the repository: $(ldd "$binary" | grep -F "$root")"
  fi
  local example="$prefix/share/doc/bizon/examples/quickstart.yml"
  [[ -f "$example" ]] || fail "$label: the quickstart example was not installed ($example)"
  local work="$tmp/run-$label"
  mkdir -p "$work"
  cp "$example" "$work/quickstart.yml"
  run_installed "$prefix" "$work" quickstart.yml || fail "$label: bizon run quickstart.yml failed"
  grep -q "Pipeline finished successfully." "$work/stdout.txt" ||
    fail "$label: no success line in stdout: $(head -c 500 "$work/stdout.txt")"
  local creature
  for creature in bizon croco froggy turtle poulpo; do
    grep -q "\[full_refresh\] .*\"$creature\"" "$work/stderr.txt" ||
      fail "$label: $creature was not logged"
  done
  local logged
  logged="$(grep -c "\[full_refresh\] {" "$work/stderr.txt" || true)"
  [[ "$logged" == 5 ]] || fail "$label: $logged records logged, expected 5"
  [[ -f "$work/bizon.sqlite3" ]] || fail "$label: no ./bizon.sqlite3 state in the working directory"
  echo "install test: $label: the quickstart logged 5 creatures"
  run_pydantic2_source "$prefix" "$label"
}

# A custom source written with pydantic 2 idioms runs from the installed tree: the pinned packages
# come from <prefix>/lib/bizon/python, not from the build tree or Debian's dist-packages.
run_pydantic2_source() {
  local prefix="$1" label="$2"
  [[ -d "$prefix/lib/bizon/python/pydantic" ]] ||
    fail "$label: pydantic was not installed under $prefix/lib/bizon/python"
  local work="$tmp/pydantic-$label"
  mkdir -p "$work"
  cp "$root/tests/e2e/data/python/pydantic2_source.py" "$work/source.py"
  cat >"$work/config.yml" <<'YAML'
name: installed-pydantic2
source:
  name: clamped
  stream: values
  source_file_path: source.py
  count: 2
  ratio: 7.5
destination:
  name: file
  config:
    destination_id: out
YAML
  run_installed "$prefix" "$work" config.yml || fail "$label: the pydantic 2 custom source failed"
  local lines
  lines="$(grep -c '\\"ratio\\": 1.0' "$work/out.json" || true)"
  [[ "$lines" == 2 ]] || fail "$label: expected 2 records with the clamped ratio 1.0: $(head -c 500 "$work/out.json")"
  echo "install test: $label: a pydantic 2 custom source ran from the installed packages"
}

start=$SECONDS
cmake --install "$build" --prefix "$tmp/prefix/usr" >/dev/null
run_quickstart "$tmp/prefix/usr" prefix

# dpkg-shlibdeps asks dpkg about every library, also those only merged /usr knows: its
# "no path found" notes are expected.
(cd "$build" && cpack -G DEB -B "$tmp/package" >/dev/null 2>"$tmp/cpack.log") ||
  fail "cpack -G DEB failed: $(tail -n 20 "$tmp/cpack.log")"
deb="$(find "$tmp/package" -maxdepth 1 -name 'bizon_*.deb' | head -n 1)"
[[ -n "$deb" ]] || fail "cpack made no bizon_*.deb in $tmp/package"
dpkg-deb -x "$deb" "$tmp/deb-root"
depends="$(dpkg-deb -f "$deb" Depends)"
[[ -n "$depends" ]] || fail "$(basename "$deb") has no Depends"
# Package names only: "libcurl4 (>= 7.16.2), libc6 (>= 2.34)" -> "libcurl4 libc6". Both ',' and
# '|' (an alternative) end a name: tr's [\n*] repeats the newline for each.
depends_names=" $(tr ',|' '[\n*]' <<<"$depends" | awk '{print $1}' | tr '\n' ' ') "
while read -r package; do
  # Either the package itself or a name it provides (libspdlog1.10 provides libspdlog1.10-fmt9).
  provided="$(dpkg-query -W -f='${Provides}' "$package" | tr ',' '\n' | awk '{print $1}')"
  satisfied=0
  for name in "$package" $provided; do
    [[ "$depends_names" == *" $name "* ]] && satisfied=1
  done
  ((satisfied)) ||
    fail "$(basename "$deb") does not depend on $package, which the binary links (Depends: $depends)"
done < <(linked_packages "$tmp/deb-root/usr/bin/bizon")
run_quickstart "$tmp/deb-root/usr" deb
echo "install test: $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB) Depends: $depends"
echo "install test: ok in $((SECONDS - start)) s"
