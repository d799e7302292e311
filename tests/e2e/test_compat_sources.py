"""Custom Python sources written for the original bizon run the same on ours (issue 34): each case
is a source of tests/e2e/data/python/compat_*_source.py, run by the real original 0.6.4
(build/original-venv, made by scripts/python-env.sh) and by our binary from the same YAML, into
the file destination; both must succeed and write the same records (id and data, in order; the
timestamps too where the source sets them).

The original runs every case in one process (data/python/compat_original_runner.py, through its
RunnerFactory), so the suite pays its import once. A local echo server answers the HTTP cases
and counts the attempts of each /flaky key; each implementation uses keys of its own."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import yaml

from support.paths import PYTHON_DATA, ROOT
from support.python import needs_custom_source
from support.servers import skip_or_fail

ORIGINAL_PYTHON = ROOT / "build" / "original-venv" / "bin" / "python"
ORIGINAL_VENV = ROOT / "build" / "original-venv"

pytestmark = [needs_custom_source]

# Headers the echo server returns: the ones authenticators set.
ECHOED = ("authorization", "cookie", "x-api-key", "x-basic", "x-extra", "x-shop-key")


class EchoHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # Quiet: pytest shows failures.
        pass

    def _answer(self, status: int, body, headers: dict | None = None) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):  # noqa: N802 - http.server's spelling
        url = urlparse(self.path)
        if url.path == "/echo":
            self._answer(200, {name: self.headers[name] for name in ECHOED if self.headers[name] is not None})
        elif url.path.startswith("/flaky/"):
            query = parse_qs(url.query)
            with self.server.lock:
                attempt = self.server.attempts.get(url.path, 0) + 1
                self.server.attempts[url.path] = attempt
            if attempt <= int(query["fail"][0]):
                self._answer(503, {"attempt": attempt}, {"Retry-After": query["retry_after"][0]})
            else:
                self._answer(200, {"attempt": attempt})
        else:
            self._answer(404, {"error": "missing"})

    def do_POST(self):  # noqa: N802
        url = urlparse(self.path)
        form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode())
        token = {"access_token": f"tok-{form['client_id'][0]}", "expires_in": 3600}
        if url.path == "/token":
            self._answer(200, token)
        elif url.path == "/token-nested":
            self._answer(200, {"data": token})
        else:
            self._answer(404, {"error": "missing"})


@pytest.fixture(scope="module")
def echo():
    server = ThreadingHTTPServer(("127.0.0.1", 0), EchoHandler)
    server.attempts, server.lock = {}, threading.Lock()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()


def source_block(name: str, stream: str, **options) -> dict:
    return {"name": f"compat_{name}", "stream": stream,
            "source_file_path": str(PYTHON_DATA / f"compat_{name}_source.py"), **options}


# name -> (the source block, the pipeline's other top-level keys); `{echo}` and `{run}` in string
# options become the echo server's URL and the implementation's name.
CASES = {
    "auth": (source_block("auth", "headers", base_url="{echo}",
                          authentication={"type": "bearer", "params": {"token": "from-config"}}), {}),
    "session": (source_block("session", "policy", base_url="{echo}", run_id="{run}", http={
        "timeout": 7, "raise_for_status": False,
        "retries": {"total": 3, "backoff_factor": 0, "status_forcelist": [503], "retry_after_max": 0.01}}), {}),
    # page_sise: a key the config class does not declare, which both ignore with a warning.
    "dict_records": (source_block("dict_records", "rows", page_sise=2), {}),
    "data_types": (source_block("data_types", "typed"), {}),
    "packages": (source_block("packages", "packages"), {}),
    "api": (source_block("api", "values"), {}),
    "streams": (source_block("streams", "events", sync_mode="stream", max_iterations=1), {
        "runner": "stream",
        "streams": [
            # No record_schema: the original injects it into the file destination's config,
            # which refuses it (compat_api_source.py reads one instead).
            {"name": "users", "source": {"topic": "app.users", "partitions": 3},
             "destination": {"table_id": "proj.ds.users"}},
            {"name": "orders", "source": {"endpoint": "/orders"},
             "destination": {"table_id": "proj.ds.orders"}},
        ]}),
    "subclass": (source_block("subclass", "creatures",
                              authentication={"type": "api_key", "params": {"token": "dummy_key"}}), {}),
}


def case_config(name: str, run: str, echo_url: str, engine: dict | None = None) -> str:
    source, extra = CASES[name]
    source = {key: value.format(echo=echo_url, run=run) if isinstance(value, str) else value
              for key, value in source.items()}
    # The original's consumer thread loads the source file while its producer does: at the same
    # moment, CPython 3.11's ast.parse can fail ("AST constructor recursion depth mismatch"), so
    # the consumer starts a second later (its default is 2 s).
    runner = {"config": {"consumer_start_delay": 1, "is_alive_check_interval": 0, **(engine or {})}}
    if "runner" in extra:
        runner["type"] = extra["runner"]
    config = {
        "name": f"compat-{name}",
        "source": source,
        "destination": {"name": "file", "config": {"destination_id": "out"}},
        "engine": {"backend": {"type": "sqlite", "config": {"database": "state.db", "schema": "public"}},
                   "runner": runner},
    }
    if "streams" in extra:
        config["streams"] = extra["streams"]
    return yaml.safe_dump(config, sort_keys=False, allow_unicode=True)


def written(directory: Path) -> list[dict]:
    """The records in the file destination's out.json: id, data and source timestamp, in order."""
    path = directory / "out.json"
    assert path.exists(), f"no out.json in {directory}"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [{"id": row["source_record_id"], "data": json.loads(row["source_data"]),
             "timestamp": datetime.fromisoformat(row["source_timestamp"])} for row in rows]


