"""Authenticators (engine spec §10.3, connectors spec §2.4): the headers each builder sends, the
OAuth 2 refresh (first request, before expiry, after a 401, failures), and secrets masked in
every log line and in the result file. Through the rest_api source against fake_rest_api.py."""

from __future__ import annotations

import base64

import pytest

from fake_rest_api import FakeRestApi
from fake_server import Fault
from support.http_sources import run
from support.pipelines import pipeline
from support.results import read_result

ENDPOINTS = {
    "items": {
        "path": "/offset",
        "record_selector": "data.items",
        "pagination": {"type": "offset", "limit": 10},
    }
}


@pytest.fixture
def api():
    server = FakeRestApi().start()
    yield server
    server.stop()


def source(api, authentication, **extra):
    return {
        "name": "rest_api",
        "stream": "items",
        "base_url": api.url,
        "endpoints": ENDPOINTS,
        "authentication": authentication,
        **extra,
    }


def oauth(api, **params):
    return {
        "type": "oauth",
        "params": {
            "token_refresh_endpoint": f"{api.url}/oauth/token",
            "client_id": api.client_id,
            "client_secret": api.client_secret,
            "refresh_token": api.refresh_token,
            **params,
        },
    }


def header_is(name, value):
    return lambda request: None if request.headers.get(name) == value else (
        f"{name} was {request.headers.get(name)!r}"
    )


def everything_written(bizon):
    return len(bizon.read_ndjson("out.json")) == 23


@pytest.mark.parametrize(
    "authentication, name, value",
    [
        ({"type": "api_key", "params": {"token": "tok-api-key-1"}}, "authorization",
         "Bearer tok-api-key-1"),
        ({"type": "bearer", "params": {"token": "tok-bearer-2"}}, "authorization",
         "Bearer tok-bearer-2"),
        ({"type": "api_key", "params": {"token": "tok-3", "auth_method": "Token"}},
         "authorization", "Token tok-3"),
        ({"type": "api_key", "params": {"token": "bare-tok-4", "auth_method": "",
                                        "auth_header": "X-Api-Key"}}, "x-api-key", "bare-tok-4"),
        ({"type": "api_key", "api_key": "shorthand-tok-5"}, "authorization",
         "Bearer shorthand-tok-5"),
        ({"type": "basic", "params": {"username": "ann", "password": "pw-secret"}},
         "authorization", "Basic " + base64.b64encode(b"ann:pw-secret").decode()),
    ],
)
def test_header_builders(bizon, api, authentication, name, value):
    api.auth = header_is(name, value)
    run(bizon, pipeline("auth", source(api, authentication)))
    assert everything_written(bizon)


def test_cookies_and_extra_headers(bizon, api):
    def auth(request):
        if request.headers.get("cookie") != "session=sess-cookie-1; theme=dark":
            return f"cookie was {request.headers.get('cookie')!r}"
        if request.headers.get("x-csrf-token") != "csrf-9":
            return "missing csrf header"
        return None

    api.auth = auth
    authentication = {
        "type": "cookies",
        "params": {"cookies": {"session": "sess-cookie-1", "theme": "dark"},
                   "headers": {"X-CSRF-Token": "csrf-9"}},
    }
    run(bizon, pipeline("auth", source(api, authentication)))
    assert everything_written(bizon)


def test_oauth_refreshes_before_the_first_request(bizon, api):
    api.auth = api.oauth_auth
    run(bizon, pipeline("auth", source(api, oauth(api, scopes=["read", "write"]))))
    assert everything_written(bizon)
    assert len(api.token_requests()) == 1
    assert api.requests[0].path == "/oauth/token"
    (form,) = api.token_forms
    assert form == {
        "grant_type": "refresh_token",
        "client_id": api.client_id,
        "client_secret": api.client_secret,
        "refresh_token": api.refresh_token,
        "scope": "read,write",
    }


