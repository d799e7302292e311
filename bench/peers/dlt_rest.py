"""The `rest` case's dlt side: dlt's rest_api source reading bench/servers/paged_server.py into
its filesystem destination as uncompressed JSONL, in the current directory.

The same requests as our side and the original's: /items?offset=0&limit=<page_size>, then each
page's "next" URL until it is null; records under "data". dlt keeps its pipeline state and its
load packages under ./dlt (pipelines_dir), and writes the table's files under ./out/<dataset>/items/.

Usage: dlt_rest.py <base_url> <page_size>
"""

import os
import sys

import dlt
from dlt.sources.rest_api import rest_api_source


def main() -> int:
    base_url, page_size = sys.argv[1], int(sys.argv[2])
    here = os.getcwd()
    # Plain JSONL files, as the other sides write; dlt compresses them by default.
    os.environ["DATA_WRITER__DISABLE_COMPRESSION"] = "true"
    os.environ["DESTINATION__FILESYSTEM__BUCKET_URL"] = "file://" + os.path.join(here, "out")
    os.environ["RUNTIME__LOG_LEVEL"] = "WARNING"
    source = rest_api_source({
        "client": {"base_url": base_url},
        "resources": [{
            "name": "items",
            "endpoint": {
                "path": "items",
                "params": {"offset": 0, "limit": page_size},
                "data_selector": "data",
                "paginator": {"type": "json_link", "next_url_path": "next"},
            },
        }],
    })
    pipeline = dlt.pipeline(pipeline_name="bench_rest", destination="filesystem",
                            dataset_name="bench", pipelines_dir=os.path.join(here, "dlt"))
    info = pipeline.run(source, loader_file_format="jsonl")
    info.raise_on_failed_jobs()
    return 0


if __name__ == "__main__":
    sys.exit(main())
