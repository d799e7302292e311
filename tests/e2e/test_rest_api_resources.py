"""The rest_api source's resources form end to end, against tests/fakes/fake_issues_api.py: three
resources in one run (one a child of another) each into its own file, 404s of deleted parents
ignored, bounded parallelism and a shared Retry-After pause, JSONPath and detected record
selectors, response actions, incremental windows with lag and tie-safe cursors, per-resource
credentials, config errors with their lines, and SIGKILLs that end with every record once per
table."""

from __future__ import annotations

import copy
import random

import pytest

from fake_issues_api import FakeIssuesApi
from fake_server import Fault
from support.exactly_once import assert_exactly_once
from support.http_sources import run
from support.pipelines import file_destination, pipeline
from support.processes import run_until_complete
from support.results import read_result, source_data

ISSUES_PATH = "/repos/acme/rocket/issues"


@pytest.fixture
def api():
    server = FakeIssuesApi().start()
    yield server
    server.stop()
    assert server.violations == []


def issues_resource(per_page=10, **extra) -> dict:
    return {
        "name": "issues",
        "path": ISSUES_PATH,
        "params": {"state": "all", "sort": "updated", "direction": "asc", "per_page": per_page},
        "pagination": {"type": "link_header"},
        **extra,
    }


def comments_resource(**extra) -> dict:
    return {
        "name": "comments",
        "path": ISSUES_PATH + "/{resources.issues.number}/comments",
        "params": {"per_page": 2},
        "pagination": {"type": "link_header"},
        "include_from_parent": ["id"],
        "response_actions": [{"status_code": 404, "action": "ignore"}],
        **extra,
    }


def events_resource(**extra) -> dict:
    return {
        "name": "events",
        "path": "/api/events",
        "record_selector": "data.items",
        "pagination": {"type": "offset", "limit": 10, "total_path": "meta.total"},
        **extra,
    }


def source(api, resources=None, sync_mode="full_refresh", **extra) -> dict:
    return {
        "name": "rest_api",
        "stream": "github",
        "sync_mode": sync_mode,
        "base_url": api.url,
        "resource_defaults": {"headers": {"Accept": "application/json"}},
        "resources": resources
        or [issues_resource(), comments_resource(), events_resource()],
        **extra,
    }


def incremental_issues(per_page=10, **window) -> dict:
    return issues_resource(per_page, incremental={"param": "since", "cursor_field": "updated_at",
                                                  **window})


def table(bizon, name: str) -> list[dict]:
    return source_data(bizon.read_ndjson(f"{name}.json"))


def by_id(records: list[dict]) -> list[int]:
    return sorted(record["id"] for record in records)


def comment_numbers(api) -> list[int]:
    """The issue numbers whose comments were asked for, in request order."""
    prefix = ISSUES_PATH + "/"
    return [int(r.path[len(prefix):].split("/")[0]) for r in api.requests_to(prefix)]


# --------------------------------------------------------------------------------------------
# Several resources, parent and child.


