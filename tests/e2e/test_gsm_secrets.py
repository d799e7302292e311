"""`gsm://` references through Google Secret Manager (engine spec §7): the long and short forms,
the project from `secrets.gsm.project_id`, GOOGLE_CLOUD_PROJECT or the credentials' key, Google's
refusals reported with the reference and never a value, `bizon secrets check`, and
`config validate --skip-references`. Against tests/fakes/fake_secret_manager.py (REST v1
versions.access), with the token from tests/fakes/fake_google_oauth.py (a service-account key
in GOOGLE_APPLICATION_CREDENTIALS, its JWT verified), and the token used by the rest_api source
against tests/fakes/fake_rest_api.py."""

from __future__ import annotations

import json

import pytest
import yaml

from fake_rest_api import FakeRestApi
from fake_secret_manager import FakeSecretManager
from fake_server import Fault
from support.http_sources import FAST, run
from support.pipelines import pipeline
from support.results import read_result

PROJECT = "acme-secrets"
OLD_TOKEN = "tok-old-7Yq2mZ9pX4rT"
TOKEN = "tok-current-Hv3sL8wQ1nB6"
OTHER = "tok-other-Kd5fJ0cR2uE7"
ENDPOINTS = {"items": {"path": "/offset", "record_selector": "data.items",
                       "pagination": {"type": "offset", "limit": 10}}}


@pytest.fixture
def gsm(oauth):
    server = FakeSecretManager(oauth).start()
    server.add(PROJECT, "api-token", OLD_TOKEN, TOKEN)
    server.add("acme-sheets", "api-token", OTHER)  # The service-account key's own project.
    yield server
    server.stop()
    assert server.violations == []


@pytest.fixture
def api():
    server = FakeRestApi().start()
    yield server
    server.stop()
    assert server.violations == []


@pytest.fixture
def env(bizon, oauth, gsm):
    """Application Default Credentials from a key file the fake token endpoint knows, nothing
    ambient, and Secret Manager at the fake."""
    key = bizon.write("sa-key.json", json.dumps(oauth.add_service_account()))
    return {**FAST, "GOOGLE_APPLICATION_CREDENTIALS": str(key), "GOOGLE_CLOUD_PROJECT": "",
            "GCLOUD_PROJECT": "", "CLOUDSDK_CONFIG": str(bizon.cwd / "gcloud"),
            "GCE_METADATA_HOST": "127.0.0.1:1", "BIZON_SECRETMANAGER_ENDPOINT": gsm.url}


def expect_bearer(api, token):
    api.auth = lambda request: None if request.headers.get("authorization") == f"Bearer {token}" \
        else f"authorization was {request.headers.get('authorization')!r}"


def config(api, token_reference, project: str | None = PROJECT, **root) -> str:
    source = {"name": "rest_api", "stream": "items", "base_url": api.url, "endpoints": ENDPOINTS,
              "authentication": {"type": "bearer", "params": {"token": token_reference}}}
    if project is not None:
        root["secrets"] = {"gsm": {"project_id": project}}
    return pipeline("gsm", source, **root)


def outputs(bizon, result) -> str:
    text = result.stdout + result.stderr
    for name in ("result.json", "out.json"):
        if (bizon.cwd / name).exists():
            text += (bizon.cwd / name).read_text()
    return text


def assert_no_secret(text: str):
    for value in (OLD_TOKEN, TOKEN, OTHER):
        assert value not in text


