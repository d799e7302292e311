"""The HTTP session policy (engine spec §10.1/§10.2, seed "HTTP retries and timeouts"), proved
through the rest_api source against tests/fakes/fake_rest_api.py with injected faults.

Waits are scaled by BIZON_HTTP_BACKOFF_SCALE (support.http_sources.FAST); the log lines announce
the policy's real waits, which is what the backoff assertions read.
"""

from __future__ import annotations

import socket
import time

import pytest

from fake_rest_api import FakeRestApi
from fake_server import Fault
from support.http_sources import retry_lines, run, waits
from support.pipelines import pipeline
from support.results import read_result

ENDPOINTS = {
    "items": {
        "path": "/offset",
        "record_selector": "data.items",
        "pagination": {"type": "offset", "limit": 10},
    },
    "search": {
        "path": "/search",
        "method": "POST",
        "body": {"size": 50},
        "record_selector": "results",
        "pagination": {"type": "cursor", "cursor_path": "meta.next_cursor", "location": "body"},
    },
}


@pytest.fixture
def api():
    server = FakeRestApi().start()
    yield server
    server.stop()
    assert server.violations == []


def source(api, stream="items", http=None, **extra):
    block = {"name": "rest_api", "stream": stream, "base_url": api.url, "endpoints": ENDPOINTS}
    if http is not None:
        block["http"] = http
    block.update(extra)
    return block


def page_requests(api):
    return api.requests_to("/offset")


# --------------------------------------------------------------------------------------------
# No `http` block: the historical policy.


@pytest.mark.parametrize("status", [429, 503, 413])
def test_legacy_retries_retry_after_statuses(bizon, api, status):
    api.inject("/offset", Fault(status=status, headers={"Retry-After": "1"}), times=2)
    result = run(bizon, pipeline("legacy", source(api)))
    assert len(bizon.read_ndjson("out.json")) == 23
    assert len(page_requests(api)) == 2 + 3
    assert waits(result.stderr) == [1.0, 1.0]


def test_legacy_honours_retry_after_uncapped(bizon, api):
    api.inject("/offset", Fault(status=429, headers={"Retry-After": "300"}))
    result = run(bizon, pipeline("legacy", source(api)))
    assert waits(result.stderr) == [300.0]
    assert "Retry-After 300" in retry_lines(result.stderr)[0]


@pytest.mark.parametrize("status", [429, 503])
def test_legacy_does_not_retry_without_retry_after(bizon, api, status):
    api.inject("/offset", Fault(status=status, body={"message": "slow down"}), times=None)
    run(bizon, pipeline("legacy", source(api)), check=1)
    assert len(page_requests(api)) == 1
    result = read_result(bizon.cwd / "result.json")
    assert result["failure_class"] == "source"
    assert f"returned {status}" in result["error"]


@pytest.mark.parametrize("status", [500, 502, 504])
def test_legacy_fails_server_errors_at_once(bizon, api, status):
    # Even with Retry-After: only 413, 429 and 503 are retried on it.
    api.inject("/offset", Fault(status=status, headers={"Retry-After": "1"}), times=None)
    run(bizon, pipeline("legacy", source(api)), check=1)
    assert len(page_requests(api)) == 1
    assert f"returned {status}" in read_result(bizon.cwd / "result.json")["error"]


def test_legacy_has_no_timeout(bizon, api):
    # A 3 s answer succeeds without an http block; the same answer times out with [1, 1].
    api.inject("/offset", Fault(delay=3))
    run(bizon, pipeline("legacy", source(api)))
    assert len(page_requests(api)) == 3

    api.requests.clear()
    api.inject("/offset", Fault(delay=3), times=None)
    http = {"timeout": [1, 1], "retries": {"total": 1}}
    run(bizon, pipeline("timed", source(api, http=http)), check=1)
    assert "read timed out" in read_result(bizon.cwd / "result.json")["error"]


def test_api_config_retry_limit_is_the_legacy_budget(bizon, api):
    api.inject("/offset", Fault(status=429, headers={"Retry-After": "1"}, body="busy"), times=None)
    run(bizon, pipeline("legacy", source(api, api_config={"retry_limit": 2})), check=1)
    assert len(page_requests(api)) == 3
    result = read_result(bizon.cwd / "result.json")
    assert result["failure_class"] == "source"
    assert "after 3 attempts" in result["error"]
    assert "returned 429 Too Many Requests: busy" in result["error"]