def test_three_resources_each_into_its_table_with_a_child_per_parent_record(bizon, api):
    api.deleted = {5, 6}  # Issues with comments whose comments endpoint now answers 404.
    result = run(bizon, pipeline("github", source(api)), check=0)

    assert table(bizon, "issues") == sorted(api.issues, key=lambda i: (i["updated_at"], i["number"]))
    comments = table(bizon, "comments")
    assert sorted(comments, key=lambda c: c["id"]) == sorted(api.all_comments(), key=lambda c: c["id"])
    assert all(c["_issues_id"] == 5000 + c["id"] // 1000 for c in comments)
    assert table(bizon, "events") == api.events
    # Each record's id is its own; the parent's id is in the child record.
    rows = bizon.read_ndjson("comments.json")
    assert [int(r["source_record_id"]) for r in rows] == [c["id"] for c in comments]

    # One comments request per issue (two pages for the ones with 3 comments), 404s included.
    assert sorted(set(comment_numbers(api))) == [i["number"] for i in api.issues]
    assert "ignoring the response of GET" in result.stderr
    assert read_result(bizon.cwd / "result.json")["status"] == "success"


def test_children_run_in_parallel_up_to_the_bound(bizon, api):
    api.comment_delay = 0.05
    resources = [issues_resource(), comments_resource(parallel=3)]
    run(bizon, pipeline("github", source(api, resources)), check=0)
    assert 1 < api.max_comments_in_flight <= 3
    assert len(table(bizon, "comments")) == len(api.all_comments())


def test_a_retry_after_on_one_child_pauses_the_others(bizon, api):
    api.comment_delay = 0.02
    api.inject(ISSUES_PATH + "/7/comments", Fault(status=429, headers={"Retry-After": "1"}))
    resources = [issues_resource(), comments_resource(parallel=4)]
    # Real waits here: the pause is what is measured.
    run(bizon, pipeline("github", source(api, resources)),
        env={"BIZON_HTTP_BACKOFF_SCALE": "1"}, check=0)
    requests = api.requests_to(ISSUES_PATH + "/")
    limited = next(r for r in requests if r.path.endswith("/7/comments"))
    # Requests already on their way may arrive just after; none starts during the pause.
    during = [r for r in requests if limited.time + 0.2 < r.time < limited.time + 0.9]
    assert during == []
    assert len(table(bizon, "comments")) == len(api.all_comments())


def test_a_child_resumes_at_the_parent_record_where_the_run_stopped(bizon, api):
    resources = [incremental_issues(), comments_resource(parallel=2)]
    config = source(api, resources, sync_mode="incremental", max_iterations=3)
    # Every iteration written at once, so that its cursor is recorded.
    unbuffered = file_destination(buffer_size=0)
    run(bizon, pipeline("github", config, unbuffered), check=0)
    first = comment_numbers(api)
    assert 0 < len(first) < len(api.issues)  # Stopped among the children.

    api.requests.clear()
    del config["max_iterations"]
    run(bizon, pipeline("github", config, unbuffered), check=0)
    second = comment_numbers(api)
    # The second run asks for the comments of the parents the first did not reach, once each.
    assert sorted(set(first) | set(second)) == [i["number"] for i in api.issues]
    assert not set(first) & set(second)
    assert_exactly_once([c["id"] for c in table(bizon, "comments")],
                        [c["id"] for c in api.all_comments()], what="comments")
    assert_exactly_once([i["id"] for i in table(bizon, "issues")],
                        [i["id"] for i in api.issues], what="issues")


@pytest.mark.long
def test_sigkills_mid_run_end_with_every_record_once_per_table(bizon, api):
    api.stop()
    big = FakeIssuesApi(issues=80, events=150).start()
    try:
        # About 4 s of requests in all, so that twelve kills land before the work is done.
        big.comment_delay = 0.01
        big.inject("/", Fault(delay=0.05), times=None)
        resources = [incremental_issues(per_page=5), comments_resource(parallel=3),
                     events_resource(pagination={"type": "offset", "limit": 5})]
        config = source(big, resources, sync_mode="incremental")
        path = bizon.write("pipeline.yml",
                           pipeline("github", config, file_destination(buffer_size=0)))
        landed = run_until_complete(bizon, path, random.Random(31), kills=12, delays=(0.2, 0.9))
        assert landed >= 10
        assert_exactly_once([i["id"] for i in table(bizon, "issues")],
                            [i["id"] for i in big.issues], what="issues")
        assert_exactly_once([c["id"] for c in table(bizon, "comments")],
                            [c["id"] for c in big.all_comments()], what="comments")
        assert_exactly_once([e["id"] for e in table(bizon, "events")],
                            [e["id"] for e in big.events], what="events")
        assert big.violations == []
    finally:
        big.stop()
        api.start()


# --------------------------------------------------------------------------------------------
# Incremental: state per resource, lag, ties, ranges, missing cursors.


def test_incremental_runs_read_only_what_changed_with_ties_and_a_late_row(bizon, api):
    resources = [incremental_issues(lag=300), comments_resource(), events_resource()]
    config = pipeline("github", source(api, resources, sync_mode="incremental"))
    run(bizon, config, check=0)
    assert len(table(bizon, "issues")) == 30
    last = max(i["updated_at"] for i in api.issues)  # 2024-03-01T00:10:00Z, issue 30 alone.

    # New since: one at the last timestamp (a tie with issue 30, read again through `since`
    # inclusive), one two minutes earlier (late, inside the 300 s lag), one an hour earlier
    # (outside the lag: missed, as documented).
    tie = api.add_issue(31, last)
    late = api.add_issue(32, "2024-03-01T00:08:00Z")
    api.add_issue(33, "2024-03-01T00:00:00Z")
    api.requests.clear()
    run(bizon, config, check=0)
    # The window starts 300 s before the stored cursor.
    assert {r.param("since") for r in api.requests_to(ISSUES_PATH) if r.path == ISSUES_PATH} == {
        "2024-03-01T00:05:00Z"}
    issues = table(bizon, "issues")
    assert_exactly_once([i["id"] for i in issues], [i["id"] for i in api.issues[:30]]
                        + [tie["id"], late["id"]], what="issues")
    # Only the new issues' comments were asked for.
    assert sorted(set(comment_numbers(api))) == [31, 32]
    # Events have no incremental block: read whole again (appended).
    assert len(table(bizon, "events")) == 2 * len(api.events)


def test_equal_timestamps_across_pages_and_runs_are_neither_lost_nor_repeated(bizon, api):
    # Three issues share each timestamp; pages of two split every group.
    resources = [incremental_issues(per_page=2)]
    config = pipeline("github", source(api, resources, sync_mode="incremental"))
    run(bizon, config, check=0)
    api.add_issue(31, max(i["updated_at"] for i in api.issues))  # Ties with issue 30.
    run(bizon, config, check=0)
    assert_exactly_once([i["id"] for i in table(bizon, "issues")],
                        [i["id"] for i in api.issues], what="issues")


def test_initial_and_end_values_bound_a_backfill_and_row_order_stops_paging(bizon, api):
    window = {"initial_value": "2024-03-01T00:02:00Z", "end_value": "2024-03-01T00:04:00Z",
              "row_order": "asc"}
    resources = [issues_resource(per_page=2, incremental={"cursor_field": "updated_at",
                                                          **window})]
    run(bizon, pipeline("github", source(api, resources)), check=0)
    issues = table(bizon, "issues")
    # Updated at minute 2 or 3: issues 6 to 11.
    assert [i["number"] for i in issues] == list(range(6, 12))
    # Ascending rows: paging stopped at the first one past the end (page 6 holds 11 and 12).
    assert len(api.requests_to(ISSUES_PATH)) == 6
    assert api.violations == []


def test_a_missing_cursor_fails_or_is_kept_or_left_out(bizon, api):
    api.issues[3].pop("updated_at")
    resources = [incremental_issues()]
    run(bizon, pipeline("github", source(api, resources)), check=1)
    assert "has no 'updated_at' (the incremental cursor)" in read_result(
        bizon.cwd / "result.json")["error"]
    for choice, count in (("include", 30), ("exclude", 29)):
        resources = [incremental_issues(on_cursor_value_missing=choice)]
        run(bizon, pipeline("github", source(api, resources)), check=0)
        assert len(table(bizon, "issues")) == count


# --------------------------------------------------------------------------------------------
# Records selectors and paginators.


def test_jsonpath_selector_and_page_numbers_with_a_total(bizon, api):
    resources = [{
        "name": "batched_events",
        "path": "/api/batches",
        "record_selector": "$.data[*].items",
        "pagination": {"type": "page_number", "total_path": "total_pages"},
    }]
    run(bizon, pipeline("batches", source(api, resources)), check=0)
    assert table(bizon, "batched_events") == api.events
    assert len(api.requests_to("/api/batches")) == 6  # 12 batches of 4, two per page.


def test_detected_records_and_offsets_in_a_post_body(bizon, api):
    resources = [{
        "name": "hits",
        "path": "/api/search",
        "method": "POST",
        "body": {"kind": "star"},
        "pagination": {"type": "offset", "limit": 4, "location": "body",
                       "has_more_path": "has_more"},
    }, {"name": "issue_list", "path": ISSUES_PATH, "params": {"state": "all"},
        "pagination": {"type": "link_header"}, "destination_id": "all_issues"}]
    result = run(bizon, pipeline("search", source(api, resources)), check=0)
    assert table(bizon, "hits") == [e for e in api.events if e["kind"] == "star"]
    assert [r.json for r in api.requests_to("/api/search")][:2] == [
        {"kind": "star", "offset": 0, "limit": 4}, {"kind": "star", "offset": 4, "limit": 4}]
    assert "rest_api resource 'hits': records found at $.hits" in result.stderr
    assert by_id(table(bizon, "all_issues")) == by_id(api.issues)


def test_maximum_page_and_stop_after_empty_page(bizon, api):
    resources = [{"name": "first_pages", "path": ISSUES_PATH, "params": {"state": "all",
                                                                       "per_page": 4},
                  "pagination": {"type": "page_number", "maximum_page": 2,
                                 "stop_after_empty_page": False}}]
    run(bizon, pipeline("pages", source(api, resources)), check=0)
    assert len(table(bizon, "first_pages")) == 8
    assert [r.param("page") for r in api.requests_to(ISSUES_PATH)] == ["1", "2"]


# --------------------------------------------------------------------------------------------
# Response actions, credentials.


def test_response_actions_retry_and_fail_with_the_response(bizon, api):
    api.inject("/api/events", Fault(status=409, body={"message": "busy indexing"}), times=2)
    resources = [events_resource(response_actions=[
        {"status_code": 409, "content": "indexing", "action": "retry"}])]
    run(bizon, pipeline("events", source(api, resources)), check=0)
    assert table(bizon, "events") == api.events
    assert len(api.requests_to("/api/events")) == 5 + 2

    api.deleted = {2}
    resources = [issues_resource(), comments_resource(response_actions=[
        {"status_code": 404, "action": "fail"}])]
    run(bizon, pipeline("github", source(api, resources)), check=1)
    error = read_result(bizon.cwd / "result.json")["error"]
    assert "returned 404, which a response action fails" in error
    assert '{"message": "Not Found"}' in error


# The hooks a list cannot express: a 404 of a deleted issue read as an empty page, and a 409
# retried only when its JSON says why.
EMPTY_PAGE_FOR_DELETED = """
def on_response(response):
    if response["status_code"] == 404:
        assert response["method"] == "GET" and "/comments?" in response["url"], response
        assert response["headers"]["content-type"] == "application/json"
        return []
"""
RETRY_WHILE_INDEXING = """
import json

def on_response(response):
    if json.loads(response["body"]).get("message") == "busy indexing":
        return "retry"
    return None
"""


def test_python_response_actions_rewrite_a_page_and_retry(bizon, api):
    api.deleted = {5, 6}
    api.inject("/api/events", Fault(status=409, body={"message": "busy indexing"}), times=2)
    resources = [
        issues_resource(),
        comments_resource(response_actions=[{"action": "python",
                                             "python": EMPTY_PAGE_FOR_DELETED}]),
        events_resource(response_actions=[{"status_code": 409, "action": "python",
                                           "python": RETRY_WHILE_INDEXING}]),
    ]
    result = run(bizon, pipeline("github", source(api, resources)), check=0)
    comments = table(bizon, "comments")
    assert sorted(c["id"] for c in comments) == sorted(c["id"] for c in api.all_comments())
    assert sorted(set(comment_numbers(api))) == [i["number"] for i in api.issues]
    assert table(bizon, "events") == api.events
    assert len(api.requests_to("/api/events")) == 5 + 2
    assert "response action; retry 2 of" in result.stderr

    # A 409 for another reason: the hook returns None, no other action decides, so it fails.
    api.inject("/api/events", Fault(status=409, body={"message": "locked"}), times=1)
    run(bizon, pipeline("github", source(api, resources[2:])), check=1)
    assert "409" in read_result(bizon.cwd / "result.json")["error"]


@pytest.mark.parametrize("python, message", [
    ("def on_response(response):\n    raise KeyError('boom')\n",
     "rest_api resource 'events' response_actions[0]: KeyError: 'boom'"),
    ("def on_response(response):\n    return 'skip'\n",
     "rest_api resource 'events': on_response returned \"skip\""),
    ("def on_response(response)\n    return None\n",
     "cannot compile rest_api resource 'events' response_actions[0]: SyntaxError"),
    ("def other(response):\n    return None\n",
     "the code defines no function `on_response`"),
])
def test_a_python_response_action_that_raises_or_answers_wrong_fails_clearly(bizon, api, python,
                                                                             message):
    resources = [events_resource(response_actions=[{"action": "python", "python": python}])]
    run(bizon, pipeline("events", source(api, resources)), check=1)
    error = read_result(bizon.cwd / "result.json")["error"]
    assert message in error
    assert not (bizon.cwd / "events.json").exists()


def test_per_resource_auth_with_an_api_key_in_the_query_is_masked(bizon, api):
    api.api_key = "k-secret-123"
    resources = [events_resource(auth={"type": "api_key", "name": "api_key",
                                       "api_key": "k-secret-123", "location": "query"})]
    result = run(bizon, pipeline("events", source(api, resources)), "--log-level", "DEBUG",
                 check=0)
    assert table(bizon, "events") == api.events
    assert all(r.param("api_key") == "k-secret-123" for r in api.requests)
    assert "HTTP GET" in result.stderr  # Requests are logged, never with the key.
    assert "k-secret-123" not in result.stderr


def test_a_bearer_token_per_resource(bizon, api):
    api.token = "tok-9"
    resources = [events_resource(auth={"type": "bearer", "token": "tok-9"})]
    run(bizon, pipeline("events", source(api, resources)), check=0)
    assert len(table(bizon, "events")) == len(api.events)


# --------------------------------------------------------------------------------------------
# Config errors.


@pytest.mark.parametrize("change, message", [
    (lambda s: s["resources"][1].update(path="/x/{resources.isues.number}"),
     "source.resources[1].path: {resources.isues.number} must name another declared resource"),
    (lambda s: s["resources"][2].update(include_from_parent=["id"]),
     "source.resources[2].include_from_parent: only a child resource"),
    (lambda s: s.update(endpoints={"x": {"path": "/x"}}),
     "source.resources: a rest_api source declares either endpoints or resources"),
    (lambda s: s["resources"][2].update(name="issues"),
     "source.resources[2].name: two resources are named issues"),
    (lambda s: s["resources"][2].update(pagination={"type": "offset", "location": "body"}),
     "source.resources[2].pagination.location: body paging needs method POST"),
    (lambda s: s["resources"][2].update(response_actions=[{"action": "python"}]),
     "source.resources[2].response_actions[0].python: action python needs the hook's code"),
    (lambda s: s["resources"][2].update(response_actions=[{"action": "retry", "python": "x"}]),
     "source.resources[2].response_actions[0].python: `python` is the code of an action python"),
])
def test_config_validate_reports_resource_errors_with_their_line(bizon, api, change, message):
    config = copy.deepcopy(source(api))
    change(config)
    path = bizon.write("pipeline.yml", pipeline("github", config))
    result = bizon.run("config", "validate", path, check=1)
    assert message in result.stderr
    assert "pipeline.yml:" in result.stderr
    assert api.requests == []


def test_config_validate_accepts_the_resources_form(bizon, api):
    path = bizon.write("pipeline.yml", pipeline("github", source(api)))
    bizon.run("config", "validate", path, "--strict", check=0)
