"""The periscope source against tests/fakes/fake_periscope.py (the web app's private endpoints,
undocumented; shapes as the original reads them): every stream to the file destination, the
charts' paging over dashboards and widget windows, the cookie + CSRF-token session, refusals,
rate limits, malformed pages, and the original's example config."""

from __future__ import annotations

import json

import pytest
import yaml

from fake_periscope import (
    BROWSER_HEADERS, CF_BM, CSRF_TOKEN, DATABASE_ID, RATE_LIMITED, SESSION, SITE_ID,
    FakePeriscope, Site)
from fake_server import Fault
from support.http_sources import retry_lines, run
from support.pipelines import file_destination, load_example, pipeline
from support.results import read_result, source_data


@pytest.fixture
def periscope():
    server = FakePeriscope().start()
    yield server
    server.stop()
    assert server.violations == []


def source(server, stream, session=SESSION, cf_bm=CF_BM, csrf=CSRF_TOKEN, **extra):
    return {
        "name": "periscope",
        "stream": stream,
        "workspace_name": "acme",
        "client_site_id": SITE_ID,
        "database_id": DATABASE_ID,
        "x_csrf_token": csrf,
        "base_url": server.url,
        "authentication": {
            "type": "cookies",
            "params": {"cookies": {"cf_bm": cf_bm, "periscope_session": session}},
        },
        **extra,
    }


def ids(rows):
    return [row["source_record_id"] for row in rows]


def windows(server):
    """(dashboard, fluid row) of each widget call, in dashboard order (calls run in parallel)."""
    calls = [(int(r.param("current_dashboard")), int(r.param("minimum_dashboard_fluid_row")))
             for r in server.requests_to("/welcome/remaining_widgets")]
    return sorted(calls)


def all_charts(site):
    return [chart for d in site.dashboards for chart in site.charts(d["id"])]


# --------------------------------------------------------------------------------------------
# The single-call streams.


@pytest.mark.parametrize(
    "stream, path, expected",
    [
        ("dashboards", "/login_state/dashboards", lambda site: site.dashboards),
        ("views", "/login_state/sql_views", lambda site: site.views),
        ("users", "/users/owners", lambda site: site.users),
        ("databases", "/welcome/remaining_state/site_models", lambda site: site.databases),
    ],
)
def test_listing_streams(bizon, periscope, stream, path, expected):
    run(bizon, pipeline("p", source(periscope, stream)))
    rows = bizon.read_ndjson("out.json")
    assert source_data(rows) == expected(periscope.site)
    assert ids(rows) == [str(item["id"]) for item in expected(periscope.site)]
    # One call, nothing else (the original checks no connection and counts nothing).
    assert [(r.method, r.path, r.query) for r in periscope.requests] == [
        ("GET", path, {"client_site_id": [str(SITE_ID)]})
    ]


def test_dashboards_metadata_posts_the_search(bizon, periscope):
    run(bizon, pipeline("p", source(periscope, "dashboards_metadata")))
    rows = bizon.read_ndjson("out.json")
    assert source_data(rows) == periscope.site.search_results()
    (search,) = periscope.requests
    assert (search.method, search.path, search.query) == ("POST", "/global_search/search", {})
    assert search.json == {
        "client_site_id": SITE_ID,
        "filters": [{"name": "typeFilter", "input": "Dashboard"}],
        "limit": 2000,
        "query_plan": None,
    }


def test_every_request_carries_the_browser_session(bizon, periscope):
    run(bizon, pipeline("p", source(periscope, "dashboards_metadata")))
    run(bizon, pipeline("p", source(periscope, "charts")))
    assert len(periscope.requests) > 10
    for request in periscope.requests:
        assert request.headers["cookie"] == f"__cf_bm={CF_BM}; periscope_session={SESSION}"
        assert request.headers["x-csrf-token"] == CSRF_TOKEN
        assert request.headers["content-type"] == "application/json"
        for name, value in BROWSER_HEADERS.items():
            assert request.headers[name] == value


# --------------------------------------------------------------------------------------------
# charts: dashboards ten per iteration, widget windows of 50 rows.