def without_timestamps(records: list[dict]) -> list[dict]:
    return [{"id": record["id"], "data": record["data"]} for record in records]


@pytest.fixture(scope="module")
def original(tmp_path_factory, echo) -> dict:
    """Each case's directory after the original ran it, and its outcome."""
    if not ORIGINAL_PYTHON.exists():
        skip_or_fail(f"the original bizon is not installed at {ORIGINAL_VENV}: run scripts/python-env.sh")
    root = tmp_path_factory.mktemp("original")
    cases = {}
    for name in CASES:
        directory = root / name
        directory.mkdir()
        (directory / "config.yml").write_text(case_config(name, "original", echo))
        cases[name] = str(directory)
    (root / "cases.json").write_text(json.dumps(cases))
    # The sources import compat_base.py beside them, a folder the original leaves off sys.path.
    env = {**os.environ, "PYTHONPATH": str(PYTHON_DATA)}
    result = subprocess.run([str(ORIGINAL_PYTHON), str(PYTHON_DATA / "compat_original_runner.py"),
                             str(root / "cases.json"), str(root / "outcomes.json")],
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, f"the original's runner failed:\n{result.stdout}\n{result.stderr[-5000:]}"
    outcomes = json.loads((root / "outcomes.json").read_text())
    return {name: (Path(cases[name]), outcomes[name], result.stderr) for name in CASES}


def run_ours(bizon, name: str, echo_url: str, engine: dict | None = None, check: int | None = 0):
    bizon.write("config.yml", case_config(name, "ours", echo_url, engine))
    # The caller's virtualenv (pytest's own, say) must not stand in for the user's.
    return bizon.run("run", "config.yml", env={"VIRTUAL_ENV": ""}, check=check, timeout=180)


def original_records(original, name: str) -> list[dict]:
    directory, outcome, log = original[name]
    assert outcome["success"], f"the original failed {name}: {outcome['status']}\n{log[-5000:]}"
    return written(directory)


def by_id(records: list[dict]) -> dict:
    return {record["id"]: record["data"] for record in records}


def test_authenticators_send_the_same_headers(bizon, original, echo):
    expected = original_records(original, "auth")
    run_ours(bizon, "auth", echo)
    assert without_timestamps(written(bizon.cwd)) == without_timestamps(expected)
    # The original's headers, spelled out: params= and positional params are the same object.
    headers = {record_id: data["headers"] for record_id, data in by_id(expected).items() if "headers" in data}
    assert headers["token_keyword"] == {"authorization": "Bearer abc"}
    assert headers["token_positional"] == {"x-api-key": "Token abc"}
    assert headers["token_bare"] == {"authorization": "raw-key"}
    assert headers["session_auth"] == {"authorization": "Bearer from-config"}
    assert headers["basic_keyword"] == {"authorization": "Basic dXNlcjpwdw=="}
    assert headers["cookies_keyword"] == {"cookie": "session=s1; lang=fr", "x-extra": "yes"}
    assert headers["oauth_params"] == {"authorization": "Bearer tok-client-a"}
    assert headers["abstract_oauth"] == {"authorization": "Bearer tok-static-client"}
    assert headers["abstract_header"] == {"x-shop-key": "shop-42"}
    assert by_id(expected)["token_from_string"] == by_id(expected)["basic_from_string"] == {"header": None}


def test_session_policy_and_http_config(bizon, original, echo):
    expected = original_records(original, "session")
    run_ours(bizon, "session", echo)
    assert without_timestamps(written(bizon.cwd)) == without_timestamps(expected)
    facts = by_id(expected)
    assert facts["http_config"]["timeout"] == 7
    # Two 503s with a Retry-After of 100 s capped at 0.01 s, then the answer: three attempts.
    assert facts["default_session"]["retried"] == {"raised": None, "status": 200, "body": {"attempt": 3}}
    assert facts["default_session"]["missing"]["status"] == 404  # raise_for_status: false
    assert facts["by_hand"]["exhausted"] == {"raised": "HTTPError", "status": 503, "body": {"attempt": 2}}
    assert facts["legacy"]["missing"]["raised"] == "HTTPError"


def test_dict_records_are_converted(bizon, original, echo):
    expected = original_records(original, "dict_records")
    result = run_ours(bizon, "dict_records", echo)
    ours = written(bizon.cwd)
    assert "does not declare: page_sise" in original["dict_records"][2]
    assert "SourceConfig does not declare are ignored: page_sise" in result.stdout + result.stderr
    assert without_timestamps(ours) == without_timestamps(expected)
    assert [record["id"] for record in ours] == ["1", "two", "3", "4"]
    assert [record["timestamp"] for record in ours] == [record["timestamp"] for record in expected]


def test_data_json_has_no_type_for_is_written_as_the_original_writes_it(bizon, original, echo):
    expected = original_records(original, "data_types")
    run_ours(bizon, "data_types", echo)
    assert without_timestamps(written(bizon.cwd)) == without_timestamps(expected)
    facts = by_id(expected)
    assert facts["datetimes"]["aware"] == "2024-05-06T07:08:09.123456+00:00"
    assert facts["decimal"] == {"whole": 42, "negative": -7, "fraction": 12.5, "exponent": 1500.0}


def test_the_original_runtime_packages_import_without_python_env(bizon, original, echo):
    expected = original_records(original, "packages")
    run_ours(bizon, "packages", echo)
    assert without_timestamps(written(bizon.cwd)) == without_timestamps(expected)
    assert len(expected) == 10


def test_public_api_values(bizon, original, echo):
    expected = original_records(original, "api")
    run_ours(bizon, "api", echo)
    assert without_timestamps(written(bizon.cwd)) == without_timestamps(expected)


def test_set_streams_config_receives_the_streams(bizon, original, echo):
    expected = original_records(original, "streams")
    run_ours(bizon, "streams", echo)
    ours = written(bizon.cwd)
    assert without_timestamps(ours) == without_timestamps(expected)
    received = ours[0]["data"]["received"]
    assert [stream["table_id"] for stream in received] == ["proj.ds.users", "proj.ds.orders"]
    assert received[0]["topic"] == "app.users" and received[1]["endpoint"] == "/orders"


def test_subclass_of_a_builtin_connector_with_the_original_in_python_env(bizon, original, echo):
    expected = original_records(original, "subclass")
    settings = (ORIGINAL_VENV / "pyvenv.cfg").read_text()
    if not any(line.replace(" ", "").startswith(("version=3.11", "version_info=3.11")) for line in settings.splitlines()):
        pytest.skip("build/original-venv is not a Python 3.11 virtualenv, so it cannot be our python_env")
    run_ours(bizon, "subclass", echo, engine={"python_env": str(ORIGINAL_VENV)})
    assert without_timestamps(written(bizon.cwd)) == without_timestamps(expected)
    assert all(record["data"]["tagged_by"] == "TaggedDummySource" for record in expected)


def test_subclass_of_a_builtin_connector_without_it_says_what_to_do(bizon, echo):
    result = run_ours(bizon, "subclass", echo, check=None)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "bizon.connectors is not provided by the bizon binary's Python package" in output
    assert "engine.runner.config.python_env" in output
