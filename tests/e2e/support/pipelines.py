"""Pipelines for the tests: blocks built as Python dicts and written as YAML, and the configs the
repository keeps as files (the quickstart, the original's example shapes, the Debezium transform).
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone

import yaml

from support.paths import EXAMPLES, SHAPES, TRANSFORMS

DUMMY_AUTH = {"type": "api_key", "params": {"token": "dummy_key"}}
#: What the dummy source's `creatures` stream returns, in order.
CREATURES = [
    {"id": 9898, "name": "bizon", "age": 26},
    {"id": 88787, "name": "croco", "age": 23},
    {"id": 98, "name": "froggy", "age": 26},
    {"id": 3333, "name": "turtle", "age": 23},
    {"id": 56565, "name": "poulpo", "age": 26},
]
#: The columns of a file-destination row, in order.
RECORD_FIELDS = [
    "bizon_id",
    "bizon_extracted_at",
    "bizon_loaded_at",
    "source_record_id",
    "source_timestamp",
    "source_data",
]

#: The original's example names the tests ask for, and the shape file that stands for each.
ORIGINAL_EXAMPLES = {
    "sources-gbif--gbif_occurrence_to_logger.example.yml": "gbif_to_logger.yml",
    "sources-notion--api_key.example.yml": "notion_pages_without_name.yml",
    "sources-notion--api_key_incremental.example.yml": "notion_pages_incremental.yml",
    "sources-pokeapi--pokeapi_pokemon_to_json.example.yml": "pokeapi_to_file_unnested.yml",
    "sources-pokeapi--pokeapi_pokemon_to_logger.example.yml": "pokeapi_to_logger.yml",
}


def generator(sync_mode="full_refresh", stream="records", **options) -> dict:
    """A generator source block; options are the generator's (count, page_size, sleep, ...)."""
    source = {"name": "generator", "stream": stream, "sync_mode": sync_mode}
    if sync_mode == "incremental":
        source["cursor_field"] = "updated_at"
    source.update(options)
    return source


def dummy(stream="creatures", **options) -> dict:
    """A dummy source block (a fresh dict each time: tests may change it)."""
    return {"name": "dummy", "stream": stream, "authentication": copy.deepcopy(DUMMY_AUTH),
            **options}


def file_destination(destination_id="out", **options) -> dict:
    return {"name": "file", "config": {"destination_id": destination_id, **options}}


def pipeline(name: str, source: dict, destination: dict | None = None, **root) -> str:
    """YAML text of a pipeline writing to `destination` (default: the file destination, out.json);
    `root` adds top-level keys such as transforms=, engine= or streams=. Text is written as it is
    (no escapes), so a test's non-ASCII values reach the file unchanged."""
    config = {"name": name, "source": source, "destination": destination or file_destination()}
    config.update(root)
    return yaml.safe_dump(config, sort_keys=False, allow_unicode=True)


def runner(kind: str) -> dict:
    return {"runner": {"type": kind}}


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def window_start_for(first_new_index: int, after: datetime, interval_ms: int = 1) -> str:
    """A generator `start` that puts records [0, first_new_index) at or before `after` and the
    following ones after it: record i has updated_at = start + i * interval_ms."""
    start = after - timedelta(milliseconds=interval_ms * (first_new_index - 0.5))
    return iso(start)


def quickstart_text() -> str:
    """The README's quickstart pipeline, examples/quickstart.yml, as the user runs it."""
    return (EXAMPLES / "quickstart.yml").read_text()


def load_example(name: str) -> dict:
    """The config of that shape, by its own file name or by the original example's name."""
    return yaml.safe_load((SHAPES / ORIGINAL_EXAMPLES.get(name, name)).read_text())


def debezium_transform() -> dict:
    """The one Debezium transform (data/transforms/debezium.py), as a `transforms` entry."""
    return {"label": "debezium", "python": (TRANSFORMS / "debezium.py").read_text()}
