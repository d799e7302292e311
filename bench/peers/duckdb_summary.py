"""What the `duckdb` case checks of a run's DuckDB table, read with the duckdb package (run with
the dlt venv's Python, which has it): prints one JSON object with the rows, the distinct ids, the
lowest and highest, and the payloads of records 0 and n-1.

Usage: duckdb_summary.py <database file> <table> <id column> <n>
  id column `_source_record_id` (ours: the payload is the JSON text in `_source_data`) or `id`
  (dlt's: the payload is the row's own columns, dlt's `_dlt_*` left out).
"""

import json
import sys

import duckdb


def main() -> int:
    path, table, column, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with duckdb.connect(path, read_only=True) as connection:
        ids = f"CAST({column} AS BIGINT)"
        rows, distinct, low, high = connection.execute(
            f"SELECT count(*), count(DISTINCT {ids}), min({ids}), max({ids}) FROM {table}").fetchone()
        summary = {"rows": rows, "distinct": distinct, "low": low, "high": high}
        for key, i in (("first", 0), ("last", n - 1)):
            cursor = connection.execute(f"SELECT * FROM {table} WHERE {ids} = ?", [i])
            names = [d[0] for d in cursor.description]
            found = cursor.fetchone()
            if found is None:
                summary[key] = {}
            elif column == "_source_record_id":
                summary[key] = json.loads(dict(zip(names, found))["_source_data"])
            else:
                summary[key] = {k: v for k, v in zip(names, found) if not k.startswith("_dlt")}
    print(json.dumps(summary, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
