"""The gsheets source against tests/fakes/fake_gsheets.py (Sheets API v4) and the Google token
endpoint / metadata server of tests/fakes/fake_google_oauth.py: service-account keys whose JWT the
fake verifies, authorized-user and metadata-server credentials, token refresh, the header row's
names, empty cells, duplicate headers, rate limiting, refused credentials and malformed answers."""

from __future__ import annotations

import json

import pytest
import yaml

from fake_google_oauth import rsa_key
from fake_gsheets import FakeGsheets
from fake_server import Fault
from support.http_sources import run
from support.pipelines import load_example, pipeline
from support.results import read_result, source_data

SHEET_ID = "1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms"
CONTACTS = [
    ["firstName", "Last Name", "UserID", "age", "score", "notes"],
    ["Ada", "Lovelace", "u-001", "36", "9.5", "first programmer"],
    ["Alan", "Turing", "u-002", "41", "", ""],
    ["", "", "", "", "", ""],
    ["Zoë", "O'Brien", "u-004", "007", "1,234", "naïve \"quoted\""],
]
EXPECTED = [
    {"first_name": "Ada", "last__name": "Lovelace", "user_i_d": "u-001", "age": 36,
     "score": 9.5, "notes": "first programmer"},
    {"first_name": "Alan", "last__name": "Turing", "user_i_d": "u-002", "age": 41, "score": "",
     "notes": ""},
    {"first_name": "", "last__name": "", "user_i_d": "", "age": "", "score": "", "notes": ""},
    {"first_name": "Zoë", "last__name": "O'Brien", "user_i_d": "u-004", "age": 7,
     "score": "1,234", "notes": "naïve \"quoted\""},
]


@pytest.fixture
def sheets(oauth):
    server = FakeGsheets(oauth).start()
    server.add(SHEET_ID, {"Contacts": CONTACTS, "Orders": [["id"], ["1"]], "It's Q3": [["a"], ["x"]]})
    yield server
    server.stop()
    assert server.violations == []


def no_adc(bizon, **extra):
    """An environment with no ambient Google credentials (no key file, no gcloud file)."""
    env = {"GOOGLE_APPLICATION_CREDENTIALS": "", "CLOUDSDK_CONFIG": str(bizon.cwd / "gcloud"),
           "GCE_METADATA_HOST": "127.0.0.1:1"}
    env.update(extra)
    return env


def source(sheets, key: dict | str | None, worksheet="Contacts", **extra):
    block = {"name": "gsheets", "stream": "worksheet",
             "spreadsheet_url": f"https://docs.google.com/spreadsheets/d/{SHEET_ID}/edit#gid=0",
             "worksheet_name": worksheet, "base_url": sheets.url, **extra}
    if key is not None:
        block["service_account_key"] = key if isinstance(key, str) else json.dumps(key)
    return block


def records(bizon, name="out.json"):
    return source_data(bizon.read_ndjson(name))


def test_service_account_key_full_refresh(bizon, oauth, sheets):
    key = oauth.add_service_account()
    run(bizon, pipeline("sheet", source(sheets, key)), env=no_adc(bizon))
    assert records(bizon) == EXPECTED
    rows = bizon.read_ndjson("out.json")
    ids = [row["source_record_id"] for row in rows]
    assert len(set(ids)) == 4 and all(len(i) == 32 for i in ids)
    # The JWT the token endpoint verified: Google's claims, the read-only Sheets and Drive scopes.
    [(header, claims)] = oauth.assertions
    assert header == {"alg": "RS256", "typ": "JWT", "kid": "kid-0f1e2d3c"}
    assert claims["iss"] == "reader@acme-sheets.iam.gserviceaccount.com"
    assert claims["aud"] == oauth.token_uri
    assert claims["scope"] == ("https://www.googleapis.com/auth/spreadsheets.readonly "
                               "https://www.googleapis.com/auth/drive.readonly")
    assert claims["exp"] - claims["iat"] == 3600
    # spreadsheets.get, then values.get for the whole tab.
    assert [(r.path, r.query) for r in sheets.requests] == [
        (f"/v4/spreadsheets/{SHEET_ID}", {"includeGridData": ["false"]}),
        (f"/v4/spreadsheets/{SHEET_ID}/values/%27Contacts%27", {}),
    ]


def test_raw_header_names_and_chosen_columns(bizon, oauth, sheets):
    key = oauth.add_service_account()
    run(bizon, pipeline("sheet", source(sheets, key, convert_column_names_to_sql_format=False,
                                        column_names=["UserID", "firstName"])), env=no_adc(bizon))
    assert records(bizon) == [{"firstName": "Ada", "UserID": "u-001"},
                              {"firstName": "Alan", "UserID": "u-002"},
                              {"firstName": "", "UserID": ""},
                              {"firstName": "Zoë", "UserID": "u-004"}]