@pytest.mark.parametrize(
    "reference, project, extra_env, expected_token, resource",
    [
        ("gsm://api-token", PROJECT, {}, TOKEN,
         f"projects/{PROJECT}/secrets/api-token/versions/latest"),
        ("gsm://api-token/versions/1", PROJECT, {}, OLD_TOKEN,
         f"projects/{PROJECT}/secrets/api-token/versions/1"),
        (f"gsm://projects/{PROJECT}/secrets/api-token/versions/2", None, {}, TOKEN,
         f"projects/{PROJECT}/secrets/api-token/versions/2"),
        # The project from the environment, as google.auth.default() reads it.
        ("gsm://api-token", None, {"GOOGLE_CLOUD_PROJECT": PROJECT}, TOKEN,
         f"projects/{PROJECT}/secrets/api-token/versions/latest"),
        # secrets.gsm.project_id wins over the environment.
        ("gsm://api-token", PROJECT, {"GOOGLE_CLOUD_PROJECT": "acme-sheets"}, TOKEN,
         f"projects/{PROJECT}/secrets/api-token/versions/latest"),
        # Neither: the key file's project_id.
        ("gsm://api-token", None, {}, OTHER, "projects/acme-sheets/secrets/api-token/versions/latest"),
        # Inline, surrounding whitespace inside the token trimmed.
        ("${ gsm://api-token/versions/1 }", PROJECT, {}, OLD_TOKEN,
         f"projects/{PROJECT}/secrets/api-token/versions/1"),
    ],
)
def test_pipeline_token_from_secret_manager(bizon, oauth, gsm, api, env, reference, project,
                                            extra_env, expected_token, resource):
    expect_bearer(api, expected_token)
    result = run(bizon, config(api, reference, project), env={**env, **extra_env}, check=0)
    assert len(bizon.read_ndjson("out.json")) == 23
    assert gsm.accesses() == [resource]
    # The request carried a token of the service account, cloud-platform scope, JWT verified.
    [(header, claims)] = oauth.assertions
    assert claims["iss"] == "reader@acme-sheets.iam.gserviceaccount.com"
    assert claims["scope"] == "https://www.googleapis.com/auth/cloud-platform"
    assert gsm.requests[0].headers["authorization"].startswith("Bearer ya29.fake-")
    assert gsm.requests[0].method == "GET" and gsm.requests[0].body == b""
    assert_no_secret(outputs(bizon, result))


def test_a_repeated_reference_is_fetched_once(bizon, gsm, api, env):
    expect_bearer(api, TOKEN + "." + TOKEN)
    run(bizon, config(api, "${gsm://api-token}.${gsm://api-token}"), env=env, check=0)
    assert len(bizon.read_ndjson("out.json")) == 23
    assert len(gsm.requests) == 1


def test_unavailable_is_retried(bizon, gsm, api, env):
    gsm.inject("/v1/projects", Fault(status=503, body={"error": {
        "code": 503, "message": "The service is currently unavailable.", "status": "UNAVAILABLE"}}),
        times=2)
    expect_bearer(api, TOKEN)
    result = run(bizon, config(api, "gsm://api-token"), env=env, check=0)
    assert len(gsm.requests) == 3
    assert result.stderr.count("Retrying HTTP request") == 2


def test_empty_secret_version(bizon, gsm, api, env):
    gsm.add(PROJECT, "empty", "")
    text = config(api, "gsm://api-token") + "source_note: ${gsm://empty}\n"
    bizon.write("p.yml", text)
    result = bizon.run("secrets", "check", "p.yml", env=env, check=0)
    line = next(l for l in result.stdout.splitlines() if "gsm://empty" in l)
    assert "✓  (0 chars)" in line


@pytest.mark.parametrize(
    "reference, setup, mention",
    [
        ("gsm://nope", None,
         "could not access 'projects/acme-secrets/secrets/nope/versions/latest' for gsm://nope: "
         "404 NOT_FOUND: Secret [projects/123456789012/secrets/nope] not found or has no versions."),
        ("gsm://api-token/versions/9", None,
         "for gsm://api-token/versions/9: 404 NOT_FOUND: Secret Version "
         "[projects/123456789012/secrets/api-token/versions/9] not found."),
        ("gsm://projects/elsewhere/secrets/api-token/versions/1", None,
         "for gsm://projects/elsewhere/secrets/api-token/versions/1: 403 PERMISSION_DENIED: "
         "Permission 'secretmanager.versions.access' denied"),
        ("gsm://api-token", lambda gsm: gsm.deny(PROJECT, "api-token"),
         "for gsm://api-token: 403 PERMISSION_DENIED"),
        ("gsm://api-token/versions/1", lambda gsm: gsm.set_state(PROJECT, "api-token", 1, "DISABLED"),
         "400 FAILED_PRECONDITION: Secret Version "
         "[projects/123456789012/secrets/api-token/versions/1] is in DISABLED state."),
        ("gsm://api-token", lambda gsm: setattr(gsm, "wrong_crc", True),
         "for gsm://api-token: the payload does not match its dataCrc32c checksum"),
        ("gsm://api token", None, "cannot resolve gsm://api token: expected '<id>'"),
    ],
)
def test_refused_reference_is_a_config_error_naming_it(bizon, gsm, api, env, reference, setup,
                                                       mention):
    if setup:
        setup(gsm)
    result = run(bizon, config(api, reference), env=env, check=1)
    assert mention in result.stderr, result.stderr
    line = next(i for i, l in enumerate(config(api, reference).splitlines(), 1) if "token:" in l)
    assert f"pipeline.yml:{line}: source.authentication.params.token: failed to resolve reference" \
        in result.stderr
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "config" and outcome["status"] == "failure"
    assert outcome["error"].startswith("ConfigError: ") and mention in outcome["error"]
    assert api.requests == []  # Nothing ran.
    assert_no_secret(outputs(bizon, result))