def test_oauth_refresh_request_body_adds_fields_without_overriding(bizon, api):
    api.auth = api.oauth_auth
    params = {"refresh_request_body": {"audience": "api://x", "grant_type": "password"}}
    run(bizon, pipeline("auth", source(api, oauth(api, **params))))
    (form,) = api.token_forms
    assert form["audience"] == "api://x"
    assert form["grant_type"] == "refresh_token"


def test_oauth_refreshes_within_the_expiry_skew(bizon, api):
    # Tokens live 100 s; a 99 s skew makes each one due 1 s after it is issued. Pages take
    # 1.5 s, so every page needs a fresh token, asked for before the request (no 401 ever).
    api.auth = api.oauth_auth
    api.inject("/offset", Fault(delay=1.5), times=None)
    api.expires_in = 100
    result = run(bizon, pipeline("auth", source(api, oauth(api, expiry_skew_seconds=99))))
    assert everything_written(bizon)
    pages = api.requests_to("/offset")
    assert len(pages) == 3
    assert len(api.token_requests()) == 3
    assert len({r.headers["authorization"] for r in pages}) == 3
    assert "after a 401" not in result.stderr


def test_oauth_default_skew_keeps_a_long_token(bizon, api):
    api.auth = api.oauth_auth
    api.expires_in = 100  # 10 % of 100 s = a 10 s skew: one token serves the whole run.
    run(bizon, pipeline("auth", source(api, oauth(api))))
    assert len(api.token_requests()) == 1


def test_oauth_refreshes_after_a_401(bizon, api):
    def revoke_after_first_page(request):
        if len(api.requests_to("/offset")) >= 2:
            api.revoked.add("access-1-tok")
        return api.oauth_auth(request)

    api.auth = revoke_after_first_page
    result = run(bizon, pipeline("auth", source(api, oauth(api))))
    assert everything_written(bizon)
    assert len(api.token_requests()) == 2
    pages = api.requests_to("/offset")
    assert [r.headers["authorization"] for r in pages] == [
        "Bearer access-1-tok", "Bearer access-1-tok", "Bearer access-2-tok", "Bearer access-2-tok"
    ]
    assert "Credentials refreshed after a 401" in result.stderr


def test_oauth_token_endpoint_errors_are_retried(bizon, api):
    api.auth = api.oauth_auth
    api.inject("/oauth/token", Fault(status=503), times=2)
    api.inject("/oauth/token", Fault(status=429), times=1)
    run(bizon, pipeline("auth", source(api, oauth(api))))
    assert everything_written(bizon)
    assert len(api.token_requests()) == 4


def test_oauth_refresh_failure_fails_the_run_without_leaking(bizon, api):
    api.auth = api.oauth_auth
    api.client_secret = "the-server-expects-another"
    result = run(bizon, pipeline("auth", source(api, oauth(api, client_secret="wrong-secret-77"))),
                 "--log-level", "DEBUG", check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "OAuth token refresh failed" in outcome["error"]
    assert "returned 401" in outcome["error"]
    assert "invalid_client" in outcome["error"]
    assert len(api.token_requests()) == 1  # A 401 is not retried.
    for text in (result.stderr, result.stdout, (bizon.cwd / "result.json").read_text()):
        assert "wrong-secret-77" not in text
        assert api.refresh_token not in text


def test_secrets_are_masked_in_logs_and_results(bizon, api):
    # The server echoes the token it rejects; the error shows the body, masked.
    def echo(request):
        return f"token {request.headers.get('authorization', '')[7:]} is not valid"

    api.auth = echo
    authentication = {"type": "api_key", "params": {"token": "sup3r-s3cret-t0ken"}}
    result = run(bizon, pipeline("auth", source(api, authentication)), "--log-level", "DEBUG",
                 check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert "returned 401" in outcome["error"]
    assert "is not valid" in outcome["error"]
    assert "****" in outcome["error"]
    for text in (result.stderr, result.stdout, (bizon.cwd / "result.json").read_text()):
        assert "sup3r-s3cret-t0ken" not in text
