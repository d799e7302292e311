#!/usr/bin/env bash
# Installs the embedded Python's packages (src/python/requirements.txt) from PyPI into a private
# site directory that the bizon binary puts on sys.path (src/python/README.md). Run by the build
# (the embedded-Python block of CMakeLists.txt):
#
#   scripts/python-site.sh <python> <requirements.txt> <site directory>
#
# <python> is the interpreter bizon embeds (/usr/bin/python3): pip picks the wheels of its
# version. Idempotent: skipped while the requirements and the Python version are unchanged.
# The directory is replaced whole, so a failed install never leaves a half-filled one.
set -euo pipefail
if (($# != 3)); then
  echo "usage: $0 <python> <requirements.txt> <site directory>" >&2
  exit 2
fi
python="$1" requirements="$2" site="$3"
want="$(sha256sum "$requirements" | cut -d' ' -f1) $("$python" -c 'import sys; print(sys.version.split()[0])')"
stamp="$site/.requirements.sha256"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  touch "$stamp"  # The build's output: newer than its inputs again.
  exit 0
fi
if ! "$python" -m pip --version >/dev/null 2>&1; then
  echo "python-site: $python has no pip (Debian: apt-get install python3-pip;" \
    "scripts/install-deps.sh installs it)" >&2
  exit 1
fi
staging="$site.partial"
rm -rf "$staging"
# --target installs beside nothing else: Debian's own packages (dist-packages) stay untouched.
"$python" -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
  --root-user-action=ignore --only-binary=:all: --target "$staging" -r "$requirements"
rm -rf "${staging:?}/bin"  # Console scripts of the packages: nothing runs them.
echo "$want" > "$staging/.requirements.sha256"
rm -rf "$site"
mv "$staging" "$site"
