#!/usr/bin/env bash
# The second quickstart, end to end: serves examples/data/books.json on 127.0.0.1:8765, runs
# examples/rest_to_duckdb.yml (which loads it into ./quickstart.duckdb, state included), then
# prints the loaded table with DuckDB's Python package.
#
# Usage: examples/rest_to_duckdb.sh   (in the directory that should hold quickstart.duckdb)
#   BIZON_BIN  the binary (default: build/release/bizon)
#   PYTHON     a Python with the duckdb package (default: build/venv/bin/python, which
#              scripts/test.sh makes; or `python3 -m pip install duckdb==1.5.6`)
set -euo pipefail

examples="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$examples")"
bizon="${BIZON_BIN:-$root/build/release/bizon}"
python="${PYTHON:-$root/build/venv/bin/python}"

python3 -m http.server 8765 --bind 127.0.0.1 --directory "$examples/data" >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  if python3 -c 'import socket; socket.create_connection(("127.0.0.1", 8765), 0.2)' 2>/dev/null; then
    break
  fi
  sleep 0.1
done

"$bizon" run "$examples/rest_to_duckdb.yml"

"$python" - <<'PY'
import duckdb

with duckdb.connect("quickstart.duckdb", read_only=True) as connection:
    connection.sql("SELECT id, title, author, year, price, in_stock, published"
                   " FROM books ORDER BY year").show()
PY
