"""The `postgres` case's dlt side: the generator's records, made in Python in pages of 1,000,
loaded by dlt into PostgreSQL at dlt's defaults (its postgres destination, table `items` in the
dataset named on the command line, which dlt creates as a schema).

The records are those of bench/sources/generator_source.py (and of our built-in generator):
{"id", "name", "updated_at", "value", "padding"}, made by bench/servers/paged_server.py's record(). dlt keeps its pipeline state and load packages
under ./dlt (pipelines_dir).

Usage: dlt_postgres.py <libpq URI> <dataset> <file holding the record count> <payload bytes>
"""

import os
import sys
from pathlib import Path

import dlt

# The generator's records, as the rest case's server renders them.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "servers"))
from paged_server import pages  # noqa: E402


def main() -> int:
    url, dataset, payload_bytes = sys.argv[1], sys.argv[2], int(sys.argv[4])
    with open(sys.argv[3]) as f:
        count = int(f.read())
    here = os.getcwd()
    os.environ["DESTINATION__POSTGRES__CREDENTIALS"] = url
    os.environ["RUNTIME__LOG_LEVEL"] = "WARNING"
    padding = "x" * payload_bytes

    @dlt.resource(name="items", write_disposition="replace")
    def items():
        yield from pages(count, padding)

    pipeline = dlt.pipeline(pipeline_name="bench_postgres", destination="postgres",
                            dataset_name=dataset, pipelines_dir=os.path.join(here, "dlt"))
    info = pipeline.run(items())
    info.raise_on_failed_jobs()
    return 0


if __name__ == "__main__":
    sys.exit(main())
