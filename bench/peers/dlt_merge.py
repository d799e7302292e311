"""The `merge` case's dlt side: the generator's records, made in Python in pages of 1,000, merged
by dlt into PostgreSQL (`write_disposition="merge"`, `primary_key="id"`), table `items` of the
dataset named on the command line (a schema, which dlt creates, with `<dataset>_staging` beside
it). Everything else at dlt's defaults.

The run file (JSON) says which records and how: {"count": C, "start": "<ISO>", "id_offset": O,
"strategy": "delete-insert" | "upsert"}: records 0..C-1 of bench/servers/paged_server.py's
record() with updated_at from `start`, record i carrying id i + O, the same records as our
`generator` source with `count`, `start` (and the proposed `id_offset`). delete-insert is dlt's
default merge strategy; upsert is asked for by name. dlt keeps its pipeline state and load
packages under ./dlt (pipelines_dir), so the timed run is the second run of the pipeline that
seeded the table, in the same directory.

Usage: dlt_merge.py <libpq URI> <dataset> <run file> <payload bytes>
"""

import json
import os
import sys
from datetime import datetime
from pathlib import Path

import dlt

# The generator's records, as the rest case's server renders them.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "servers"))
from paged_server import record  # noqa: E402

PAGE = 1000


def pages(count: int, start: datetime, id_offset: int, padding: str):
    """Records 0..count-1 in pages of PAGE, record i with id i + id_offset."""
    for first in range(0, count, PAGE):
        page = [record(i, padding, start) for i in range(first, min(count, first + PAGE))]
        if id_offset:
            for i, data in enumerate(page, first):
                data["id"] = i + id_offset  # Replaced in place: "id" stays the first key.
        yield page


def main() -> int:
    url, dataset, payload_bytes = sys.argv[1], sys.argv[2], int(sys.argv[4])
    spec = json.loads(Path(sys.argv[3]).read_text())
    os.environ["DESTINATION__POSTGRES__CREDENTIALS"] = url
    os.environ["RUNTIME__LOG_LEVEL"] = "WARNING"
    start = datetime.fromisoformat(spec["start"].replace("Z", "+00:00"))
    strategy = spec["strategy"]
    # dlt's default merge strategy is delete-insert: plain "merge" asks for it as users do.
    disposition = ("merge" if strategy == "delete-insert"
                   else {"disposition": "merge", "strategy": strategy})
    items = dlt.resource(pages(spec["count"], start, spec.get("id_offset", 0), "x" * payload_bytes),
                         name="items", write_disposition=disposition, primary_key="id")
    pipeline = dlt.pipeline(pipeline_name="bench_merge", destination="postgres",
                            dataset_name=dataset, pipelines_dir=os.path.join(os.getcwd(), "dlt"))
    info = pipeline.run(items)
    info.raise_on_failed_jobs()
    return 0


if __name__ == "__main__":
    sys.exit(main())
