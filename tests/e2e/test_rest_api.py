"""The rest_api source end to end: every pagination style, record selection, ids, incremental
windows and state, against tests/fakes/fake_rest_api.py."""

from __future__ import annotations

import json

import pytest

from fake_rest_api import FakeRestApi
from support.http_sources import run
from support.pipelines import pipeline
from support.results import read_result, source_data

ENDPOINTS = {
    "offset": {
        "path": "/offset",
        "record_selector": "data.items",
        "pagination": {"type": "offset", "limit": 10, "total_path": "total"},
        "total_path": "total",
    },
    "offset_short_page": {
        "path": "/offset",
        "record_selector": "data.items",
        "pagination": {"type": "offset", "limit": 10},
    },
    "pages": {
        "path": "/pages",
        "record_selector": "items",
        "pagination": {
            "type": "page_number",
            "page_size_param": "per_page",
            "page_size": 7,
            "has_more_path": "has_more",
        },
    },
    "cursor": {
        "path": "/cursor",
        "params": {"size": 6},
        "record_selector": "results",
        "pagination": {"type": "cursor", "cursor_path": "meta.next_cursor"},
    },
    "search": {
        "path": "/search",
        "method": "POST",
        "body": {"size": 9},
        "record_selector": "results",
        "pagination": {"type": "cursor", "cursor_path": "meta.next_cursor", "location": "body"},
    },
    "next": {
        "path": "/next",
        "record_selector": "results",
        "pagination": {"type": "next_url", "next_url_path": "next"},
    },
    "link": {"path": "/link", "pagination": {"type": "link_header"}},
    "single": {"path": "/single", "record_selector": "items", "record_id": "name"},
    "updated": {
        "path": "/offset",
        "record_selector": "data.items",
        "pagination": {"type": "offset", "limit": 5},
        "incremental": {
            "param": "updated_after",
            "end_param": "updated_before",
            "cursor_field": "updated_at",
        },
    },
}


@pytest.fixture
def api():
    server = FakeRestApi().start()
    yield server
    server.stop()
    assert server.violations == []


def rest(api, stream, **extra):
    return {"name": "rest_api", "stream": stream, "base_url": api.url, "endpoints": ENDPOINTS, **extra}


@pytest.mark.parametrize(
    "stream, requests",
    [
        ("offset", 3),  # 10 + 10 + 3, the total says the third page is the last
        ("offset_short_page", 3),  # the short third page is the last
        ("pages", 4),  # 7 + 7 + 7 + 2, has_more false on the last
        ("cursor", 4),  # 6 + 6 + 6 + 5, no next cursor on the last
        ("search", 3),  # 9 + 9 + 5, cursor in the POST body
        ("next", 3),  # relative next URLs
        ("link", 3),  # Link: <...>; rel="next"
        ("single", 1),
    ],
)
def test_every_pagination_style_reads_every_item_once(bizon, api, stream, requests):
    run(bizon, pipeline("rest", rest(api, stream)))
    rows = bizon.read_ndjson("out.json")
    expected_ids = [str(i) for i in range(1, 24)] if stream != "single" else [
        f"item-{i}" for i in range(1, 24)
    ]
    assert [row["source_record_id"] for row in rows] == expected_ids
    assert source_data(rows) == api.items
    assert len(api.requests) == requests + (1 if stream == "offset" else 0)  # + the total count


def test_pagination_requests_follow_the_contract(bizon, api):
    run(bizon, pipeline("rest", rest(api, "offset")))
    pages = api.requests_to("/offset")
    # The first request reads the total for progress; then offsets follow the records received.
    assert [(r.param("offset"), r.param("limit")) for r in pages] == [
        ("0", "10"), ("0", "10"), ("10", "10"), ("20", "10")
    ]

    api.requests.clear()
    run(bizon, pipeline("rest", rest(api, "search")))
    assert [r.json for r in api.requests_to("/search")] == [
        {"size": 9}, {"size": 9, "cursor": "c-9"}, {"size": 9, "cursor": "c-18"}
    ]

    api.requests.clear()
    run(bizon, pipeline("rest", rest(api, "next")))
    assert [r.param("after") for r in api.requests_to("/next")] == [None, "10", "20"]


