"""Every example of docs/rest_api.md, run as written against tests/fakes/fake_issues_api.py (served
in place of https://api.example.com), each checked against what the page says it does."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
import yaml

from fake_server import Fault
from support.http_sources import run
from support.paths import ROOT
from support.results import read_result, source_data
from test_rest_api_resources import api  # noqa: F401  (the fixture: the fake, checked at the end)

DOC = ROOT / "docs" / "rest_api.md"
EXAMPLE = re.compile(r"<!-- example: ([a-z-]+) -->\n```yaml\n(.*?)```", re.S)


def examples() -> dict[str, str]:
    return dict(EXAMPLE.findall(DOC.read_text()))


def table(bizon, name: str) -> list[dict]:
    return source_data(bizon.read_ndjson(f"{name}.json"))


def ids(records: list[dict]) -> list:
    return sorted(record["id"] for record in records)


def check_several_resources(bizon, api, stderr):
    assert ids(table(bizon, "issues")) == ids(api.issues)
    assert table(bizon, "api_events") == api.events


def check_parent_child(bizon, api, stderr):
    assert ids(table(bizon, "issues")) == ids(api.issues)
    assert ids(table(bizon, "comments")) == ids(api.all_comments())
    assert all("_issues_id" in c for c in table(bizon, "comments"))
    assert "ignoring the response of GET" in stderr  # Issue 4's comments, deleted.


def check_resolve_param(bizon, api, stderr):
    assert ids(table(bizon, "issue_comments")) == ids(api.all_comments())


def check_response_actions(bizon, api, stderr):
    assert table(bizon, "events") == api.events
    assert len(api.requests_to("/api/events")) == 2 + 1  # Two pages, and the retried 409.


def check_python_response_action(bizon, api, stderr):
    assert ids(table(bizon, "comments")) == ids(api.all_comments())
    # Issue 4's comments were asked for, answered 404, and read as an empty page.
    assert api.requests_to("/repos/acme/rocket/issues/4/comments")
    assert "ignoring the response" not in stderr


def check_jsonpath(bizon, api, stderr):
    assert table(bizon, "batched_events") == api.events


def check_detected_records(bizon, api, stderr):
    assert table(bizon, "hits") == [e for e in api.events if e["kind"] == "push"]
    assert "records found at $.hits" in stderr


def check_paginators(bizon, api, stderr):
    assert len(table(bizon, "recent_issues")) == 10
    assert table(bizon, "first_events") == api.events[:20]


def check_incremental(bizon, api, stderr):
    # From 00:02 on: issues 6 to 30; issue 9 lost its cursor field and is left out.
    assert [i["number"] for i in table(bizon, "issues")] == [n for n in range(6, 31) if n != 9]
    parents = {i["id"] for i in table(bizon, "issues")}
    assert {c["id"] // 1000 + 5000 for c in table(bizon, "comments")} <= parents
    assert {r.param("since") for r in api.requests if r.path.endswith("/issues")} == {
        "2024-03-01T00:02:00Z"}


def check_backfill(bizon, api, stderr):
    assert [i["number"] for i in table(bizon, "issues")] == list(range(6, 12))


def check_auth(bizon, api, stderr):
    assert table(bizon, "events") == api.events
    assert "k-doc-42" not in stderr


CHECKS = {
    "several-resources": check_several_resources,
    "parent-child": check_parent_child,
    "resolve-param": check_resolve_param,
    "response-actions": check_response_actions,
    "python-response-action": check_python_response_action,
    "jsonpath": check_jsonpath,
    "detected-records": check_detected_records,
    "paginators": check_paginators,
    "incremental": check_incremental,
    "backfill": check_backfill,
    "auth": check_auth,
}


def test_every_example_has_a_check():
    assert set(examples()) == set(CHECKS)


def test_every_example_follows_the_json_schema(bizon):
    """What editors check a file against (`bizon config schema`) accepts each example, and
    refuses a misspelt key inside a resource."""
    validator = jsonschema.Draft202012Validator(
        json.loads(bizon.run("config", "schema", check=0).stdout))
    for name, text in examples().items():
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(text))]
        assert not errors, (name, errors[:3])
    config = yaml.safe_load(examples()["parent-child"])
    config["source"]["resources"][1]["include_from_parnt"] = ["id"]
    assert list(validator.iter_errors(config))


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_the_example_does_what_the_page_says(bizon, api, name):
    text = examples()[name].replace("https://api.example.com", api.url)
    assert yaml.safe_load(text)["source"]["name"] == "rest_api"
    env = {}
    if name in ("parent-child", "python-response-action"):
        api.deleted = {4, 5}
    if name == "response-actions":
        api.inject("/api/events", Fault(status=409, body={"message": "indexing, try again"}))
    if name == "incremental":
        api.issues[8].pop("updated_at")  # Issue 9.
    if name == "auth":
        api.api_key = "k-doc-42"
        env["EVENTS_API_KEY"] = "k-doc-42"
    result = run(bizon, text, "--log-level", "DEBUG" if name == "auth" else "INFO", env=env,
                 check=0)
    assert read_result(bizon.cwd / "result.json")["status"] == "success"
    CHECKS[name](bizon, api, result.stderr)
