"""The fake schema registry (tests/fakes/schema_registry.py) and the Avro wire-format helpers of
conftest_kafka, checked over real HTTP with the standard library's client."""

from __future__ import annotations

import base64
import io
import json
import struct
import urllib.error
import urllib.request

import fastavro
import pytest

from conftest_kafka import (  # noqa: F401 (fixture)
    apicurio_avro,
    confluent_avro,
    debezium_envelope_schema,
    debezium_record,
    schema_registry,
)
from fake_server import Fault

USER_SCHEMA = {"type": "record", "name": "User", "namespace": "test",
               "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}
CONFLUENT = "application/vnd.schemaregistry.v1+json"


def call(url, method="GET", body=None, auth=None, content_type=CONFLUENT):
    """(status, headers, body bytes) of one request; HTTP errors are answers, not exceptions."""
    request = urllib.request.Request(url, method=method,
                                     data=None if body is None else json.dumps(body).encode())
    if body is not None:
        request.add_header("Content-Type", content_type)
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_confluent_lookup_by_id_subjects_and_versions(schema_registry):
    first = schema_registry.register("users-value", USER_SCHEMA)
    second = schema_registry.register("users-value", {**USER_SCHEMA, "fields": USER_SCHEMA["fields"][:1]})
    assert schema_registry.register("other-value", USER_SCHEMA) == first  # One id per schema.
    url = schema_registry.url

    status, headers, body = call(f"{url}/schemas/ids/{first}")
    assert status == 200 and headers["Content-Type"] == CONFLUENT
    assert json.loads(json.loads(body)["schema"]) == USER_SCHEMA
    assert "schemaType" not in json.loads(body)
    assert json.loads(call(f"{url}/schemas/ids/{first}/schema")[2]) == USER_SCHEMA
    assert json.loads(call(f"{url}/subjects")[2]) == ["other-value", "users-value"]
    assert json.loads(call(f"{url}/subjects/users-value/versions")[2]) == [1, 2]
    latest = json.loads(call(f"{url}/subjects/users-value/versions/latest")[2])
    assert {k: latest[k] for k in ("subject", "version", "id")} == \
        {"subject": "users-value", "version": 2, "id": second}
    assert json.loads(call(f"{url}/subjects/users-value/versions/1")[2])["id"] == first


def test_confluent_register_over_http_returns_the_same_id_for_the_same_schema(schema_registry):
    url = schema_registry.url
    status, _, body = call(f"{url}/subjects/t-value/versions", "POST",
                           {"schema": json.dumps(USER_SCHEMA, indent=2)})
    assert status == 200
    schema_id = json.loads(body)["id"]
    assert call(f"{url}/subjects/t-value/versions", "POST",
                {"schema": json.dumps(USER_SCHEMA)})[2] == json.dumps({"id": schema_id}).encode()
    json_id = json.loads(call(f"{url}/subjects/j-value/versions", "POST",
                              {"schema": '{"type": "object"}', "schemaType": "JSON"})[2])["id"]
    assert json_id != schema_id
    assert json.loads(call(f"{url}/schemas/ids/{json_id}")[2])["schemaType"] == "JSON"
    assert [(r.method, r.path, r.status) for r in schema_registry.requests][:2] == [
        ("POST", "/subjects/t-value/versions", 200), ("POST", "/subjects/t-value/versions", 200)]


def test_confluent_errors_have_the_documented_codes(schema_registry):
    url = schema_registry.url
    schema_registry.register("users-value", USER_SCHEMA)
    cases = {
        "/schemas/ids/999": (404, 40403),
        "/subjects/nobody/versions": (404, 40401),
        "/subjects/nobody/versions/1": (404, 40401),
        "/subjects/users-value/versions/7": (404, 40402),
        "/subjects/users-value/versions/zero": (422, 42202),
    }
    for path, (status, code) in cases.items():
        got_status, _, body = call(url + path)
        assert (got_status, json.loads(body)["error_code"]) == (status, code), path
        assert json.loads(body)["message"]
    assert json.loads(call(url + "/schemas/ids/999")[2]) == {"error_code": 40403,
                                                           "message": "Schema not found"}
    status, _, body = call(f"{url}/subjects/x/versions", "POST", {"schema": "{not json"})
    assert (status, json.loads(body)["error_code"]) == (422, 42201)
    assert schema_registry.violations == []  # All of these are valid requests.


def test_off_contract_requests_are_refused_and_recorded(schema_registry):
    url = schema_registry.url
    assert call(f"{url}/nowhere")[0] == 404
    assert call(f"{url}/schemas/ids/1", "DELETE")[0] == 405
    assert call(f"{url}/schemas/ids/1?colour=red")[0] == 400
    assert call(f"{url}/subjects/x/versions", "POST", {"schema": "{}"},
                content_type="text/plain")[0] == 415
    assert call(f"{url}/apis/registry/v2/groups/default/artifacts")[0] == 404
    assert len(schema_registry.violations) == 5
    schema_registry.violations.clear()  # Expected here; the fixture asserts none are left.


def test_apicurio_returns_the_raw_schema_by_global_id_and_a_404_body(schema_registry):
    global_id = schema_registry.register("users-value", USER_SCHEMA, schema_id=5_000_000_000)
    url = schema_registry.url

    status, headers, body = call(f"{url}/apis/registry/v2/ids/globalIds/{global_id}")
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert json.loads(body) == USER_SCHEMA

    status, _, body = call(f"{url}/apis/registry/v2/ids/globalIds/42")
    error = json.loads(body)
    assert status == 404 and error["error_code"] == 404
    assert error["name"] == "ArtifactNotFoundException" and "42" in error["message"]


def test_basic_auth_is_required_when_configured(schema_registry):
    schema_id = schema_registry.register("users-value", USER_SCHEMA)
    schema_registry.require_auth("registry-user", "registry-secret")
    url = schema_registry.url
    for path in (f"/schemas/ids/{schema_id}", f"/apis/registry/v2/ids/globalIds/{schema_id}"):
        status, headers, body = call(url + path)
        assert status == 401 and headers["WWW-Authenticate"].startswith("Basic")
        assert json.loads(body)["error_code"] == 401
        assert call(url + path, auth=("registry-user", "wrong"))[0] == 401
        assert call(url + path, auth=("registry-user", "registry-secret"))[0] == 200
    assert [(r.user, r.status) for r in schema_registry.requests] == [
        (None, 401), ("registry-user", 401), ("registry-user", 200)] * 2


def test_hits_count_lookups_of_one_id_on_both_apis(schema_registry):
    schema_id = schema_registry.register("users-value", USER_SCHEMA)
    other = schema_registry.register("other-value", {"type": "string"})
    url = schema_registry.url
    call(f"{url}/schemas/ids/{schema_id}")
    call(f"{url}/apis/registry/v2/ids/globalIds/{schema_id}")
    call(f"{url}/apis/registry/v2/ids/globalIds/{schema_id}")
    assert schema_registry.hits(schema_id) == 3
    assert schema_registry.hits(other) == 0
    assert schema_registry.hits(12345) == 0


def read_avro(schema, data: bytes):
    return fastavro.schemaless_reader(io.BytesIO(data), fastavro.parse_schema(schema))


def test_wire_format_helpers():
    record = {"id": 7, "name": "Ada"}
    confluent = confluent_avro(3, USER_SCHEMA, record)
    assert confluent[:5] == b"\x00\x00\x00\x00\x03"
    assert read_avro(USER_SCHEMA, confluent[5:]) == record
    apicurio = apicurio_avro(2**33 + 1, USER_SCHEMA, record)
    assert apicurio[0] == 0 and struct.unpack(">q", apicurio[1:9])[0] == 2**33 + 1
    assert read_avro(USER_SCHEMA, apicurio[9:]) == record
    # A small global id still takes 8 bytes, its first four zero: how a reader tells the forms
    # apart (a 4-byte Confluent id is never 0).
    assert apicurio_avro(9, USER_SCHEMA, record)[1:9] == b"\x00" * 7 + b"\x09"


def test_debezium_envelope_round_trips_inserts_updates_and_deletes():
    schema = debezium_envelope_schema([("id", "int"), {"name": "email", "type": ["null", "string"],
                                                        "default": None}], table="customers")
    assert schema["name"] == "Envelope" and schema["namespace"] == "dbserver1.public.customers"
    events = [
        debezium_record("c", None, {"id": 1, "email": "a@example.com"}, 1_700_000_000_000,
                        table="customers"),
        debezium_record("u", {"id": 1, "email": "a@example.com"}, {"id": 1, "email": None},
                        1_700_000_000_500, table="customers", lsn=42),
        debezium_record("d", {"id": 1, "email": None}, None, 1_700_000_001_000, table="customers"),
    ]
    for event in events:
        decoded = read_avro(schema, confluent_avro(1, schema, event)[5:])
        assert decoded == event
    assert events[0]["source"]["table"] == "customers" and events[0]["source"]["db"] == "bizon"
    with pytest.raises(ValueError):
        debezium_record("x", None, None, 0)


def test_injected_faults_answer_instead_and_still_count_as_hits(schema_registry):
    schema_id = schema_registry.register("users-value", USER_SCHEMA)
    path = f"/apis/registry/v2/ids/globalIds/{schema_id}"
    schema_registry.fake.inject(path, Fault(status=503, body={"error_code": 503}), times=1)
    assert call(schema_registry.url + path)[0] == 503
    assert call(schema_registry.url + path)[0] == 200
    assert schema_registry.hits(schema_id) == 2
