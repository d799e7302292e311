"""dlt's own rest_api examples (its GitHub pipeline: issues and their comments, incremental; its
Pokémon pipeline: three lists, and a list with a detail request per entry) run by dlt 1.31 and,
translated into our YAML, by bizon against the same fake servers: the records must be the same.

dlt runs from bench/.venv-dlt (made by bench/run.sh, not by the test setup); without it the tests
skip, saying so. dlt writes to its filesystem destination as JSONL, normalised: nested objects
flattened into `a__b` columns, lists moved to child tables, `_dlt_*` columns added. Our records
are the API's bytes, so they are compared after the same flattening, lists and nulls left out.
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from fake_issues_api import FakeIssuesApi
from fake_pokeapi import FakePokeApi
from fake_server import OffContract
from support.http_sources import run
from support.paths import ROOT
from support.results import source_data
from support.servers import skip_or_fail

# scripts/python-env.sh makes build/dlt-venv (tests/dlt-requirements.txt); bench/run.sh's own
# venv does as well.
DLT_PYTHON = next((path for path in (ROOT / "build" / "dlt-venv" / "bin" / "python",
                                     ROOT / "bench" / ".venv-dlt" / "bin" / "python")
                   if path.exists()), ROOT / "build" / "dlt-venv" / "bin" / "python")


@pytest.fixture(autouse=True)
def dlt_installed():
    if not DLT_PYTHON.exists():
        skip_or_fail("dlt 1.31 is not installed: scripts/python-env.sh makes build/dlt-venv")

# Runs dlt's rest_api source on the config in argv[1] (JSON), into ./dlt_out as JSONL.
DLT_RUNNER = """
import json, os, sys
import dlt
from dlt.sources.rest_api import rest_api_source

here = os.getcwd()
os.environ["DATA_WRITER__DISABLE_COMPRESSION"] = "true"
os.environ["DESTINATION__FILESYSTEM__BUCKET_URL"] = "file://" + os.path.join(here, "dlt_out")
os.environ["RUNTIME__LOG_LEVEL"] = "WARNING"
config = json.load(open(sys.argv[1]))
pipeline = dlt.pipeline(pipeline_name="compare", destination="filesystem", dataset_name="data",
                        pipelines_dir=os.path.join(here, "dlt_state"))
