"""The README's quickstart and the original's file-destination example, through `bizon run`."""

from __future__ import annotations

import json
import re

from support.pipelines import CREATURES, RECORD_FIELDS, dummy, pipeline, quickstart_text
from support.results import read_result

# destinations-file--file.example.yml with its placeholder source filled in.
FILE_EXAMPLE = """\
name: source_to_file

source:
  name: dummy
  stream: creatures
  authentication:
    type: api_key
    params:
      token: dummy_key

destination:
  name: file
  config:
    destination_id: output.jsonl
    format: json

engine:
  backend:
    type: sqlite_in_memory
    config:
      database: not_used
      schema: not_used
"""

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00$")


def logged_records(stderr: str, mode: str) -> list[dict]:
    marker = f"[{mode}] "
    return [json.loads(line.split(marker, 1)[1]) for line in stderr.splitlines() if marker in line]


def test_quickstart_logs_the_five_creatures(bizon):
    config = bizon.write("config.yml", quickstart_text())
    result = bizon.run("run", config, "--result-json", "result.json", check=0)

    assert "Pipeline finished successfully." in result.stdout
    assert logged_records(result.stderr, "full_refresh") == CREATURES
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["status"] == "success"
    assert outcome["records_written"] == 5
    assert (outcome["producer"], outcome["consumer"], outcome["stream"]) == ("success", "success", None)
    # The default backend is ./bizon.sqlite3.
    assert (bizon.cwd / "bizon.sqlite3").exists()


def test_quickstart_plants_stream(bizon):
    config = bizon.write("config.yml", quickstart_text().replace("creatures", "plants"))
    result = bizon.run("run", config, check=0)
    names = [record["name"] for record in logged_records(result.stderr, "full_refresh")]
    assert names == ["tree", "flower", "cactus", "bamboo", "rose"]


def test_original_file_example_writes_destination_id_json_with_in_memory_backend(bizon):
    # The original cannot run this example (its sqlite_in_memory gives each component a private
    # database); ours shares one in-memory database across the run.
    config = bizon.write("file.example.yml", FILE_EXAMPLE)
    bizon.run("run", config, check=0)

    rows = bizon.read_ndjson("output.jsonl.json")
    assert [json.loads(row["source_data"]) for row in rows] == CREATURES
    for row in rows:
        assert list(row) == RECORD_FIELDS
        assert re.fullmatch(r"[0-9a-f]{32}", row["bizon_id"])
        for field in ("bizon_extracted_at", "bizon_loaded_at", "source_timestamp"):
            assert ISO_UTC.match(row[field]), row[field]
        assert isinstance(row["source_data"], str)  # JSON text, not a nested object.
    assert [row["source_record_id"] for row in rows] == ["9898", "88787", "98", "3333", "56565"]
    assert len({row["bizon_id"] for row in rows}) == 5
    # Nothing persisted, nothing staged left behind.
    leftovers = sorted(path.name for path in bizon.cwd.iterdir())
    assert leftovers == ["file.example.yml", "output.jsonl.json"]


def test_file_example_with_process_runner_and_in_memory_backend(bizon):
    # The producer runs in a forked process, which cannot reach the parent's in-memory database.
    text = FILE_EXAMPLE.replace("engine:\n", "engine:\n  runner:\n    type: process\n")
    config = bizon.write("file.example.yml", text)
    bizon.run("run", config, "--result-json", "result.json", check=0)
    rows = bizon.read_ndjson("output.jsonl.json")
    assert [json.loads(row["source_data"]) for row in rows] == CREATURES
    assert read_result(bizon.cwd / "result.json")["records_written"] == 5


def test_dummy_to_file_with_default_backend_twice_is_a_fresh_full_refresh(bizon):
    config = bizon.write(
        "config.yml",
        pipeline("creatures to file", dummy(), {"name": "file", "config": {"destination_id": "c"}}),
    )
    bizon.run("run", config, check=0)
    bizon.run("run", config, check=0)
    assert [json.loads(row["source_data"]) for row in bizon.read_ndjson("c.json")] == CREATURES
