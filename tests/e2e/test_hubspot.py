"""The hubspot source against tests/fakes/fake_hubspot.py (HubSpot CRM API v3): every stream in full,
list paging with `after`, the properties strategies, private-app token and OAuth, HubSpot's rate
limits (secondly with and without Retry-After, daily), a malformed page, and the incremental read
through the search endpoint, including a window of more than 10,000 changes."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from fake_hubspot import (
    CLIENT_ID, CLIENT_SECRET, DAILY_LIMITED, RATE_LIMITED, REFRESH_TOKEN, SECONDLY_LIMITED,
    TOKEN, FakeHubSpot)
from fake_server import Fault
from support.http_sources import run, waits
from support.pipelines import file_destination, load_example, pipeline
from support.results import read_result, source_data

STREAMS = ["contacts", "companies", "deals", "tickets", "products"]
EXAMPLE_TOKEN = "hubspot-private-app-token"


@pytest.fixture
def hubspot():
    server = FakeHubSpot().start()
    yield server
    server.stop()
    assert server.violations == []


def source(hubspot, stream="contacts", **extra):
    return {
        "name": "hubspot",
        "stream": stream,
        "base_url": hubspot.url,
        "authentication": {"type": "api_key", "params": {"token": hubspot.token}},
        **extra,
    }


def ids(rows):
    return [row["source_record_id"] for row in rows]


def lists(hubspot, name="contacts"):
    return hubspot.requests_to(f"/crm/v3/objects/{name}", "GET")


def searches(hubspot, name="contacts"):
    return hubspot.requests_to(f"/crm/v3/objects/{name}/search", "POST")


def window_searches(hubspot, name="contacts"):
    """The incremental searches (the record count's search has no sort)."""
    return [r for r in searches(hubspot, name) if "sorts" in r.json]


# --------------------------------------------------------------------------------------------
# Discovery.


def test_listed_as_built_with_incremental_streams(bizon):
    sources = bizon.run("source", "list", check=0).stdout
    line = next(line for line in sources.splitlines() if line.startswith("hubspot - "))
    assert line == "hubspot - ['contacts', 'companies', 'deals', 'tickets', 'products']"
    streams = bizon.run("stream", "list", "hubspot", check=0).stdout
    for stream in STREAMS:
        assert f"[Supports incremental] - {stream}" in streams


# --------------------------------------------------------------------------------------------
# Full refresh.


@pytest.mark.parametrize("stream", STREAMS)
def test_full_refresh_of_every_stream(bizon, hubspot, stream):
    run(bizon, pipeline("h", source(hubspot, stream)))
    rows = bizon.read_ndjson("out.json")
    expected = hubspot.expected_list(stream)
    assert source_data(rows) == expected
    assert ids(rows) == [r["id"] for r in expected]
    every = ",".join(p["name"] for p in hubspot.account.properties(stream))
    assert all(r.param("properties") == every for r in lists(hubspot, stream))
    assert len(hubspot.requests_to(f"/crm/v3/properties/{stream}")) >= 1


def test_contacts_page_with_after_and_count_with_the_search(bizon, hubspot):
    run(bizon, pipeline("h", source(hubspot)))
    rows = bizon.read_ndjson("out.json")
    assert len(rows) == 250 and len(set(ids(rows))) == 250
    contacts = hubspot.account.objects["contacts"]
    # The connection check reads the first page, then the run reads all three.
    assert [r.param("after") for r in lists(hubspot)] == [
        None, None, contacts[100]["id"], contacts[200]["id"]]
    assert {r.param("limit") for r in lists(hubspot)} == {"100"}
    assert all(r.body == b"" for r in lists(hubspot))
    count = [r.json for r in searches(hubspot)]
    assert {"filterGroups": [{"filters": [
        {"operator": "HAS_PROPERTY", "propertyName": "hs_object_id"}]}]} in count
    for request in hubspot.requests:
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        if request.method == "POST":
            assert request.headers["content-type"] == "application/json"


def test_selected_properties(bizon, hubspot):
    block = source(hubspot, "deals",
                   properties={"strategy": "selected", "selected_properties": ["dealname", "amount"]})
    run(bizon, pipeline("h", block))
    rows = source_data(bizon.read_ndjson("out.json"))
    assert rows == hubspot.expected_list("deals", ["dealname", "amount"])
    assert {r.param("properties") for r in lists(hubspot, "deals")} == {"dealname,amount"}


def test_a_properties_block_without_strategy_requests_every_property(bizon, hubspot):
    # The strategy's declared default (all) holds inside a properties block that names only
    # selected_properties: the list is then not what is asked for.
    block = source(hubspot, "deals", properties={"selected_properties": ["dealname"]})
    run(bizon, pipeline("h", block))
    rows = source_data(bizon.read_ndjson("out.json"))
    assert rows == hubspot.expected_list("deals")
    every = ",".join(p["name"] for p in hubspot.account.properties("deals"))
    assert {r.param("properties") for r in lists(hubspot, "deals")} == {every}


def test_a_selected_property_hubspot_lacks_is_refused(bizon, hubspot):
    block = source(hubspot, "deals",
                   properties={"strategy": "selected", "selected_properties": ["dealname", "nope"]})
    run(bizon, pipeline("h", block), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert "Property nope is not present in HubSpot." in outcome["error"]
    assert lists(hubspot, "deals") == []


def test_init_pipeline_false_skips_the_properties(bizon, hubspot):
    run(bizon, pipeline("h", source(hubspot, "companies", init_pipeline=False)))
    assert hubspot.requests_to("/crm/v3/properties") == []
    assert all(r.param("properties") is None for r in lists(hubspot, "companies"))
    rows = source_data(bizon.read_ndjson("out.json"))
    assert sorted(rows[0]["properties"]) == [
        "createdate", "domain", "hs_lastmodifieddate", "hs_object_id", "name"]


# --------------------------------------------------------------------------------------------
# Authentication.


def test_a_refused_token_fails_the_connection_check_masked(bizon, hubspot):
    block = source(hubspot)
    block["authentication"]["params"]["token"] = "pat-na1-wrong-secret-token"
    result = run(bizon, pipeline("h", block), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "error while connecting to source" in outcome["error"]
    assert "401 Unauthorized" in outcome["error"]
    assert "please check if provided credentials are valid" in outcome["error"]
    assert "INVALID_AUTHENTICATION" in outcome["error"]
    for text in (result.stdout, result.stderr, json.dumps(outcome)):
        assert "pat-na1-wrong-secret-token" not in text
    assert not (bizon.cwd / "out.json").exists()
    hubspot.violations.clear()  # The 401 was the point.


def test_oauth_refreshes_at_hubspots_token_endpoint(bizon, hubspot):
    block = source(hubspot, "tickets")
    block["authentication"] = {"type": "oauth", "params": {
        # Ignored, as in the original: HubSpot's own endpoint (under base_url) is used.
        "token_refresh_endpoint": "https://elsewhere.invalid/token",
        "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "refresh_token": REFRESH_TOKEN}}
    run(bizon, pipeline("h", block))
    assert source_data(bizon.read_ndjson("out.json")) == hubspot.expected_list("tickets")
    tokens = hubspot.requests_to("/oauth/v1/token")
    assert len(tokens) == 1
    crm = [r for r in hubspot.requests if r.path.startswith("/crm/")]
    assert crm and all(
        r.headers["authorization"] == "Bearer fake-hubspot-access-token-1" for r in crm)


def test_a_refused_oauth_app_fails_masked(bizon, hubspot):
    block = source(hubspot, "tickets")
    block["authentication"] = {"type": "oauth", "params": {
        "token_refresh_endpoint": "https://elsewhere.invalid/token",
        "client_id": CLIENT_ID, "client_secret": "wrong-client-secret-value",
        "refresh_token": REFRESH_TOKEN}}
    result = run(bizon, pipeline("h", block), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "OAuth token refresh failed" in outcome["error"]
    assert "BAD_REFRESH_TOKEN" in outcome["error"]
    for text in (result.stdout, result.stderr, json.dumps(outcome)):
        assert "wrong-client-secret-value" not in text
    hubspot.violations.clear()


# --------------------------------------------------------------------------------------------
# Rate limits, server errors, malformed pages.


def test_a_rate_limit_with_retry_after_is_waited_out(bizon, hubspot):
    hubspot.inject("/crm/v3/objects/contacts", RATE_LIMITED, times=2,
                   when=lambda r: r.param("after") is not None)
    result = run(bizon, pipeline("h", source(hubspot)))
    assert len(bizon.read_ndjson("out.json")) == 250
    assert waits(result.stderr) == [1.0, 1.0]


def test_a_secondly_limit_without_retry_after_is_retried(bizon, hubspot):
    hubspot.inject("/crm/v3/objects/contacts", SECONDLY_LIMITED, times=2,
                   when=lambda r: r.param("after") is not None)
    result = run(bizon, pipeline("h", source(hubspot)))
    assert len(bizon.read_ndjson("out.json")) == 250
    assert result.stderr.count("HubSpot rate limit TEN_SECONDLY_ROLLING without Retry-After") == 2


def test_the_daily_limit_fails_at_once(bizon, hubspot):
    hubspot.inject("/crm/v3/objects/contacts", DAILY_LIMITED, times=None,
                   when=lambda r: r.param("after") is not None)
    run(bizon, pipeline("h", source(hubspot)), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "HubSpot's daily API limit is reached" in outcome["error"]
    assert "429" in outcome["error"]
    assert len([r for r in lists(hubspot) if r.param("after")]) == 1
    assert not (bizon.cwd / "out.json").exists()


def test_server_errors_are_retried(bizon, hubspot):
    hubspot.inject("/crm/v3/objects/contacts", Fault(status=502), times=2,
                   when=lambda r: r.param("after") is not None)
    result = run(bizon, pipeline("h", source(hubspot)))
    assert len(waits(result.stderr)) == 2
    assert len(bizon.read_ndjson("out.json")) == 250


def test_a_malformed_page_fails_the_run_and_publishes_nothing(bizon, hubspot):
    hubspot.inject("/crm/v3/objects/contacts", Fault(invalid_json=True), times=1,
                   when=lambda r: r.param("after") is not None)
    run(bizon, pipeline("h", source(hubspot)), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "/crm/v3/objects/contacts" in outcome["error"]
    assert "JSON" in outcome["error"]
    assert not (bizon.cwd / "out.json").exists()


# --------------------------------------------------------------------------------------------
# Incremental.


def test_incremental_reads_only_the_changes_of_the_run_window(bizon, hubspot):
    text = pipeline("h", source(hubspot, "deals", sync_mode="incremental"))
    run(bizon, text)  # First run: no previous job, a full read.
    first = ids(bizon.read_ndjson("out.json"))
    assert first == [r["id"] for r in hubspot.account.objects["deals"]]
    assert window_searches(hubspot, "deals") == []

    deals = hubspot.account.objects["deals"]
    now = int(time.time() * 1000)
    hubspot.account.touch("deals", deals[3]["id"], at_ms=now, amount="99")
    hubspot.account.touch("deals", deals[1]["id"], at_ms=now + 1)
    time.sleep(0.01)
    hubspot.requests.clear()
    run(bizon, text)
    rows = bizon.read_ndjson("out.json")
    assert ids(rows) == first + [deals[3]["id"], deals[1]["id"]]  # oldest change first
    assert source_data(rows)[-2]["properties"]["amount"] == "99"
    [search] = window_searches(hubspot, "deals")
    filters = search.json["filterGroups"][0]["filters"]
    assert [(f["propertyName"], f["operator"]) for f in filters] == [
        ("hs_lastmodifieddate", "GTE"), ("hs_lastmodifieddate", "LT")]
    assert search.json["sorts"] == [{"propertyName": "hs_lastmodifieddate",
                                     "direction": "ASCENDING"}]
    assert search.json["limit"] == 200
    # The only list request is the connection check's first page.
    assert [r.param("after") for r in lists(hubspot, "deals")] == [None]

    hubspot.requests.clear()
    run(bizon, text)  # Nothing changed since.
    assert len(bizon.read_ndjson("out.json")) == len(first) + 2
    [again] = window_searches(hubspot, "deals")
    assert int(again.json["filterGroups"][0]["filters"][0]["value"]) == int(
        filters[1]["value"])  # This window starts where the last one ended.


def test_incremental_contacts_filter_on_lastmodifieddate(bizon, hubspot):
    text = pipeline("h", source(hubspot, sync_mode="incremental"))
    run(bizon, text)
    contact = hubspot.account.objects["contacts"][7]["id"]
    hubspot.account.touch("contacts", contact, firstname="Renamed")
    run(bizon, text)
    rows = bizon.read_ndjson("out.json")
    assert ids(rows)[250:] == [contact]
    assert source_data(rows)[-1]["properties"]["firstname"] == "Renamed"
    assert {f["propertyName"] for r in window_searches(hubspot)
            for f in r.json["filterGroups"][0]["filters"]} == {"lastmodifieddate"}


def test_incremental_moves_the_window_past_the_10000_result_cap(bizon):
    hubspot = FakeHubSpot(counts={"contacts": 3}).start()
    try:
        block = source(hubspot, sync_mode="incremental",
                       properties={"strategy": "selected", "selected_properties": ["email"]})
        text = pipeline("h", block)
        run(bizon, text)
        assert len(bizon.read_ndjson("out.json")) == 3

        # 10,050 new contacts, three to a millisecond: the 10,000th result falls inside a group.
        start = int(time.time() * 1000) + 5
        added = hubspot.account.add("contacts", 10_050, start, ms_step=1, same_ms=3)
        time.sleep(3.5)  # Let every one of them be older than the next run's start.
        hubspot.requests.clear()
        result = run(bizon, text, timeout=600)
        rows = bizon.read_ndjson("out.json")[3:]
        assert ids(rows) == [r["id"] for r in added]  # every one, once, oldest first
        assert hubspot.violations == []  # never paged past the cap
        queries = [r.json for r in window_searches(hubspot) if "after" not in r.json]
        assert len(queries) == 2
        boundary = hubspot.account.modified_ms("contacts", added[9_999])
        assert queries[1]["filterGroups"][0]["filters"][0] == {
            "propertyName": "lastmodifieddate", "operator": "GTE", "value": str(boundary)}
        assert "the search starts again from" in result.stderr
    finally:
        hubspot.stop()


def test_incremental_malformed_search_page_fails(bizon, hubspot):
    text = pipeline("h", source(hubspot, "companies", sync_mode="incremental"))
    run(bizon, text)
    hubspot.account.touch("companies", hubspot.account.objects["companies"][0]["id"])
    hubspot.inject("/crm/v3/objects/companies/search", Fault(invalid_json=True), times=1,
                   when=lambda r: "sorts" in (r.json or {}))
    run(bizon, text, check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "/crm/v3/objects/companies/search" in outcome["error"]
    assert len(bizon.read_ndjson("out.json")) == 3  # the first run's records only


# --------------------------------------------------------------------------------------------
# The original's examples (our own files in their shapes), pointed at the fake.


def test_example_api_key_to_logger(bizon):
    hubspot = FakeHubSpot(token=EXAMPLE_TOKEN).start()
    try:
        config = load_example("hubspot_to_logger.yml")
        config.pop("engine")  # Refused as written (no engine.backend.config); sqlite stands in.
        config["source"]["base_url"] = hubspot.url
        result = run(bizon, yaml.safe_dump(config))
        assert read_result(bizon.cwd / "result.json")["status"] == "success"
        assert {r.param("properties") for r in lists(hubspot, "deals")} == {"dealname,amount"}
        for deal in hubspot.account.objects["deals"]:
            assert deal["properties"]["dealname"] in result.stdout + result.stderr
        assert hubspot.violations == []
    finally:
        hubspot.stop()


def test_example_api_key_incremental(bizon):
    hubspot = FakeHubSpot(token=EXAMPLE_TOKEN).start()
    try:
        config = load_example("hubspot_incremental_to_bigquery.yml")
        config.pop("engine")  # Refused as written; sqlite stands in for the BigQuery backend.
        config["source"]["base_url"] = hubspot.url
        config["destination"] = file_destination("contacts")
        text = yaml.safe_dump(config)
        run(bizon, text)
        assert len(bizon.read_ndjson("contacts.json")) == 250
        changed = hubspot.account.objects["contacts"][42]["id"]
        hubspot.account.touch("contacts", changed)
        run(bizon, text)  # The original fails here (no get_records_after); we read the change.
        assert ids(bizon.read_ndjson("contacts.json"))[250:] == [changed]
        assert hubspot.violations == []
    finally:
        hubspot.stop()
