"""The `rest-children` case's dlt side: dlt's rest_api source reading
bench/servers/parent_child_server.py (parents paged by their `next` URL, one children request per
parent, resolved from the parent's id) into its filesystem destination as uncompressed JSONL, in
the current directory (tables under ./out/<dataset>/parents/ and ./out/<dataset>/children/).

At dlt's defaults the children are requested one after the other; `--parallelized` sets the
child resource's `parallelized: True` (dlt's own thread pool).

Usage: dlt_rest_children.py <base_url> <per_page> [--parallelized]
"""

import sys

from dlt.sources.rest_api import rest_api_source

from dlt_filesystem import load_as_jsonl


def main() -> int:
    base_url, per_page = sys.argv[1], int(sys.argv[2])
    parallelized = "--parallelized" in sys.argv[3:]
    source = rest_api_source({
        "client": {"base_url": base_url},
        "resources": [
            {
                "name": "parents",
                "endpoint": {
                    "path": "parents",
                    "params": {"page": 1, "per_page": per_page},
                    "data_selector": "data",
                    "paginator": {"type": "json_link", "next_url_path": "next"},
                },
            },
            {
                "name": "children",
                "parallelized": parallelized,
                "endpoint": {
                    "path": "parents/{parent_id}/children",
                    "params": {"parent_id": {"type": "resolve", "resource": "parents",
                                             "field": "id"}},
                    "data_selector": "data",
                    "paginator": "single_page",
                },
            },
        ],
    })
    return load_as_jsonl(source, "bench_rest_children")


if __name__ == "__main__":
    sys.exit(main())
