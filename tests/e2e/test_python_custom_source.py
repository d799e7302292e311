"""Custom Python sources through `bizon run --custom-source` / `source.source_file_path`:
a paginated full-refresh source, an incremental one, config validation against the source's
config class. Connectors spec §4.2."""

from __future__ import annotations

from support.paths import PYTHON_DATA
from support.pipelines import pipeline
from support.python import needs_custom_source
from support.results import read_result

pytestmark = needs_custom_source

PAGINATED = str(PYTHON_DATA / "paginated_source.py")
INCREMENTAL = str(PYTHON_DATA / "incremental_source.py")


def test_paginated_source_writes_every_page(bizon):
    config = bizon.write("config.yml", pipeline("animals", {"name": "animals", "stream": "animals", "page_size": 2}))
    bizon.run("run", config, "--custom-source", PAGINATED, "--result-json", "result.json", check=0)

    rows = bizon.read_ndjson("out.json")
    assert [row["source_record_id"] for row in rows] == ["1", "2", "3", "4", "5"]
    # No transform: json.dumps(data, ensure_ascii=False), non-ASCII kept.
    assert rows[3]["source_data"] == '{"id": 4, "name": "北极熊", "habitat": "arctic"}'
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["status"] == "success" and outcome["records_written"] == 5


def test_invalid_option_is_rejected_by_the_config_class(bizon):
    config = bizon.write("config.yml", pipeline("animals", {"name": "animals", "stream": "animals", "page_size": "ten"}))
    result = bizon.run("run", config, "--custom-source", PAGINATED)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "source config does not match PaginatedSourceConfig" in output
    assert "page_size" in output


def test_unknown_stream_lists_the_file_streams(bizon):
    config = bizon.write("config.yml", pipeline("animals", {"name": "animals", "stream": "plants"}))
    result = bizon.run("run", config, "--custom-source", PAGINATED)
    assert result.returncode != 0
    assert "Stream plants not found. Available streams are ['animals']" in result.stdout + result.stderr


def test_incremental_is_refused_for_a_source_without_get_records_after(bizon):
    source = {"name": "animals", "stream": "animals", "sync_mode": "incremental"}
    config = bizon.write("config.yml", pipeline("animals", source))
    result = bizon.run("run", config, "--custom-source", PAGINATED)
    assert result.returncode != 0
    assert "does not support incremental" in result.stdout + result.stderr


def test_incremental_source_reads_everything_then_only_newer_records(bizon):
    source = {"name": "events", "stream": "events", "sync_mode": "incremental", "cursor_field": "updated_at",
              "source_file_path": INCREMENTAL}
    config = bizon.write("config.yml", pipeline("events", source))
    bizon.run("run", config, check=0)
    assert [row["source_record_id"] for row in bizon.read_ndjson("out.json")] == ["e1", "e2", "e3", "e4", "e5"]

    # The second run's window starts at the first run's start: every event is older.
    bizon.run("run", config, check=0)
    assert [row["source_record_id"] for row in bizon.read_ndjson("out.json")] == ["e1", "e2", "e3", "e4", "e5"]
