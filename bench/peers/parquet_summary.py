"""What the `parquet` case checks of a run's Parquet files, read with pyarrow (run with the dlt
venv's Python, which has it): prints one JSON object with the rows, the distinct ids, the lowest and
highest, and the payloads of records 0 and n-1.

Usage: parquet_summary.py <directory of .parquet files> <id column> <n>
  id column `source_record_id` (ours: the payload is the JSON text in `source_data`) or `id`
  (dlt's: the payload is the row's own columns, dlt's `_dlt_*` left out).
"""

import json
import sys

import pyarrow.compute as pc
import pyarrow.dataset as ds


def main() -> int:
    directory, column, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    dataset = ds.dataset(directory, format="parquet")
    ids = pc.cast(dataset.to_table(columns=[column]).column(column), "int64")
    summary = {"rows": len(ids), "distinct": pc.count_distinct(ids).as_py(),
               "low": pc.min(ids).as_py(), "high": pc.max(ids).as_py()}
    for key, i in (("first", 0), ("last", n - 1)):
        wanted = str(i) if column == "source_record_id" else i
        rows = dataset.to_table(filter=ds.field(column) == wanted).to_pylist()
        if not rows:
            summary[key] = {}
        elif column == "source_record_id":
            summary[key] = json.loads(rows[0]["source_data"])
        else:
            summary[key] = {k: v for k, v in rows[0].items() if not k.startswith("_dlt")}
    print(json.dumps(summary, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
