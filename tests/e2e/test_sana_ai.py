"""The sana_ai source against tests/fakes/fake_sana_ai.py (Sana's token endpoint and Insights
report export, API v1): the original's example config with a base URL override, the export job
created, polled and downloaded, its CSV read into records, and the failures: refused client
credentials, rate limiting, a failed job, the poll timeout and malformed answers."""

from __future__ import annotations

import pytest
import yaml

from fake_sana_ai import (
    CLIENT_ID, CLIENT_SECRET, QUERY, RATE_LIMITED, FakeSanaAi, expected_records, report_csv)
from fake_server import Fault
from support.http_sources import retry_lines, run, waits
from support.pipelines import file_destination, load_example, pipeline
from support.results import read_result, source_data


@pytest.fixture
def sana():
    server = FakeSanaAi().start()
    yield server
    server.stop()
    assert server.violations == []


def source(sana, **extra):
    return {
        "name": "sana_ai",
        "stream": "insight_report",
        "domain": "acme",
        "query": QUERY,
        "base_url": sana.api,
        "authentication": {"type": "oauth", "params": {
            "token_refresh_endpoint": sana.token_endpoint,
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "grant_type": "client_credentials",
            "access_token_name": "accessToken",
            "expires_in_name": "expiresIn",
            "response_field_path": "data",
            "scopes": ["read"],
        }},
        **extra,
    }


def test_example_config_runs_against_the_fake(bizon, sana):
    config = load_example("sana_ai_to_file.yml")
    config["source"]["base_url"] = sana.api
    params = config["source"]["authentication"]["params"]
    params.update(token_refresh_endpoint=sana.token_endpoint, client_id=CLIENT_ID,
                  client_secret=CLIENT_SECRET)
    sana.query = config["source"]["query"]
    run(bizon, yaml.safe_dump(config))
    assert source_data(bizon.read_ndjson("sana_users.json")) == expected_records()


def test_original_example_scopes_are_sent_comma_separated(bizon):
    # The original's example asks for [read, write]: one `scope=read,write` form field.
    sana = FakeSanaAi(expected_scope="read,write").start()
    try:
        block = source(sana)
        block["authentication"]["params"]["scopes"] = ["read", "write"]
        run(bizon, pipeline("sana to file", block, file_destination("sana_ai_user_status")))
        assert len(bizon.read_ndjson("sana_ai_user_status.json")) == len(expected_records())
        assert sana.violations == []
    finally:
        sana.stop()


def test_the_export_is_created_polled_downloaded_and_read(bizon, sana):
    result = run(bizon, pipeline("sana", source(sana)))
    rows = bizon.read_ndjson("out.json")
    assert [row["source_record_id"] for row in rows] == [str(i) for i in range(len(expected_records()))]
    assert source_data(rows) == expected_records()
    assert source_data(rows)[5]["user_status"] == "note:\nmulti-line"
    assert read_result(bizon.cwd / "result.json")["status"] == "success"
    paths = [(r.method, r.path) for r in sana.requests]
    job = sana.requests_to("/api/v1/reports/jobs")[0].path.rsplit("/", 1)[-1]
    # One token, one export, two pending polls and the successful one, then the download.
    assert paths == [
        ("POST", "/api/token"),
        ("POST", "/api/v1/reports/query"),
        ("GET", f"/api/v1/reports/jobs/{job}"),
        ("GET", f"/api/v1/reports/jobs/{job}"),
        ("GET", f"/api/v1/reports/jobs/{job}"),
        ("GET", f"/exports/{job}.csv"),
    ]
    assert sana.requests[1].json == {"query": QUERY, "format": "csv"}
    token = sana.requests[2].headers["authorization"]
    assert all(r.headers["authorization"] == token for r in sana.requests[1:])
    assert "polling every 3 s for at most 3600 s" in result.stderr


def test_a_link_on_another_host_gets_no_token(bizon):
    sana = FakeSanaAi(link_host="localhost").start()
    try:
        run(bizon, pipeline("sana", source(sana)))
        assert len(bizon.read_ndjson("out.json")) == len(expected_records())
        download = sana.requests_to("/exports")[0]
        assert "authorization" not in download.headers
        assert sana.violations == []
    finally:
        sana.stop()


def test_an_empty_report_publishes_an_empty_file(bizon, sana):
    sana.csv = report_csv(rows=[])
    run(bizon, pipeline("sana", source(sana)))
    assert bizon.read_ndjson("out.json") == []


