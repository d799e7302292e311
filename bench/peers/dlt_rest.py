"""The `rest` case's dlt side: dlt's rest_api source reading bench/servers/paged_server.py into
its filesystem destination as uncompressed JSONL, in the current directory.

The same requests as our side and the original's: /items?offset=0&limit=<page_size>, then each
page's "next" URL until it is null; records under "data". dlt keeps its pipeline state and its
load packages under ./dlt (pipelines_dir), and writes the table's files under ./out/<dataset>/items/.

Usage: dlt_rest.py <base_url> <page_size>
"""

import sys

from dlt.sources.rest_api import rest_api_source

from dlt_filesystem import load_as_jsonl


def main() -> int:
    base_url, page_size = sys.argv[1], int(sys.argv[2])
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
    return load_as_jsonl(source, "bench_rest")


if __name__ == "__main__":
    sys.exit(main())