def test_charts_page_over_dashboards_and_widget_windows(bizon, periscope):
    result = run(bizon, pipeline("p", source(periscope, "charts")))
    rows = bizon.read_ndjson("out.json")
    site = periscope.site
    assert source_data(rows) == all_charts(site)
    assert len(rows) == 57
    assert ids(rows)[:3] == ["100100", "100101", "100190"]
    # The dashboards are listed once; each dashboard with widgets is read in 4 windows (the
    # fourth empty), dashboard 7 (no widgets) in one.
    assert len(periscope.requests_to("/login_state/dashboards")) == 1
    expected = []
    for d in site.dashboards:
        rows_read = [0] if d["id"] == 1007 else [0, 50, 100, 150]
        expected += [(d["id"], row) for row in rows_read]
    assert windows(periscope) == expected
    assert "Failed to find the textbox with id 599 for the chart with id 100191" in result.stderr
    textbox_chart = next(c for c in source_data(rows) if c["id"] == 100190)
    assert textbox_chart["raw_text"] == "Quarterly revenue [the runbook](https://wiki/run)"
    assert all(c["database_id"] in (DATABASE_ID, str(DATABASE_ID)) for c in source_data(rows))


def test_charts_iterations_follow_max_iterations(bizon):
    # 25 dashboards make three iterations (10, 10, 5); max_iterations 1 stops after two.
    server = FakePeriscope(site=Site(dashboards=25)).start()
    try:
        run(bizon, pipeline("p", source(server, "charts", max_iterations=1)))
        dashboards = {int(r.param("current_dashboard"))
                      for r in server.requests_to("/welcome/remaining_widgets")}
        assert dashboards == set(range(1001, 1021))
        rows = bizon.read_ndjson("out.json")
        assert source_data(rows) == [c for d in range(1001, 1021) for c in server.site.charts(d)]
        assert server.violations == []
    finally:
        server.stop()


def test_charts_without_dashboards_end_empty(bizon):
    server = FakePeriscope(site=Site(dashboards=0)).start()
    try:
        result = run(bizon, pipeline("p", source(server, "charts")))
        assert "No dashboard found" in result.stderr
        assert read_result(bizon.cwd / "result.json")["status"] == "success"
        assert not (bizon.cwd / "out.json").exists() or bizon.read_ndjson("out.json") == []
        assert [r.path for r in server.requests] == ["/login_state/dashboards"]
        assert server.violations == []
    finally:
        server.stop()


def test_a_broken_widget_page_ends_that_dashboard_only(bizon, periscope):
    # As in the original, a failed widget call is logged and the dashboard keeps what it had.
    periscope.inject("/welcome/remaining_widgets", Fault(invalid_json=True), times=None,
                     when=lambda r: r.param("current_dashboard") == "1002"
                     and r.param("minimum_dashboard_fluid_row") == "50")
    result = run(bizon, pipeline("p", source(periscope, "charts")))
    rows = source_data(bizon.read_ndjson("out.json"))
    site = periscope.site
    kept = [c for c in site.charts(1002) if c["fluid_row"] < 50]
    expected = [c for d in site.dashboards
                for c in (kept if d["id"] == 1002 else site.charts(d["id"]))]
    assert rows == expected
    assert "Failed to fetch the charts of the dashboard with id 1002, keeping the 2 found" in (
        result.stderr)
    assert [row for d, row in windows(periscope) if d == 1002] == [0, 50]


# --------------------------------------------------------------------------------------------
# Refusals, rate limits, malformed pages.


