"""Slack alerting through `bizon run`, against tests/fakes/fake_slack.py (the documented incoming
webhook contract). Engine spec §9.2; what it marks BUG (posts inside the logging call, a failed
post re-entering the alert sink, one sink per listed level) is not reproduced."""

from __future__ import annotations

import json
import time

import pytest

from fake_slack import TOKEN, FakeSlack
from support.pipelines import dummy, file_destination, generator, pipeline, runner
from support.python import needs_transforms
from support.processes import spawn
from support.results import State

RAISING = [{"label": "boom", "python": "if data['name'] == 'froggy':\n    raise ValueError('no frogs')"}]
#: The exit flush's bound (SlackAlerterOptions::flush_s) and some room for a loaded machine.
FLUSH_S = 5
SLACK_S = 3


@pytest.fixture
def slack():
    server = FakeSlack().start()
    yield server
    server.stop()
    assert server.violations == []


def config(name: str, webhook: str, transforms=None, levels=("ERROR",), **engine) -> str:
    root = {"alerting": {"type": "slack", "log_levels": list(levels),
                         "config": {"webhook_url": webhook}}}
    if transforms:
        root["transforms"] = transforms
    if engine:
        root["engine"] = {"runner": engine}
    return pipeline(name, dummy(), **root)


def timed_run(bizon, path, *args):
    started = time.monotonic()
    result = bizon.run("run", path, "--result-json", "result.json", *args)
    return result, time.monotonic() - started


def assert_secret_kept(bizon, result):
    for text in (result.stderr, result.stdout, (bizon.cwd / "result.json").read_text()):
        assert TOKEN not in text


@needs_transforms
@pytest.mark.parametrize("runner", ["thread", "process"])
def test_transform_error_posts_one_alert_in_the_original_layout(bizon, slack, runner):
    # With the process runner the producer is a forked child; the consumer (and the alerts) stay
    # in the parent.
    path = bizon.write("p.yml", config("boom", slack.webhook_url, RAISING, type=runner))
    result, _ = timed_run(bizon, path)
    assert result.returncode == 1
    assert "Error applying transformation 'boom' to record '98'" in result.stderr

    assert len(slack.requests) == 1, [r.body for r in slack.requests]
    request = slack.requests[0]
    assert request.method == "POST" and request.path == slack.webhook_path
    assert request.headers["content-type"] == "application/json"
    [text] = slack.texts()
    lines = text.split("\n")
    assert lines[:6] == [
        ":rotating_light: *Bizon Pipeline Alert* :rotating_light:",
        "",
        "*Sync*: `boom`",
        "*Source*: `dummy` - `creatures`",
        "*Destination*: `file`",
        "",
    ]
    assert lines[6] == "*Message:*"
    assert lines[7] == ("```Consumer stopped: Error applying transformation 'boom' to record '98': "
                        "ValueError: no frogs")
    # The traceback inside the block, Slack's control characters escaped.
    assert '  File "&lt;transform boom&gt;", line 2, in &lt;module&gt;' in lines
    block_end = lines.index("ValueError: no frogs```")
    assert lines[block_end + 1:block_end + 4] == [
        "*File:* `N/A`", "*Function:* `N/A`", "*Level:* `ERROR`"]
    # The run's closing status came in the same second: the same post, not a second one.
    assert "```Pipeline finished with status Failure (Producer: success, Consumer: transform_error)```" in text \
        or "```Pipeline finished with status Failure (Producer: killed_by_runner, Consumer: transform_error)```" in text
    assert text.count("*Level:* `ERROR`") == 2
    assert_secret_kept(bizon, result)


@needs_transforms
def test_a_record_above_two_listed_levels_is_posted_once(bizon, slack):
    # The original adds one sink per level, each a minimum: an ERROR matched both and went twice.
    path = bizon.write("p.yml", config("twice", slack.webhook_url, RAISING, levels=("WARNING", "ERROR")))
    result, _ = timed_run(bizon, path)
    assert result.returncode == 1
    texts = slack.texts()
    assert len(texts) == 1
    assert texts[0].count("Consumer stopped: Error applying transformation 'boom'") == 1


def test_a_successful_run_posts_nothing_at_error(bizon, slack):
    path = bizon.write("p.yml", config("quiet", slack.webhook_url))
    result, _ = timed_run(bizon, path)
    assert result.returncode == 0, result.stderr
    time.sleep(0.2)
    assert slack.requests == []


def run_outcome_is_intact(bizon, result, expect_success: bool):
    outcome = json.loads((bizon.cwd / "result.json").read_text())
    jobs = State(bizon.cwd).jobs()
    assert len(jobs) == 1
    if expect_success:
        assert result.returncode == 0, result.stderr
        assert outcome["status"] == "success" and outcome["records_written"] == 5
        assert len(bizon.read_ndjson("out.json")) == 5
        assert jobs[0]["status"] == "succeeded"
    else:
        assert result.returncode == 1
        assert outcome["status"] == "failure" and outcome["failure_class"] == "transform"
        assert outcome["consumer"] == "transform_error"
        assert jobs[0]["status"] == "failed"
    return outcome


