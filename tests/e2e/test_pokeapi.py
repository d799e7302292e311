"""The pokeapi source against tests/fakes/fake_pokeapi.py (PokéAPI v2 resource lists): the
original's two example configs with a base URL override, every stream, and failures."""

from __future__ import annotations

import json

import pytest
import yaml

from fake_pokeapi import BERRIES, ITEMS, POKEMON, FakePokeApi
from fake_server import Fault
from support.http_sources import run
from support.pipelines import file_destination, load_example, pipeline
from support.results import read_result


@pytest.fixture
def pokeapi():
    server = FakePokeApi().start()
    yield server
    server.stop()
    assert server.violations == []


def source(pokeapi, stream="pokemon", **extra):
    return {"name": "pokeapi", "stream": stream, "base_url": pokeapi.root, **extra}


def test_example_pokemon_to_logger(bizon, pokeapi):
    config = load_example("sources-pokeapi--pokeapi_pokemon_to_logger.example.yml")
    config["source"]["base_url"] = pokeapi.root
    result = run(bizon, yaml.safe_dump(config))
    for name in POKEMON:
        assert f'"name":"{name}"' in result.stderr.replace(" ", "")
    lists = pokeapi.requests_to("/api/v2/pokemon")
    # check_connection, the total count, then 20 + 20 + 5 records following `next`.
    assert [(r.param("offset"), r.param("limit")) for r in lists] == [
        (None, None), (None, None), (None, None), ("20", "20"), ("40", "20")
    ]
    assert read_result(bizon.cwd / "result.json")["status"] == "success"


def test_example_pokemon_to_json(bizon, pokeapi):
    # The example as shipped is rejected by the original's own file config (`filepath`,
    # `record_schema`); this is the same pipeline in the keys the file destination takes.
    config = load_example("sources-pokeapi--pokeapi_pokemon_to_json.example.yml")
    config["source"]["base_url"] = pokeapi.root
    destination = config["destination"]["config"]
    schema = destination.pop("record_schema")
    destination.pop("filepath")
    destination.update(
        destination_id="pokemon",
        record_schemas=[{"destination_id": "pokemon", "record_schema": schema}],
    )
    run(bizon, yaml.safe_dump(config))
    assert bizon.read_ndjson("pokemon.json") == pokeapi.expected("pokemon")


@pytest.mark.parametrize("stream, names", [("pokemon", POKEMON), ("berry", BERRIES), ("item", ITEMS)])
def test_streams(bizon, pokeapi, stream, names):
    run(bizon, pipeline("poke", source(pokeapi, stream)))
    rows = bizon.read_ndjson("out.json")
    assert [row["source_record_id"] for row in rows] == names
    assert [json.loads(row["source_data"]) for row in rows] == pokeapi.expected(stream)


def test_pagination_is_the_next_url(bizon, pokeapi):
    run(bizon, pipeline("poke", source(pokeapi), engine={"backend": {
        "type": "sqlite", "config": {"database": "state", "schema": "main",
                                     "syncCursorInDBEvery": 1}}}))
    import sqlite3

    with sqlite3.connect(bizon.cwd / "state.sqlite3") as db:
        stored = [row[0] for row in db.execute(
            "SELECT next_pagination FROM source_cursors ORDER BY iteration")]
    # Each cursor row holds the pagination its iteration was fetched with.
    assert [json.loads(text) if text else None for text in stored] == [
        None,
        {"next": f"{pokeapi.root}/pokemon?offset=20&limit=20"},
        {"next": f"{pokeapi.root}/pokemon?offset=40&limit=20"},
    ]


def test_authentication_is_ignored(bizon, pokeapi):
    authentication = {"type": "api_key", "params": {"token": "not-for-pokeapi"}}
    run(bizon, pipeline("poke", source(pokeapi, "berry", authentication=authentication)))
    assert len(bizon.read_ndjson("out.json")) == len(BERRIES)


def test_a_failing_page_fails_the_run_and_publishes_nothing(bizon, pokeapi):
    pokeapi.inject("/api/v2/item", Fault(status=503, body={"detail": "down"}), times=None,
                   when=lambda request: request.param("offset") == "20")
    block = source(pokeapi, "item", http={"retries": {"total": 2}})
    run(bizon, pipeline("poke", block, file_destination("items")), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "after 3 attempts" in outcome["error"]
    assert "offset=20&limit=20 returned 503" in outcome["error"]
    assert not (bizon.cwd / "items.json").exists()


def test_unreachable_api_fails_the_connection_check(bizon, pokeapi):
    pokeapi.inject("/api/v2/pokemon", Fault(status=500), times=None)
    run(bizon, pipeline("poke", source(pokeapi)), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "error while connecting to source" in outcome["error"]
    assert "returned 500" in outcome["error"]