def test_records_are_the_api_bytes(bizon, api):
    # The payload is the record exactly as the page held it: key order and spacing included.
    run(bizon, pipeline("rest", rest(api, "single")))
    first = bizon.read_ndjson("out.json")[0]["source_data"]
    assert first == json.dumps(api.items[0])


def test_query_params_and_headers_from_the_config(bizon, api):
    endpoints = {"single": {**ENDPOINTS["single"], "params": {"tag": "blue"},
                            "headers": {"X-Endpoint": "e"}}}
    source = rest(api, "single", endpoints=endpoints, headers={"X-Team": "data"})
    run(bizon, pipeline("rest", source))
    (request,) = api.requests
    assert request.param("tag") == "blue"
    assert request.headers["x-team"] == "data"
    assert request.headers["x-endpoint"] == "e"


def test_unknown_stream_is_a_config_error(bizon, api):
    result = run(bizon, pipeline("rest", rest(api, "nope")), check=1)
    assert "'nope' is not one of the endpoints" in result.stderr
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "config"
    assert outcome["error"].startswith("ConfigError: ")
    assert api.requests == []


def test_missing_record_id_fails_with_the_path(bizon, api):
    endpoints = {"single": {**ENDPOINTS["single"], "record_id": "uuid"}}
    run(bizon, pipeline("rest", rest(api, "single", endpoints=endpoints)), check=1)
    result = read_result(bizon.cwd / "result.json")
    assert result["failure_class"] == "source"
    assert "has no 'uuid'" in result["error"]
    assert not (bizon.cwd / "out.json").exists()


def test_config_validate_accepts_a_rest_api_pipeline(bizon, api):
    path = bizon.write("pipeline.yml", pipeline("rest", rest(api, "cursor")))
    bizon.run("config", "validate", path, check=0)
    bad = dict(ENDPOINTS["cursor"], pagination={"type": "cursorr"})
    path = bizon.write("bad.yml", pipeline("rest", rest(api, "cursor", endpoints={"cursor": bad})))
    result = bizon.run("config", "validate", path, check=1)
    assert "pagination.type" in result.stderr


def incremental(api):
    return rest(api, "updated", sync_mode="incremental")


def test_incremental_windows_and_cursor_state(bizon, api):
    config = pipeline("rest-inc", incremental(api))
    # First run: no previous job, so a full read (no window parameters).
    run(bizon, config)
    assert len(bizon.read_ndjson("out.json")) == 23
    assert all(r.param("updated_after") is None for r in api.requests)

    # Three items change; the second run asks for records after the largest updated_at it saw.
    api.requests.clear()
    for item, minutes in zip(api.items[-3:], (100, 101, 102)):
        item["updated_at"] = f"2024-01-01T01:{minutes - 60:02d}:00.000000Z"
    run(bizon, config)
    windows = {(r.param("updated_after"), r.param("updated_before") is not None) for r in api.requests}
    assert windows == {("2024-01-01T00:23:00.000000Z", True)}
    rows = bizon.read_ndjson("out.json")
    assert [row["source_record_id"] for row in rows[23:]] == ["21", "22", "23"]

    # Nothing changed since: an empty run keeps the state.
    api.requests.clear()
    run(bizon, config)
    assert {r.param("updated_after") for r in api.requests} == {"2024-01-01T01:42:00.000000Z"}
    assert len(bizon.read_ndjson("out.json")) == 26


def test_incremental_without_a_block_is_refused(bizon, api):
    run(bizon, pipeline("rest", rest(api, "offset", sync_mode="incremental")), check=1)
    error = read_result(bizon.cwd / "result.json")["error"]
    assert "needs an incremental block" in error


def test_config_validate_reports_an_unknown_endpoint_with_its_line(bizon, api):
    path = bizon.write("pipeline.yml", pipeline("rest", rest(api, "cursr")))
    result = bizon.run("config", "validate", path, check=1)
    assert "pipeline.yml:" in result.stderr
    assert "source.stream: 'cursr' is not one of the endpoints of this rest_api source" in result.stderr
    assert "single" in result.stderr  # The declared endpoints are listed.
    assert api.requests == []
