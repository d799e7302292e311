"""Helpers the HTTP connector tests share: pipeline YAML, result files, log lines.

The e2e tests put this folder on sys.path to import the fakes and this module.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

#: Every retry wait is multiplied by this in the tests (see src/http/http_session.h), so a
#: ten-retry policy with a factor-2 backoff runs in milliseconds. Log lines keep the real waits.
FAST = {"BIZON_HTTP_BACKOFF_SCALE": "0.001"}

#: The project's configs in the shapes of the original's examples (tests/e2e/data/original_shapes,
#: its README says which stands for which).
SHAPES = Path(__file__).resolve().parents[1] / "e2e" / "data" / "original_shapes"

#: The original's example names the tests ask for, and the file that stands for each.
ORIGINAL_EXAMPLES = {
    "sources-gbif--gbif_occurrence_to_logger.example.yml": "gbif_to_logger.yml",
    "sources-notion--api_key.example.yml": "notion_pages_without_name.yml",
    "sources-notion--api_key_incremental.example.yml": "notion_pages_incremental.yml",
    "sources-pokeapi--pokeapi_pokemon_to_json.example.yml": "pokeapi_to_file_unnested.yml",
    "sources-pokeapi--pokeapi_pokemon_to_logger.example.yml": "pokeapi_to_logger.yml",
}


def file_destination(destination_id: str = "out", **options) -> dict:
    return {"name": "file", "config": {"destination_id": destination_id, **options}}


def pipeline(name: str, source: dict, destination: dict | None = None, **root) -> str:
    config = {"name": name, "source": source, "destination": destination or file_destination()}
    config.update(root)
    return yaml.safe_dump(config, sort_keys=False)


def read_result(bizon, name: str = "result.json") -> dict:
    return json.loads((bizon.cwd / name).read_text())


def source_data(rows: list[dict]) -> list[dict]:
    """The records' payloads, parsed."""
    return [json.loads(row["source_data"]) for row in rows]


def retry_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "Retrying HTTP request" in line]


def waits(stderr: str) -> list[float]:
    """The waits the retry log lines announce, in seconds."""
    return [float(m.group(1)) for m in re.finditer(r"Retrying HTTP request in ([0-9.]+) s", stderr)]


def load_example(name: str) -> dict:
    """The config of that shape, by its own file name or by the original example's name."""
    return yaml.safe_load((SHAPES / ORIGINAL_EXAMPLES.get(name, name)).read_text())


def run(bizon, config_text: str, *args, env=None, check=0, timeout=120):
    path = bizon.write("pipeline.yml", config_text)
    full_env = dict(FAST)
    full_env.update(env or {})
    return bizon.run("run", path, "--result-json", "result.json", *args, env=full_env, check=check,
                     timeout=timeout)