# --------------------------------------------------------------------------------------------
# With an `http` block, even `http: {}`.


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 520, 522, 524])
def test_block_retries_the_status_forcelist(bizon, api, status):
    api.inject("/offset", Fault(status=status), times=3)
    result = run(bizon, pipeline("policy", source(api, http={})))
    assert len(bizon.read_ndjson("out.json")) == 23
    assert len(page_requests(api)) == 3 + 3
    assert len(retry_lines(result.stderr)) == 3


@pytest.mark.parametrize("status", [400, 401, 404, 501])
def test_block_fails_other_statuses_at_once(bizon, api, status):
    api.inject("/offset", Fault(status=status, body={"detail": "no"}), times=None)
    run(bizon, pipeline("policy", source(api, http={})), check=1)
    assert len(page_requests(api)) == 1
    assert f"returned {status}" in read_result(bizon.cwd / "result.json")["error"]


def test_block_backoff_doubles_and_the_last_response_is_the_error(bizon, api):
    api.inject("/offset", Fault(status=503, body={"detail": "maintenance until 10:00"}), times=None)
    result = run(bizon, pipeline("policy", source(api, http={})), check=1)
    # total 10: 11 attempts, waits 0, 4, 8, 16, 32, 64, then capped at 120.
    assert len(page_requests(api)) == 11
    assert waits(result.stderr) == [0, 4, 8, 16, 32, 64, 120, 120, 120, 120]
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["status"] == "failure"
    assert outcome["failure_class"] == "source"
    assert "after 11 attempts" in outcome["error"]
    assert "returned 503 Service Unavailable" in outcome["error"]
    assert "maintenance until 10:00" in outcome["error"]
    assert "retry" not in outcome["error"].lower().replace("retries", "")
    # A full refresh that failed publishes nothing.
    assert not (bizon.cwd / "out.json").exists()


def test_block_total_and_backoff_factor(bizon, api):
    api.inject("/offset", Fault(status=500), times=None)
    http = {"retries": {"total": 3, "backoff_factor": 0.5}}
    result = run(bizon, pipeline("policy", source(api, http=http)), check=1)
    assert len(page_requests(api)) == 4
    assert waits(result.stderr) == [0, 1, 2]


def test_retry_after_is_capped_at_retry_after_max(bizon, api):
    api.inject("/offset", Fault(status=429, headers={"Retry-After": "30"}))
    http = {"retries": {"retry_after_max": 1}}
    # Real waits here (no scale): the second request comes about 1 s after the first, not 30 s.
    result = run(bizon, pipeline("policy", source(api, http=http)),
                 env={"BIZON_HTTP_BACKOFF_SCALE": "1"})
    first, second = page_requests(api)[:2]
    assert 0.9 <= second.time - first.time < 5
    assert waits(result.stderr) == [1.0]
    assert "Retry-After 30 s, capped" in retry_lines(result.stderr)[0]


def test_default_retry_after_cap_is_120(bizon, api):
    api.inject("/offset", Fault(status=503, headers={"Retry-After": "3600"}))
    result = run(bizon, pipeline("policy", source(api, http={})))
    assert waits(result.stderr) == [120.0]


def test_null_retry_after_max_honours_the_header(bizon, api):
    api.inject("/offset", Fault(status=503, headers={"Retry-After": "3600"}))
    result = run(bizon, pipeline("policy", source(api, http={"retries": {"retry_after_max": None}})))
    assert waits(result.stderr) == [3600.0]


def test_retry_after_dates_are_honoured(bizon, api):
    when = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 60))
    api.inject("/offset", Fault(status=503, headers={"Retry-After": when}))
    result = run(bizon, pipeline("policy", source(api, http={})))
    (wait,) = waits(result.stderr)
    assert 55 <= wait <= 61


def test_allowed_methods_limit_retries(bizon, api):
    api.inject("/search", Fault(status=503), times=None)
    http = {"retries": {"allowed_methods": ["GET"]}}
    run(bizon, pipeline("policy", source(api, "search", http=http)), check=1)
    assert len(api.requests_to("/search")) == 1

    api.requests.clear()
    api.clear_faults()
    api.inject("/search", Fault(status=503), times=2)
    run(bizon, pipeline("policy", source(api, "search", http={})))
    assert len(api.requests_to("/search")) == 3


