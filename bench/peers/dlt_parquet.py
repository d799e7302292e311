"""The `parquet` case's dlt side: the generator's records, made in Python in pages of 1,000, loaded
by dlt into its filesystem destination as Parquet (the table's files under ./out/bench/items/,
pipeline state and load packages under ./dlt), at dlt's defaults otherwise.

Usage: dlt_parquet.py <file holding the record count> <payload bytes>
"""

import os
import sys
from pathlib import Path

import dlt

# The generator's records, as the rest case's server renders them.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "servers"))
from paged_server import pages  # noqa: E402


def main() -> int:
    payload_bytes = int(sys.argv[2])
    with open(sys.argv[1]) as f:
        count = int(f.read())
    here = os.getcwd()
    os.environ["DESTINATION__FILESYSTEM__BUCKET_URL"] = "file://" + os.path.join(here, "out")
    os.environ["RUNTIME__LOG_LEVEL"] = "WARNING"
    padding = "x" * payload_bytes

    @dlt.resource(name="items", write_disposition="replace")
    def items():
        yield from pages(count, padding)

    pipeline = dlt.pipeline(pipeline_name="bench_parquet", destination="filesystem",
                            dataset_name="bench", pipelines_dir=os.path.join(here, "dlt"))
    info = pipeline.run(items(), loader_file_format="parquet")
    info.raise_on_failed_jobs()
    return 0


if __name__ == "__main__":
    sys.exit(main())