def test_quoted_worksheet_title(bizon, oauth, sheets):
    run(bizon, pipeline("sheet", source(sheets, oauth.add_service_account(), worksheet="It's Q3")),
        env=no_adc(bizon))
    assert records(bizon) == [{"a": "x"}]
    assert sheets.requests[-1].path == f"/v4/spreadsheets/{SHEET_ID}/values/%27It%27%27s%20Q3%27"


def test_duplicate_headers_fail_the_run(bizon, oauth, sheets):
    sheets.add(SHEET_ID, {"Contacts": [["id", "name", "name"], ["1", "a", "b"]]})
    run(bizon, pipeline("sheet", source(sheets, oauth.add_service_account())), env=no_adc(bizon),
        check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert 'Duplicate column names in the header row: "name"' in outcome["error"]
    assert not (bizon.cwd / "out.json").exists()


def test_missing_column_and_missing_worksheet(bizon, oauth, sheets):
    key = oauth.add_service_account()
    run(bizon, pipeline("sheet", source(sheets, key, column_names=["email"])), env=no_adc(bizon),
        check=1)
    error = read_result(bizon.cwd / "result.json")["error"]
    assert 'Column name "email" not found in worksheet' in error
    run(bizon, pipeline("sheet", source(sheets, key, worksheet="Contactz")), env=no_adc(bizon),
        check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert ("Worksheet not found, available worksheets: ['Contacts', 'Orders', \"It's Q3\"]"
            in outcome["error"] or
            "Worksheet not found, available worksheets: ['Contacts', 'Orders', 'It's Q3']: Contactz"
            in outcome["error"])


def test_large_sheet_in_one_iteration(bizon, oauth, sheets):
    rows = [["n", "label"]] + [[str(i), f"row {i}"] for i in range(5000)]
    sheets.add(SHEET_ID, {"Contacts": rows})
    run(bizon, pipeline("sheet", source(sheets, oauth.add_service_account())), env=no_adc(bizon))
    got = records(bizon)
    assert got == [{"n": i, "label": f"row {i}"} for i in range(5000)]


def test_expired_token_is_refreshed(bizon, oauth, sheets):
    # Tokens live 2 s: renewed 0.2 s before expiry. The metadata answer is slowed past that, so
    # values.get needs a second token; the fake refuses an expired one.
    oauth.expires_in = 2
    sheets.inject(f"/v4/spreadsheets/{SHEET_ID}", Fault(delay=2.2), times=1,
                  when=lambda r: "/values/" not in r.path)
    run(bizon, pipeline("sheet", source(sheets, oauth.add_service_account())), env=no_adc(bizon))
    assert records(bizon) == EXPECTED
    assert len(oauth.assertions) == 2
    tokens = [r.headers["authorization"] for r in sheets.requests]
    assert tokens[0] != tokens[1]


def test_a_401_gets_a_new_token_once(bizon, oauth, sheets):
    key = oauth.add_service_account()
    sheets.inject(f"/v4/spreadsheets/{SHEET_ID}/values", Fault(status=401, body={"error": {
        "code": 401, "message": "Request had invalid authentication credentials.",
        "status": "UNAUTHENTICATED"}}), times=1)
    run(bizon, pipeline("sheet", source(sheets, key)), env=no_adc(bizon))
    assert records(bizon) == EXPECTED
    assert len(oauth.assertions) == 2


def test_rate_limit_is_honoured(bizon, oauth, sheets):
    sheets.inject(f"/v4/spreadsheets/{SHEET_ID}/values", Fault(status=429, headers={"Retry-After": "3"}, body={
        "error": {"code": 429, "message": "Quota exceeded for quota metric 'Read requests'",
                  "status": "RESOURCE_EXHAUSTED"}}), times=2)
    result = run(bizon, pipeline("sheet", source(sheets, oauth.add_service_account())),
                 env=no_adc(bizon))
    assert records(bizon) == EXPECTED
    assert len(sheets.requests_to(f"/v4/spreadsheets/{SHEET_ID}/values")) == 3
    assert "Retrying HTTP request in 3.0 s" in result.stderr


def test_a_key_the_token_endpoint_refuses(bizon, oauth, sheets):
    # The key file names the account, but its private key is another one: the signature fails.
    key = oauth.add_service_account()
    key["private_key"] = rsa_key(1).pem
    secret_line = key["private_key"].splitlines()[5]
    result = run(bizon, pipeline("sheet", source(sheets, key)), env=no_adc(bizon), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert ("Google token endpoint refused: POST " + oauth.token_uri +
            " returned HTTP 400: invalid_grant: Invalid JWT Signature.") in outcome["error"]
    everything = result.stdout + result.stderr + json.dumps(outcome)
    assert secret_line not in everything and "PRIVATE KEY" not in everything
    assert sheets.requests == []


def test_a_malformed_key_is_a_config_error_without_key_material(bizon, oauth, sheets):
    key = oauth.add_service_account()
    key["private_key"] = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIB\n-----END PRIVATE KEY-----\n"
    result = run(bizon, pipeline("sheet", source(sheets, key)), env=no_adc(bizon), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    # A value of the config the source refuses is a config failure, naming the option.
    assert outcome["failure_class"] == "config"
    assert "Google credentials source.service_account_key (line 8)" in outcome["error"]
    assert "not a PEM private key" in outcome["error"]
    everything = result.stdout + result.stderr + json.dumps(outcome)
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIB" not in everything
    assert oauth.requests == [] and sheets.requests == []


def test_a_malformed_answer_fails_and_publishes_nothing(bizon, oauth, sheets):
    sheets.inject(f"/v4/spreadsheets/{SHEET_ID}/values", Fault(invalid_json=True), times=None)
    run(bizon, pipeline("sheet", source(sheets, oauth.add_service_account())), env=no_adc(bizon),
        check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "the Sheets API answered GET" in outcome["error"] and "invalid JSON" in outcome["error"]
    assert not (bizon.cwd / "out.json").exists()


def test_google_application_credentials_file(bizon, oauth, sheets):
    path = bizon.write("key.json", json.dumps(oauth.add_service_account()))
    run(bizon, pipeline("sheet", source(sheets, None)),
        env=no_adc(bizon, GOOGLE_APPLICATION_CREDENTIALS=str(path)))
    assert records(bizon) == EXPECTED
    assert len(oauth.assertions) == 1


def test_gcloud_authorized_user_file(bizon, oauth, sheets):
    user = oauth.add_user()
    (bizon.cwd / "gcloud").mkdir()
    bizon.write("gcloud/application_default_credentials.json", json.dumps(user))
    run(bizon, pipeline("sheet", source(sheets, None)), env=no_adc(bizon))
    assert records(bizon) == EXPECTED
    [grant] = oauth.requests_to("/token")
    assert "grant_type=refresh_token" in grant.body.decode()


def test_refused_refresh_token_hides_the_secrets(bizon, oauth, sheets):
    user = oauth.add_user()
    user["client_secret"] = "wrong-client-secret-0123"
    (bizon.cwd / "gcloud").mkdir()
    bizon.write("gcloud/application_default_credentials.json", json.dumps(user))
    result = run(bizon, pipeline("sheet", source(sheets, None)), env=no_adc(bizon), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert "returned HTTP 401: invalid_client: Unauthorized" in outcome["error"]
    everything = result.stdout + result.stderr + json.dumps(outcome)
    assert "wrong-client-secret-0123" not in everything
    assert user["refresh_token"] not in everything


def test_metadata_server(bizon, oauth, sheets):
    run(bizon, pipeline("sheet", source(sheets, None)),
        env=no_adc(bizon, GCE_METADATA_HOST=f"127.0.0.1:{oauth.port}"))
    assert records(bizon) == EXPECTED
    [token] = oauth.requests_to("/computeMetadata/v1/instance/service-accounts/default/token")
    assert token.headers["metadata-flavor"] == "Google"
    assert token.query == {"scopes": ["https://www.googleapis.com/auth/spreadsheets.readonly,"
                                      "https://www.googleapis.com/auth/drive.readonly"]}


def test_no_credentials_at_all(bizon, sheets):
    run(bizon, pipeline("sheet", source(sheets, None), ), env=no_adc(bizon), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "Google metadata server request failed" in outcome["error"]
    assert sheets.requests == []


def test_incremental_is_refused(bizon, oauth, sheets):
    config = pipeline("sheet", {**source(sheets, oauth.add_service_account()),
                                "sync_mode": "incremental", "cursor_field": "updated_at"})
    result = run(bizon, config, env=no_adc(bizon), check=None)
    assert result.returncode != 0
    assert "incremental" in (result.stderr + result.stdout)


@pytest.mark.parametrize("name", ["gsheets_default_credentials.yml", "gsheets_service_account.yml"])
def test_original_example_shapes(bizon, oauth, sheets, name):
    config = load_example(name)
    # As written they do not validate (engine.backend lacks config:); with that fixed they run.
    config.pop("engine")
    config["source"]["base_url"] = sheets.url
    sheets.add("example-sheet-id", {"Contacts": CONTACTS, "Orders": [["id", "total"], ["1", "9.90"]]})
    env = no_adc(bizon, GCE_METADATA_HOST=f"127.0.0.1:{oauth.port}")
    if name == "gsheets_default_credentials.yml":
        result = run(bizon, yaml.safe_dump(config), env=env)
        assert result.stderr.count('"first_name"') == 4
        return
    # The example's key is a stand-in without a private key: refused before any request.
    result = run(bizon, yaml.safe_dump(config), env=env, check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "config"
    assert "the service_account key lacks 'private_key'" in outcome["error"]
    # With a real key of that account it runs.
    key = json.loads(config["source"]["service_account_key"])
    key.update({k: v for k, v in oauth.add_service_account(key["client_email"]).items()
                if k in ("private_key", "private_key_id", "token_uri")})
    config["source"]["service_account_key"] = json.dumps(key)
    result = run(bizon, yaml.safe_dump(config), env=env)
    assert result.stderr.count('"total"') == 1