pipeline.run(rest_api_source(config), loader_file_format="jsonl").raise_on_failed_jobs()
"""

TOKEN = "ghp-fake-token"


def run_dlt(cwd: Path, config: dict) -> dict[str, list[dict]]:
    (cwd / "dlt_config.json").write_text(json.dumps(config))
    (cwd / "dlt_runner.py").write_text(DLT_RUNNER)
    done = subprocess.run([str(DLT_PYTHON), "dlt_runner.py", "dlt_config.json"], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    tables: dict[str, list[dict]] = {}
    for path in (cwd / "dlt_out" / "data").glob("*/*.jsonl"):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        tables.setdefault(path.parent.name, []).extend(rows)
    return tables


def normal(value):
    """Timestamps compared as instants, whatever their written form."""
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] in "T ":
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
    return value


def flattened(record: dict, prefix: str = "") -> dict:
    """A record as dlt's normaliser lays it out in its table: nested objects as `a__b` columns,
    lists (child tables) and nulls left out."""
    out = {}
    for key, value in record.items():
        if isinstance(value, dict):
            out.update(flattened(value, f"{prefix}{key}__"))
        elif value is not None and not isinstance(value, list):
            out[f"{prefix}{key}"] = normal(value)
    return out


def dlt_rows(rows: list[dict]) -> list[dict]:
    return [{k: normal(v) for k, v in row.items() if not k.startswith("_dlt_") and v is not None}
            for row in rows]


def ours(bizon, name: str) -> list[dict]:
    return [flattened(record) for record in source_data(bizon.read_ndjson(f"{name}.json"))]


def same(a: list[dict], b: list[dict], key: str) -> None:
    assert len(a) == len(b)
    assert sorted(a, key=lambda r: r[key]) == sorted(b, key=lambda r: r[key])


# --------------------------------------------------------------------------------------------
# dlt's GitHub example: open issues updated since a date, newest first, and their comments.


def test_github_example_gives_the_records_dlt_gives(bizon, tmp_path):
    api = FakeIssuesApi(issues=240).start()
    try:
        api.token = TOKEN
        initial = "2024-03-01T00:20:00Z"
        dlt_config = {
            "client": {"base_url": f"{api.url}/repos/acme/rocket/",
                       "auth": {"type": "bearer", "token": TOKEN}},
            "resource_defaults": {"primary_key": "id", "write_disposition": "append",
                                  "endpoint": {"params": {"per_page": 100}}},
            "resources": [
                {"name": "issues",
                 "endpoint": {"path": "issues",
                              "params": {"sort": "updated", "direction": "desc", "state": "open",
                                         "since": {"type": "incremental",
                                                   "cursor_path": "updated_at",
                                                   "initial_value": initial}}}},
                {"name": "issue_comments",
                 "endpoint": {"path": "issues/{issue_number}/comments",
                              "params": {"issue_number": {"type": "resolve", "resource": "issues",
                                                          "field": "number"}}},
                 "include_from_parent": ["id"]},
            ],
        }
        ours_config = {
            "name": "github-example",
            "source": {
                "name": "rest_api", "stream": "github", "base_url": f"{api.url}/repos/acme/rocket/",
                "authentication": {"type": "bearer", "params": {"token": TOKEN}},
                "resource_defaults": {"params": {"per_page": 100},
                                      "pagination": {"type": "link_header"}},
                "resources": [
                    {"name": "issues", "path": "issues",
                     "params": {"sort": "updated", "direction": "desc", "state": "open"},
                     "incremental": {"param": "since", "cursor_field": "updated_at",
                                     "initial_value": initial}},
                    {"name": "issue_comments", "path": "issues/{issue_number}/comments",
                     "params": {"issue_number": {"type": "resolve", "resource": "issues",
                                                 "field": "number"}},
                     "include_from_parent": ["id"]},
                ],
            },
            "destination": {"name": "file", "config": {"destination_id": "out"}},
        }
        theirs = run_dlt(tmp_path, dlt_config)
        dlt_requests = len(api.requests)
        run(bizon, yaml.safe_dump(ours_config), check=0)
        issues, comments = ours(bizon, "issues"), ours(bizon, "issue_comments")
        # The fake holds open issues updated since the date, several pages of them.
        assert len(issues) == len([i for i in api.issues if i["state"] == "open"
                                   and i["updated_at"] >= initial]) > 100
        assert len(comments) > 100
        same(issues, dlt_rows(theirs["issues"]), "id")
        same(comments, dlt_rows(theirs["issue_comments"]), "id")
        # The same requests: a page of issues at a time, one comments request per issue.
        assert len(api.requests) - dlt_requests == dlt_requests
        assert api.violations == []
    finally:
        api.stop()


# --------------------------------------------------------------------------------------------
# dlt's Pokémon example: three lists paged by their `next` links; and a list with a detail
# request per entry.

LOCATIONS = "canalave-city eterna-city pastoria-city sunyshore-city sinnoh-pokemon-league".split()


class PokeApiWithDetails(FakePokeApi):
    """fake_pokeapi.py with `location` and `GET /api/v2/pokemon/<name>` (PokéAPI's detail
    endpoint, a few of its fields)."""

    def __init__(self):
        super().__init__()
        self.resources["location"] = LOCATIONS
        self.route("GET", "/api/v2/location", self.resource_list)

    def detail(self, name: str) -> dict:
        number = self.resources["pokemon"].index(name) + 1
        return {"id": number, "name": name, "height": number % 17 + 3, "weight": number * 7,
                "species": {"name": name, "url": f"{self.root}/pokemon-species/{number}/"},
                "types": [{"slot": 1, "type": {"name": "grass"}}]}

    def resource_list(self, request):
        parts = request.path.strip("/").split("/")
        if len(parts) == 4 and parts[2] == "pokemon":
            # Both tools send the shared list params along; the API ignores them here.
            self.only_params(request, {"limit", "offset"})
            if parts[3] not in self.resources["pokemon"]:
                raise OffContract(f"no pokemon {parts[3]}", status=404)
            return self.detail(parts[3])
        return super().resource_list(request)


def test_pokemon_examples_give_the_records_dlt_gives(bizon, tmp_path):
    api = PokeApiWithDetails().start()
    try:
        base = f"{api.url}/api/v2/"
        dlt_config = {
            "client": {"base_url": base},
            "resource_defaults": {"endpoint": {"params": {"limit": 10}}},
            "resources": ["pokemon", "berry", "location",
                          {"name": "pokemon_details",
                           "endpoint": {"path": "pokemon/{name}",
                                        "params": {"name": {"type": "resolve",
                                                            "resource": "pokemon",
                                                            "field": "name"}}}}],
        }
        ours_config = {
            "name": "pokemon-example",
            "source": {
                "name": "rest_api", "stream": "pokemon", "base_url": base,
                "resource_defaults": {"params": {"limit": 10}, "record_id": "name",
                                      "pagination": {"type": "next_url"}},
                "resources": [
                    {"name": "pokemon", "path": "pokemon"},
                    {"name": "berry", "path": "berry"},
                    {"name": "location", "path": "location"},
                    {"name": "pokemon_details", "path": "pokemon/{name}",
                     "params": {"name": {"type": "resolve", "resource": "pokemon",
                                         "field": "name"}},
                     "pagination": {"type": "none"}},
                ],
            },
            "destination": {"name": "file", "config": {"destination_id": "out"}},
        }
        theirs = run_dlt(tmp_path, dlt_config)
        api.requests.clear()
        run(bizon, yaml.safe_dump(ours_config), check=0)
        counts = {"pokemon": len(api.resources["pokemon"]), "berry": len(api.resources["berry"]),
                  "location": len(LOCATIONS), "pokemon_details": len(api.resources["pokemon"])}
        for table, count in counts.items():
            mine = ours(bizon, table)
            assert len(mine) == count, table
            same(mine, dlt_rows(theirs[table]), "name")
        assert api.violations == []
    finally:
        api.stop()