def test_no_project_says_where_to_set_one(bizon, oauth, gsm, api, env):
    # An authorized-user file carries no project.
    key = bizon.write("adc.json", json.dumps(oauth.add_user()))
    result = run(bizon, config(api, "gsm://api-token", project=None),
                 env={**env, "GOOGLE_APPLICATION_CREDENTIALS": str(key)}, check=1)
    assert ("cannot resolve gsm://api-token: no GCP project. Set 'secrets.gsm.project_id' in the "
            "config, the GOOGLE_CLOUD_PROJECT env var, or use a full "
            "'gsm://projects/<project>/secrets/<id>/versions/<n>' path.") in result.stderr
    assert gsm.requests == []


def test_refused_credentials_name_the_reference_and_no_key(bizon, oauth, gsm, api, env):
    key = oauth.add_service_account()
    oauth.accounts.clear()  # The token endpoint no longer knows the key: invalid_grant.
    path = bizon.write("sa-key.json", json.dumps(key))
    result = run(bizon, config(api, "gsm://api-token"),
                 env={**env, "GOOGLE_APPLICATION_CREDENTIALS": str(path)}, check=1)
    assert "for gsm://api-token: " in result.stderr
    assert "invalid_grant" in result.stderr
    assert gsm.requests == []  # No token, no request.
    private = key["private_key"]
    body = [l for l in private.splitlines() if l and not l.startswith("-----")]
    for text in (result.stdout, result.stderr, (bizon.cwd / "result.json").read_text()):
        assert private not in text and not any(l in text for l in body)


def test_resolved_value_is_masked_where_a_server_echoes_it(bizon, gsm, api, env):
    expect_bearer(api, "something-else-entirely")  # The API refuses and echoes what it got.
    result = run(bizon, config(api, "gsm://api-token"), env=env, check=1)
    assert "authorization was" in result.stderr + (bizon.cwd / "result.json").read_text()
    assert_no_secret(outputs(bizon, result))
    # It did send the resolved value.
    assert api.violations == [f"GET /offset: authorization was 'Bearer {TOKEN}'"]
    api.violations.clear()


def test_secrets_check_reports_each_reference(bizon, gsm, api, env):
    text = config(api, "gsm://api-token") + yaml.safe_dump({
        "engine": {"backend": {"type": "sqlite", "config": {
            "database": "${gsm://api-token/versions/1}", "schema": "gsm://missing-one"}}}})
    bizon.write("p.yml", text)
    result = bizon.run("secrets", "check", "p.yml", env=env)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert any("source.authentication.params.token" in l and "gsm://api-token " in l
               and f"✓  ({len(TOKEN)} chars)" in l for l in lines), result.stdout
    assert any("engine.backend.config.database" in l and "gsm://api-token/versions/1" in l
               and f"✓  ({len(OLD_TOKEN)} chars)" in l for l in lines), result.stdout
    assert any("engine.backend.config.schema" in l and "gsm://missing-one" in l and "✗" in l
               and "404 NOT_FOUND" in l for l in lines), result.stdout
    assert "1 reference(s) failed to resolve" in result.stderr
    assert_no_secret(result.stdout + result.stderr)

    gsm.add(PROJECT, "missing-one", "now-there-9Qw")
    ok = bizon.run("secrets", "check", "p.yml", env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "All 3 reference(s) resolved." in ok.stdout
    assert "now-there-9Qw" not in ok.stdout + ok.stderr


def test_validate_resolves_and_skip_references_does_not(bizon, oauth, gsm, api, env):
    bizon.write("p.yml", config(api, "gsm://api-token"))
    skipped = bizon.run("config", "validate", "p.yml", "--skip-references", env=env)
    assert skipped.returncode == 0, skipped.stderr
    assert "gsm" not in skipped.stderr  # No warning left about an unbuilt provider.
    assert gsm.requests == [] and oauth.tokens_issued() == 0

    resolved = bizon.run("config", "validate", "p.yml", env=env)
    assert resolved.returncode == 0, resolved.stderr
    assert gsm.accesses() == [f"projects/{PROJECT}/secrets/api-token/versions/latest"]
    assert_no_secret(resolved.stdout + resolved.stderr)

    bizon.write("p.yml", config(api, "gsm://nope"))
    refused = bizon.run("config", "validate", "p.yml", env=env)
    assert refused.returncode == 1
    assert "for gsm://nope: 404 NOT_FOUND" in refused.stderr
    assert bizon.run("config", "validate", "p.yml", "--skip-references", env=env).returncode == 0