@pytest.mark.serial  # bounds a run's time
@needs_transforms
@pytest.mark.parametrize("fault", ["hang", "500"])
def test_a_broken_webhook_costs_at_most_the_exit_flush(bizon, slack, fault):
    # Baseline: the same failing run with nothing to post to.
    baseline_path = bizon.write("baseline.yml", pipeline(
        "boom", dummy(), file_destination("baseline"), transforms=RAISING))
    _, baseline = timed_run(bizon, baseline_path)
    (bizon.cwd / "bizon.sqlite3").unlink()

    if fault == "hang":
        slack.hang(60)
    else:
        slack.fail(500)
    path = bizon.write("p.yml", config("boom", slack.webhook_url, RAISING))
    result, took = timed_run(bizon, path)
    run_outcome_is_intact(bizon, result, expect_success=False)
    assert took < baseline + FLUSH_S + SLACK_S, (took, baseline)
    assert_secret_kept(bizon, result)
    if fault == "500":
        # Three tries of the one alert, each failure logged and never alerted in turn.
        assert len(slack.requests) == 3
        assert result.stderr.count("Slack alert not sent (attempt") == 3
        assert "Slack alert not sent (attempt 3 of 3): 500: rollup_error" in result.stderr
        assert len({r.body for r in slack.requests}) == 1
    else:
        assert 1 <= len(slack.requests) <= 2
        assert "Slack alert not sent (attempt 1 of 3)" in result.stderr
        # The error and the run's status, one post the flush could not get through.
        assert "2 Slack alerts not sent: the exit flush ran out of time after 5 s" in result.stderr


@pytest.mark.serial  # bounds a run's time
def test_a_hanging_webhook_does_not_slow_a_run_that_alerts_on_every_record(bizon, slack):
    # INFO alerts fire all through the run; with the original's synchronous post each one would
    # wait for the webhook. Here the run's own work never waits, and the exit costs the flush.
    slack.hang(60)
    path = bizon.write("p.yml", config("busy", slack.webhook_url, levels=("INFO",)))
    result, took = timed_run(bizon, path, "--log-level", "DEBUG")
    run_outcome_is_intact(bizon, result, expect_success=True)
    assert took < FLUSH_S + SLACK_S + 3, took
    # Even the debug line of the HTTP client (which names the URL) is redacted.
    assert_secret_kept(bizon, result)


def test_a_rate_limited_alert_is_sent_after_retry_after(bizon, slack):
    slack.rate_limit(retry_after=1)
    path = bizon.write("p.yml", config("limited", slack.webhook_url, levels=("INFO",)))
    result, _ = timed_run(bizon, path)
    assert result.returncode == 0, result.stderr
    assert "Slack is rate limiting the alerts: next post in 1.0 s" in result.stderr
    first, second = slack.requests[0], slack.requests[1]
    assert second.time - first.time >= 0.9
    assert first.body == second.body
    texts = slack.texts()
    assert texts and "Created job" in texts[0]


def test_the_fake_refuses_what_slack_refuses(slack):
    import urllib.error
    import urllib.request

    def post(path, body: bytes, content_type="application/json", method="POST"):
        request = urllib.request.Request(slack.url + path, data=body, method=method,
                                         headers={"Content-Type": content_type})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    good = json.dumps({"text": "a &amp; b &lt;c&gt;"}).encode()
    assert post(slack.webhook_path, good) == (200, "ok")
    assert post("/services/T0/B0/wrong", good) == (404, "no_service")
    assert post(slack.webhook_path, b"text=hi", "application/x-www-form-urlencoded")[0] == 400
    assert post(slack.webhook_path, b"{not json")[1] == "invalid_payload"
    assert post(slack.webhook_path, json.dumps({"text": ""}).encode()) == (400, "no_text")
    assert post(slack.webhook_path, json.dumps({"text": "x", "colour": 1}).encode())[0] == 400
    assert post(slack.webhook_path, json.dumps({"text": "see <module>"}).encode())[0] == 400
    assert post(slack.webhook_path, json.dumps({"text": "x" * 40_001}).encode())[0] == 400
    assert post(slack.webhook_path, good, method="PUT")[0] == 405
    # A faulted request is still checked.
    slack.fail(500, times=1)
    assert post(slack.webhook_path, json.dumps({"text": "a & b"}).encode()) == (500, "rollup_error")
    assert slack.texts() == ["a &amp; b &lt;c&gt;"]
    assert len(slack.violations) == 9, slack.violations
    assert "unescaped '&'" in slack.violations[-1]
    slack.violations.clear()


def test_a_stopped_stream_run_posts_its_last_records_before_exit(bizon, slack):
    # A stream run ends on SIGTERM; the records logged while it stops are posted by the exit
    # flush, not lost with the process.
    source = generator("stream", count=10_000_000, page_size=10, sleep=0.05)
    alerting = {"type": "slack", "log_levels": ["INFO"], "config": {"webhook_url": slack.webhook_url}}
    path = bizon.write("p.yml", pipeline("endless", source, engine=runner("stream"),
                                         alerting=alerting))
    process = spawn(bizon, "run", path)
    deadline = time.monotonic() + 30
    while not slack.texts() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert slack.texts(), "no alert while the stream ran"
    process.send_signal(15)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert "stopping on signal 15" in stderr
    assert any("stopping on signal 15" in text for text in slack.texts())
