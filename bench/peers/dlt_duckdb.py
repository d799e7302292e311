"""The `duckdb` case's dlt side: the generator's records, made in Python in pages of 1,000, loaded
by dlt into its duckdb destination (the table bench.items of ./peer.duckdb, pipeline state and
load packages under ./dlt), replacing the table, at dlt's defaults otherwise.

Usage: dlt_duckdb.py <file holding the record count> <payload bytes>
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
    os.environ["RUNTIME__LOG_LEVEL"] = "WARNING"
    padding = "x" * payload_bytes

    @dlt.resource(name="items", write_disposition="replace")
    def items():
        yield from pages(count, padding)

    # The file is not named after the dataset: DuckDB would find `bench` ambiguous.
    destination = dlt.destinations.duckdb(os.path.join(here, "peer.duckdb"))
    pipeline = dlt.pipeline(pipeline_name="bench_duckdb", destination=destination,
                            dataset_name="bench", pipelines_dir=os.path.join(here, "dlt"))
    info = pipeline.run(items())
    info.raise_on_failed_jobs()
    return 0


if __name__ == "__main__":
    sys.exit(main())