def test_refused_client_credentials_fail_clearly_without_the_secret(bizon, sana):
    wrong = "sana_wrong_secret_never_print_51ab"
    block = source(sana)
    block["authentication"]["params"]["client_secret"] = wrong
    result = run(bizon, pipeline("sana", block), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "401" in outcome["error"] and "Invalid client credentials" in outcome["error"]
    assert wrong not in result.stdout + result.stderr
    assert wrong not in (bizon.cwd / "result.json").read_text()
    assert not (bizon.cwd / "out.json").exists()
    assert sana.requests_to("/api/v1") == []


def test_rate_limit_waits_for_retry_after_then_succeeds(bizon, sana):
    sana.inject("/api/v1/reports/jobs", RATE_LIMITED, times=2)
    result = run(bizon, pipeline("sana", source(sana)))
    assert waits(result.stderr) == [1.0, 1.0]
    assert all("Retry-After 1 s" in line for line in retry_lines(result.stderr))
    assert source_data(bizon.read_ndjson("out.json")) == expected_records()


@pytest.mark.parametrize("status", ["failed", "cancelled"])
def test_a_failed_job_ends_the_run_with_its_error(bizon, status):
    sana = FakeSanaAi(final_status=status, pending_polls=1).start()
    try:
        run(bizon, pipeline("sana", source(sana)), check=1)
        outcome = read_result(bizon.cwd / "result.json")
        assert outcome["failure_class"] == "source"
        assert f"the Sana export job ended without a report: job job-" in outcome["error"]
        assert f"status '{status}': relation \"analytics.nope\" does not exist" in outcome["error"]
        assert len(sana.polls()) == 2
        assert sana.requests_to("/exports") == []
        assert not (bizon.cwd / "out.json").exists()
    finally:
        sana.stop()


def test_a_job_that_never_finishes_times_out(bizon):
    sana = FakeSanaAi(pending_polls=10**6).start()
    try:
        # Waits are scaled down in the tests; the timeout counts them as configured: polls at
        # 0, 3, ..., 30 s, then the next one would be past the 30 s.
        run(bizon, pipeline("sana", source(sana, poll_timeout=30)), check=1)
        outcome = read_result(bizon.cwd / "result.json")
        assert outcome["failure_class"] == "source"
        assert "did not finish within source.poll_timeout (30 s)" in outcome["error"]
        assert "still 'pending' after 11 polls" in outcome["error"]
        assert len(sana.polls()) == 11
        assert not (bizon.cwd / "out.json").exists()
    finally:
        sana.stop()


@pytest.mark.parametrize("prefix, fault, message", [
    ("/api/v1/reports/query", Fault(status=200, body={"data": {}}), "has no data.jobId"),
    ("/api/v1/reports/jobs", Fault(invalid_json=True), "GET http://127.0.0.1"),
    ("/api/v1/reports/jobs", Fault(status=200, body={"data": {"status": "successful"}}),
     "has no data.link.url"),
    ("/exports", Fault(status=200, body='user,user_status\n"ada,act', headers={
        "Content-Type": "text/csv"}), "ends inside a quoted field"),
    ("/exports", Fault(status=200, body="user\nada,extra\n", headers={
        "Content-Type": "text/csv"}), "more fields than its header: line 2"),
], ids=["no-job-id", "poll-not-json", "no-link", "truncated-csv", "ragged-csv"])
def test_a_malformed_answer_fails_the_run_and_publishes_nothing(bizon, sana, prefix, fault, message):
    sana.inject(prefix, fault)
    run(bizon, pipeline("sana", source(sana)), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert message in outcome["error"]
    assert not (bizon.cwd / "out.json").exists()


def test_incremental_is_refused_as_the_report_has_none(bizon, sana):
    result = run(bizon, pipeline("sana", source(sana, sync_mode="incremental")), check=1)
    assert "does not support incremental" in result.stderr
    assert read_result(bizon.cwd / "result.json")["failure_class"] == "config"
    assert sana.requests == []


def test_source_list_shows_sana_ai_built(bizon):
    listing = bizon.run("source", "list", check=0).stdout
    line = next(line for line in listing.splitlines() if line.startswith("sana_ai "))
    assert "not implemented" not in line
    assert "insight_report" in line
