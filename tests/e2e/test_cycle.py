"""The cycle source against tests/fakes/fake_cycle.py (Cycle's GraphQL API as documented): the
original's example config with a base URL override, the customers stream across its pages, and
the failures: a refused token, an unknown product, rate limiting and a malformed page."""

from __future__ import annotations

import json

import pytest
import yaml

from fake_cycle import RATE_LIMITED, SLUG, TOKEN, FakeCycle, customer_id
from fake_server import Fault
from support.http_sources import retry_lines, run, waits
from support.pipelines import file_destination, load_example, pipeline
from support.results import read_result, source_data


@pytest.fixture
def cycle():
    server = FakeCycle().start()
    yield server
    server.stop()
    assert server.violations == []


def source(cycle, **extra):
    return {
        "name": "cycle",
        "stream": "customers",
        "slug": SLUG,
        "authentication": {"type": "api_key", "params": {"token": TOKEN}},
        "base_url": cycle.url,
        **extra,
    }


def assert_every_request_is_the_documented_post(cycle, token=TOKEN):
    assert cycle.requests
    for request in cycle.requests:
        assert (request.method, request.path, request.query) == ("POST", "/graphql", {})
        assert request.headers["authorization"] == f"Bearer {token}"
        assert request.headers["content-type"] == "application/json"
        assert request.json["variables"] == {"slug": SLUG}


def test_example_config_runs_against_the_fake(bizon):
    example_token = "<cycle-token>"
    cycle = FakeCycle(token=example_token).start()
    try:
        config = load_example("cycle_to_file.yml")
        config["source"]["base_url"] = cycle.url
        cycle.products[config["source"]["slug"]] = cycle.customers()
        run(bizon, yaml.safe_dump(config))
        rows = bizon.read_ndjson("cycle_customers.json")
        assert source_data(rows) == cycle.customers()
        assert cycle.violations == []
    finally:
        cycle.stop()


def test_original_example_destination_id_gets_the_json_suffix(bizon, cycle):
    # The original's example writes `destination_id: cycle.jsonl`, which lands in cycle.jsonl.json.
    run(bizon, pipeline("cycle to file", source(cycle), file_destination("cycle.jsonl")))
    assert len(bizon.read_ndjson("cycle.jsonl.json")) == len(cycle.customers())


def test_full_refresh_writes_every_customer_exactly(bizon, cycle):
    run(bizon, pipeline("cycle", source(cycle)))
    rows = bizon.read_ndjson("out.json")
    assert [row["source_record_id"] for row in rows] == [c["id"] for c in cycle.customers()]
    assert source_data(rows) == cycle.customers()
    assert source_data(rows)[2]["company"] is None  # A customer without a company stays null.
    assert read_result(bizon.cwd / "result.json")["status"] == "success"
    assert_every_request_is_the_documented_post(cycle)


def test_pages_follow_the_end_cursor(bizon, cycle):
    run(bizon, pipeline("cycle", source(cycle), engine={"backend": {
        "type": "sqlite", "config": {"database": "state", "schema": "main",
                                     "syncCursorInDBEvery": 1}}}))
    # 250 customers: 100, 100, 50, each page after the previous page's endCursor.
    assert cycle.pages == [(100, None), (100, customer_id(100)), (100, customer_id(200))]
    assert "where" not in cycle.requests[0].json["query"]
    import sqlite3

    with sqlite3.connect(bizon.cwd / "state.sqlite3") as db:
        stored = [row[0] for row in db.execute(
            "SELECT next_pagination FROM source_cursors ORDER BY iteration")]
    # The pagination kept between pages is the whole pageInfo, as the original keeps it.
    assert [json.loads(text) if text else None for text in stored] == [
        None,
        {"hasPreviousPage": False, "hasNextPage": True,
         "startCursor": customer_id(1), "endCursor": customer_id(100)},
        {"hasPreviousPage": True, "hasNextPage": True,
         "startCursor": customer_id(101), "endCursor": customer_id(200)},
    ]


def test_a_single_page_product(bizon):
    cycle = FakeCycle(count=7).start()
    try:
        run(bizon, pipeline("cycle", source(cycle)))
        assert len(bizon.read_ndjson("out.json")) == 7
        assert cycle.pages == [(100, None)]
    finally:
        cycle.stop()


def test_a_refused_token_fails_clearly_without_showing_it(bizon, cycle):
    wrong = "cycle_wrong_token_do_not_print_9c3e"
    block = source(cycle, authentication={"type": "api_key", "params": {"token": wrong}})
    result = run(bizon, pipeline("cycle", block), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "the Cycle API refused the customers query" in outcome["error"]
    assert "UNAUTHORIZED: Unauthorized" in outcome["error"]
    assert wrong not in result.stdout + result.stderr
    assert wrong not in (bizon.cwd / "result.json").read_text()
    assert not (bizon.cwd / "out.json").exists()
    assert len(cycle.requests) == 1


def test_an_unknown_product_names_the_slug(bizon, cycle):
    run(bizon, pipeline("cycle", source(cycle, slug="no-such-product")), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "CANT_SEE_PRODUCT" in outcome["error"]
    assert not (bizon.cwd / "out.json").exists()


def test_rate_limit_waits_for_retry_after_then_succeeds(bizon, cycle):
    cycle.inject("/graphql", RATE_LIMITED, times=2,
                 when=lambda r: "where" in r.json["query"])
    result = run(bizon, pipeline("cycle", source(cycle)))
    assert waits(result.stderr) == [1.0, 1.0]
    assert all("Retry-After 1 s" in line for line in retry_lines(result.stderr))
    assert source_data(bizon.read_ndjson("out.json")) == cycle.customers()


def test_rate_limited_for_good_fails_with_the_last_response(bizon, cycle):
    cycle.inject("/graphql", RATE_LIMITED, times=None)
    block = source(cycle, http={"retries": {"total": 2}})
    run(bizon, pipeline("cycle", block), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "after 3 attempts" in outcome["error"]
    assert "returned 429" in outcome["error"]
    assert not (bizon.cwd / "out.json").exists()


@pytest.mark.parametrize("fault", [
    Fault(invalid_json=True),
    Fault(status=200, body={"data": {"getProductBySlug": {"customers": {"edges": []}}}}),
], ids=["not-json", "no-page-info"])
def test_a_malformed_page_fails_the_run_and_publishes_nothing(bizon, cycle, fault):
    cycle.inject("/graphql", fault, when=lambda r: "where" in r.json["query"])
    run(bizon, pipeline("cycle", source(cycle)), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "POST http://127.0.0.1" in outcome["error"]
    assert not (bizon.cwd / "out.json").exists()


def test_incremental_is_refused_as_the_stream_has_none(bizon, cycle):
    result = run(bizon, pipeline("cycle", source(cycle, sync_mode="incremental")), check=1)
    assert "does not support incremental" in result.stderr
    assert read_result(bizon.cwd / "result.json")["failure_class"] == "config"
    assert cycle.requests == []


def test_source_list_shows_cycle_built(bizon):
    listing = bizon.run("source", "list", check=0).stdout
    line = next(line for line in listing.splitlines() if line.startswith("cycle "))
    assert "not implemented" not in line
    assert "customers" in line