@pytest.mark.parametrize(
    "stream, session, cf_bm, csrf, status",
    [
        ("dashboards", "expired-session-cookie-1234", CF_BM, CSRF_TOKEN, "401 Unauthorized"),
        ("views", SESSION, "stale-bot-cookie-5678", CSRF_TOKEN, "403 Forbidden"),
        ("dashboards_metadata", SESSION, CF_BM, "wrong-csrf-token-9012", "422"),
        ("charts", "expired-session-cookie-1234", CF_BM, CSRF_TOKEN, "401 Unauthorized"),
    ],
)
def test_a_refused_session_fails_the_run_without_showing_secrets(
        bizon, periscope, stream, session, cf_bm, csrf, status):
    result = run(bizon, pipeline("p", source(periscope, stream, session=session, cf_bm=cf_bm,
                                             csrf=csrf)), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "Periscope refused the browser session" in outcome["error"]
    assert status in outcome["error"]
    text = result.stdout + result.stderr + json.dumps(outcome)
    for secret in (session, cf_bm, csrf):
        assert secret not in text
    assert periscope.refused and len(periscope.requests) == 1
    assert not (bizon.cwd / "out.json").exists()


def test_a_session_refused_during_the_charts_fails_the_run(bizon, periscope):
    # Unlike other widget failures, a refused session is not skipped: every dashboard would fail.
    periscope.inject("/welcome/remaining_widgets",
                     Fault(status=401, body={"error": "You need to sign in first."}),
                     when=lambda r: r.param("current_dashboard") == "1003")
    run(bizon, pipeline("p", source(periscope, "charts")), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "Periscope refused the browser session" in outcome["error"]
    assert "current_dashboard=1003" in outcome["error"]
    assert not (bizon.cwd / "out.json").exists()


def test_rate_limit_waits_for_retry_after_then_succeeds(bizon, periscope):
    periscope.inject("/login_state/dashboards", RATE_LIMITED, times=2)
    result = run(bizon, pipeline("p", source(periscope, "dashboards")))
    assert source_data(bizon.read_ndjson("out.json")) == periscope.site.dashboards
    lines = retry_lines(result.stderr)
    assert len(lines) == 2 and all("Retry-After 1 s" in line for line in lines)
    assert len(periscope.requests) == 3


def test_rate_limit_on_widgets_is_retried(bizon, periscope):
    periscope.inject("/welcome/remaining_widgets", RATE_LIMITED, times=3)
    result = run(bizon, pipeline("p", source(periscope, "charts")))
    assert source_data(bizon.read_ndjson("out.json")) == all_charts(periscope.site)
    assert len(retry_lines(result.stderr)) == 3


@pytest.mark.parametrize("stream, path", [
    ("views", "/login_state/sql_views"),
    ("dashboards_metadata", "/global_search/search"),
    ("charts", "/login_state/dashboards"),
])
def test_a_malformed_page_fails_the_run_and_publishes_nothing(bizon, periscope, stream, path):
    periscope.inject(path, Fault(invalid_json=True))
    run(bizon, pipeline("p", source(periscope, stream)), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "invalid JSON in the response of" in outcome["error"] and path in outcome["error"]
    assert not (bizon.cwd / "out.json").exists()


def test_a_page_without_its_array_or_ids_fails(bizon, periscope):
    periscope.inject("/login_state/sql_views", Fault(status=200, body={"Dashboard": []}))
    run(bizon, pipeline("p", source(periscope, "views")), check=1)
    assert read_result(bizon.cwd / "result.json")["failure_class"] == "source"
    assert "SqlView" in read_result(bizon.cwd / "result.json")["error"]

    periscope.inject("/users/owners", Fault(status=200, body=[{"name": "no id"}]))
    run(bizon, pipeline("p", source(periscope, "users")), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "a Periscope item has no id" in outcome["error"]
    assert not (bizon.cwd / "out.json").exists()


# --------------------------------------------------------------------------------------------
# The original's example, and the source list.


def test_example_is_refused_without_x_csrf_token(bizon, periscope):
    config = load_example("periscope_without_csrf_token.yml")
    config["source"]["base_url"] = periscope.url
    result = run(bizon, yaml.safe_dump(config), check=1)
    assert "x_csrf_token" in result.stderr + result.stdout
    assert periscope.requests == []


def test_example_with_its_token_runs(bizon):
    config = load_example("periscope_without_csrf_token.yml")
    params = config["source"]["authentication"]["params"]["cookies"]
    server = FakePeriscope(site=Site(database_id=config["source"]["database_id"]),
                           session=params["periscope_session"], cf_bm=params["cf_bm"],
                           site_id=config["source"]["client_site_id"]).start()
    try:
        config["source"]["base_url"] = server.url
        config["source"]["x_csrf_token"] = CSRF_TOKEN
        result = run(bizon, yaml.safe_dump(config))  # The logger destination, as shipped.
        assert result.stderr.count('"title":') == 57
        config["destination"] = file_destination("charts")
        run(bizon, yaml.safe_dump(config))
        assert source_data(bizon.read_ndjson("charts.json")) == all_charts(server.site)
        assert server.violations == []
    finally:
        server.stop()


def test_source_list_shows_periscope_built(bizon):
    listing = bizon.run("source", "list", check=0).stdout
    line = next(line for line in listing.splitlines() if line.startswith("periscope - "))
    assert line == ("periscope - ['charts', 'dashboards_metadata', 'dashboards', 'databases', "
                    "'users', 'views']")


def test_incremental_is_refused_as_the_streams_are_full_refresh_only(bizon, periscope):
    streams = bizon.run("stream", "list", "periscope", check=0).stdout
    assert "[Full refresh only] - charts" in streams
    run(bizon, pipeline("p", source(periscope, "dashboards", sync_mode="incremental")), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "config"
    assert "incremental" in outcome["error"]
    assert periscope.requests == []