def test_raise_for_status_false_hands_the_response_to_the_source(bizon, api):
    # rest_api then reads the error body as a page: it has no records array.
    api.inject("/offset", Fault(status=404, body={"detail": "gone"}), times=None)
    run(bizon, pipeline("policy", source(api, http={"raise_for_status": False})), check=1)
    error = read_result(bizon.cwd / "result.json")["error"]
    assert "has no array at 'data.items'" in error


# --------------------------------------------------------------------------------------------
# Timeouts, broken connections, broken bodies.


def test_read_timeout_is_retried(bizon, api):
    api.inject("/offset", Fault(delay=3))
    result = run(bizon, pipeline("policy", source(api, http={"timeout": [2, 1]})))
    assert len(bizon.read_ndjson("out.json")) == 23
    assert len(page_requests(api)) == 4
    assert "read timed out" in retry_lines(result.stderr)[0]


def test_read_timeout_after_the_last_retry_fails_the_run(bizon, api):
    api.inject("/offset", Fault(delay=2.5), times=None)
    http = {"timeout": 1, "retries": {"total": 1}}
    run(bizon, pipeline("policy", source(api, http=http)), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "after 2 attempts" in outcome["error"]
    assert "read timed out" in outcome["error"]
    assert not (bizon.cwd / "out.json").exists()


def test_refused_connections_are_retried_then_fail(bizon, api):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    block = source(api, http={"retries": {"total": 2}})
    block["base_url"] = f"http://127.0.0.1:{closed_port}"
    result = run(bizon, pipeline("policy", block), check=1)
    assert len(retry_lines(result.stderr)) == 2
    assert "after 3 attempts" in read_result(bizon.cwd / "result.json")["error"]


@pytest.mark.serial  # bounds a run's time
def test_connect_timeout_is_retried_then_fails(bizon, api):
    # A listener whose accept queue is full drops new SYNs: connecting hangs until the timeout.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = []
        for _ in range(3):
            filler = socket.socket()
            filler.setblocking(False)
            try:
                filler.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            fillers.append(filler)
        time.sleep(0.2)
        block = source(api, http={"timeout": [1, 30], "retries": {"total": 1}})
        block["base_url"] = f"http://127.0.0.1:{port}"
        started = time.monotonic()
        result = run(bizon, pipeline("policy", block), check=1)
        elapsed = time.monotonic() - started
        for filler in fillers:
            filler.close()
    assert "connect timed out after 1 s" in retry_lines(result.stderr)[0]
    error = read_result(bizon.cwd / "result.json")["error"]
    assert "after 2 attempts" in error and "connect timed out" in error
    assert 2 <= elapsed < 20


def test_truncated_body_is_retried(bizon, api):
    api.inject("/offset", Fault(truncate=True))
    result = run(bizon, pipeline("policy", source(api, http={})))
    assert len(bizon.read_ndjson("out.json")) == 23
    assert len(page_requests(api)) == 4
    assert len(retry_lines(result.stderr)) == 1


def test_invalid_json_fails_the_run_with_the_body(bizon, api):
    api.inject("/offset", Fault(invalid_json=True), times=None)
    run(bizon, pipeline("policy", source(api, http={})), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "invalid JSON in the response of GET" in outcome["error"]
    assert not (bizon.cwd / "out.json").exists()


def test_failure_on_a_later_page_publishes_nothing(bizon, api):
    # Pages 1 and 2 succeed, page 3 never does: the run fails, the staged rows stay unpublished.
    http = {"retries": {"total": 2}}
    config = pipeline("policy", source(api, http=http))
    run(bizon, config)
    published = (bizon.cwd / "out.json").read_text()

    api.requests.clear()
    api.inject("/offset", Fault(status=502, body={"detail": "bad gateway on page 3"}), times=None,
               when=lambda request: request.param("offset") == "20")
    run(bizon, config, check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "bad gateway on page 3" in outcome["error"]
    assert len([r for r in page_requests(api) if r.param("offset") == "20"]) == 3
    # The previous run's file is untouched.
    assert (bizon.cwd / "out.json").read_text() == published


def test_connection_reuse_and_compression(bizon, api):
    run(bizon, pipeline("policy", source(api, http={})))
    requests = page_requests(api)
    assert len(requests) == 3
    assert api.connections() == 1
    assert all("gzip" in r.headers.get("accept-encoding", "") for r in requests)
    assert len(bizon.read_ndjson("out.json")) == 23
