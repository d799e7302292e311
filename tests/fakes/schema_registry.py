"""A fake schema registry that speaks two documented APIs over the same set of schemas:

* Confluent Schema Registry REST API v1 (Confluent Platform 7.x "Schema Registry API
  Reference"; content type application/vnd.schemaregistry.v1+json):

      GET  /schemas/ids/{id}                       -> {"schema": "<text>"} (+ "schemaType" unless AVRO)
      GET  /schemas/ids/{id}/schema                -> the schema itself
      GET  /subjects                               -> ["subject", ...]
      POST /subjects/{subject}/versions            body {"schema": "<text>", "schemaType"?, "references"?}
                                                   -> {"id": n}
      GET  /subjects/{subject}/versions            -> [1, 2, ...]
      GET  /subjects/{subject}/versions/{version}  version = 1.. | latest | -1
                                                   -> {"subject", "id", "version", "schema"} (+ "schemaType")

  Errors have the documented body {"error_code": <code>, "message": "..."}: 40401 subject not
  found, 40402 version not found, 40403 schema not found (HTTP 404), 42201 invalid schema, 42202
  invalid version (HTTP 422).

* Apicurio Registry core API v2 (Apicurio Registry 2.x, "/apis/registry/v2"), the one the
  original bizon's Kafka source calls:

      GET /apis/registry/v2/ids/globalIds/{globalId}  -> the raw schema JSON (artifact content)

  An unknown id answers 404 with Apicurio's Error body {"error_code", "message", "name",
  "detail"}.

One id space serves both: a schema registered here gets one id, which is its Confluent schema id
and its Apicurio global id. As in Confluent's registry, the same schema text gets the same id under
every subject, and registering it again under a subject returns the existing id.

Optional HTTP basic auth (`username`/`password` at construction, or `require_auth()`): a request
without the right credentials gets 401 (with `WWW-Authenticate: Basic`), as both registries do.

Every request is checked and logged: `calls` lists (method, path, query, user, status) in order
(`requests`, from the base, also has those answered by an injected fault), `hits(id)` counts the
lookups of one id on either API (to assert a client caches schemas), and
anything off-contract (unknown path, wrong method: 404/405; unknown query parameter, malformed
body: 400/415/422) is listed in `violations`, which the fixtures assert empty at teardown.

Standard library only.
"""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass
from urllib.parse import unquote

from fake_server import FakeServer, OffContract, Request, Response

CONFLUENT_TYPE = "application/vnd.schemaregistry.v1+json"
ACCEPTED_BODY_TYPES = ("application/vnd.schemaregistry.v1+json",
                       "application/vnd.schemaregistry+json", "application/json",
                       "application/octet-stream")
SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")
APICURIO_PREFIX = "/apis/registry/v2"


@dataclass
class Call:
    method: str
    path: str
    query: dict
    user: str | None  # The basic-auth user name the request carried, if any.
    status: int


@dataclass
class Schema:
    id: int
    text: str
    schema_type: str


class ConfluentError(Exception):
    """An error answer of the Confluent API that the real registry gives to valid requests."""

    def __init__(self, status: int, code: int, message: str):
        super().__init__(message)
        self.status = status
        self.code = code


def _basic_user(request: Request) -> tuple[str | None, str | None]:
    header = request.headers.get("authorization", "")
    if not header.lower().startswith("basic "):
        return None, None
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return None, None
    user, _, password = decoded.partition(":")
    return user, password


def _looked_up_id(path: str) -> int | None:
    """The schema id a lookup path names (/schemas/ids/<id>[/schema] or Apicurio's
    .../ids/globalIds/<id>), or None."""
    parts = path.strip("/").split("/")
    if len(parts) in (3, 4) and parts[:2] == ["schemas", "ids"]:
        text = parts[2]
    elif len(parts) == 6 and "/" + "/".join(parts[:5]) == APICURIO_PREFIX + "/ids/globalIds":
        text = parts[5]
    else:
        return None
    return int(text) if text.isdigit() else None


class FakeSchemaRegistry(FakeServer):
    gzip = False

    def __init__(self, username: str | None = None, password: str | None = None):
        super().__init__()
        self.username = username
        self.password = password
        self._schemas: dict[int, Schema] = {}
        self._ids_by_text: dict[tuple[str, str], int] = {}
        self._subjects: dict[str, list[int]] = {}  # subject -> schema id of each version
        self._next_id = 1
        self._registry_lock = threading.Lock()
        self.calls: list[Call] = []

    # -- what tests call directly ------------------------------------------------------------

    def require_auth(self, username: str, password: str) -> None:
        self.username, self.password = username, password

    def register(self, subject: str, schema, schema_type: str = "AVRO",
                 schema_id: int | None = None) -> int:
        """Registers `schema` (a dict/list, or schema text) under `subject` without an HTTP
        request, and returns its id. `schema_id` pins the id (to test large Apicurio ids)."""
        text = schema if isinstance(schema, str) else json.dumps(schema, separators=(",", ":"))
        with self._registry_lock:
            return self._register_locked(subject, text, schema_type, schema_id)

    def hits(self, schema_id: int) -> int:
        """How many requests looked up `schema_id`, on either API, whatever they were answered
        (a 401, or a fault injected with `inject()`, counts too)."""
        with self._lock:
            paths = [request.path for request in self.requests]
        return sum(1 for path in paths if _looked_up_id(path) == schema_id)

    def schema_text(self, schema_id: int) -> str:
        return self._schemas[schema_id].text

    # -- the registry ------------------------------------------------------------------------

    def _register_locked(self, subject, text, schema_type, schema_id) -> int:
        key = (schema_type, text)
        existing = self._ids_by_text.get(key)
        if schema_id is not None and existing is not None and existing != schema_id:
            raise ValueError(f"this schema already has id {existing}")
        if existing is None:
            if schema_id is None:
                schema_id = self._next_id
            elif schema_id in self._schemas:
                raise ValueError(f"id {schema_id} is taken by another schema")
            existing = schema_id
            self._schemas[existing] = Schema(existing, text, schema_type)
            self._ids_by_text[key] = existing
            self._next_id = max(self._next_id, existing + 1)
        versions = self._subjects.setdefault(subject, [])
        if existing not in versions:
            versions.append(existing)
        return existing

    def _lookup(self, schema_id: int) -> Schema | None:
        with self._registry_lock:
            return self._schemas.get(schema_id)

    # -- dispatch ----------------------------------------------------------------------------

    def _dispatch(self, request: Request) -> Response:
        user, password = _basic_user(request)
        if self.username is not None and (user, password) != (self.username, self.password):
            response = self._unauthorized(request)
        else:
            try:
                response = self._route(request)
            except OffContract as error:
                with self._lock:
                    self.violations.append(f"{request.method} {request.path}: {error}")
                response = self.error_response(error, request)
            except ConfluentError as error:
                response = self._confluent(error.status,
                                           {"error_code": error.code, "message": str(error)})
        with self._lock:
            self.calls.append(Call(request.method, request.path, request.query, user,
                                   response.status))
        return response

    def _route(self, request: Request) -> Response:
        parts = [unquote(part) for part in request.path.strip("/").split("/")]
        method = request.method
        if request.path.startswith(APICURIO_PREFIX + "/"):
            rest = parts[3:]
            if len(rest) == 3 and rest[:2] == ["ids", "globalIds"]:
                self._only(request, "GET")
                self.only_params(request, {"dereference"})
                return self._apicurio_by_global_id(rest[2])
            raise OffContract("no such Apicurio v2 endpoint", status=404)
        if len(parts) in (3, 4) and parts[:2] == ["schemas", "ids"]:
            if len(parts) == 4 and parts[3] != "schema":
                raise OffContract("no such endpoint", status=404)
            self._only(request, "GET")
            self.only_params(request, {"subject", "format", "fetchMaxId", "referenceFormat"})
            return self._schema_by_id(parts[2], raw=len(parts) == 4)
        if parts == ["subjects"]:
            self._only(request, "GET")
            self.only_params(request, {"subjectPrefix", "deleted", "deletedOnly"})
            prefix = request.param("subjectPrefix", "")
            with self._registry_lock:
                names = sorted(name for name in self._subjects if name.startswith(prefix))
            return self._confluent(200, names)
        if len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
            if method == "POST":
                self.only_params(request, {"normalize"})
                return self._register_request(parts[1], request)
            self._only(request, "GET", "POST")
            self.only_params(request, {"deleted", "deletedOnly"})
            with self._registry_lock:
                versions = self._subjects.get(parts[1])
                if versions is None:
                    raise ConfluentError(404, 40401, f"Subject '{parts[1]}' not found.")
                return self._confluent(200, list(range(1, len(versions) + 1)))
        if len(parts) == 4 and parts[0] == "subjects" and parts[2] == "versions":
            self._only(request, "GET")
            self.only_params(request, {"deleted"})
            return self._subject_version(parts[1], parts[3])
        raise OffContract("no such endpoint", status=404)

    @staticmethod
    def _only(request: Request, *methods: str) -> None:
        if request.method not in methods:
            raise OffContract(f"method not allowed (allowed: {', '.join(methods)})", status=405)

    # -- Confluent ---------------------------------------------------------------------------

    @staticmethod
    def _confluent(status: int, body) -> Response:
        return Response(status, json.dumps(body).encode(), {"Content-Type": CONFLUENT_TYPE})

    @staticmethod
    def _schema_body(schema: Schema) -> dict:
        body = {"schema": schema.text}
        if schema.schema_type != "AVRO":
            body["schemaType"] = schema.schema_type
        return body

    def _schema_by_id(self, text: str, raw: bool) -> Response:
        if not text.lstrip("-").isdigit():
            raise OffContract(f"schema id {text!r} is not an integer", status=404)
        schema = self._lookup(int(text))
        if schema is None:
            raise ConfluentError(404, 40403, "Schema not found")
        if raw:
            return Response(200, schema.text.encode(), {"Content-Type": CONFLUENT_TYPE})
        return self._confluent(200, self._schema_body(schema))

    def _register_request(self, subject: str, request: Request) -> Response:
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type not in ACCEPTED_BODY_TYPES:
            raise OffContract(f"unsupported Content-Type {content_type!r}", status=415)
        try:
            body = json.loads(request.body)
        except ValueError:
            raise OffContract("the body is not JSON", status=400) from None
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            raise OffContract("the body needs a \"schema\" string", status=422)
        unknown = set(body) - {"schema", "schemaType", "references", "metadata", "ruleSet"}
        if unknown:
            raise OffContract(f"unknown body fields {sorted(unknown)}", status=422)
        schema_type = body.get("schemaType", "AVRO")
        if schema_type not in SCHEMA_TYPES:
            raise ConfluentError(422, 42201, f"Invalid schema type {schema_type}")
        text = body["schema"]
        if schema_type in ("AVRO", "JSON"):
            try:
                parsed = json.loads(text)
            except ValueError:
                raise ConfluentError(422, 42201, "Invalid schema") from None
            if schema_type == "AVRO":
                text = json.dumps(parsed, separators=(",", ":"))
        with self._registry_lock:
            schema_id = self._register_locked(subject, text, schema_type, None)
        return self._confluent(200, {"id": schema_id})

    def _subject_version(self, subject: str, version_text: str) -> Response:
        with self._registry_lock:
            versions = self._subjects.get(subject)
            if version_text in ("latest", "-1"):
                number = len(versions) if versions else 0
            elif version_text.isdigit() and 1 <= int(version_text) <= 2**31 - 1:
                number = int(version_text)
            else:
                raise ConfluentError(
                    422, 42202,
                    f"The specified version '{version_text}' is not a valid version id. "
                    "Allowed values are between [1, 2^31-1] and the string \"latest\"")
            if versions is None:
                raise ConfluentError(404, 40401, f"Subject '{subject}' not found.")
            if number < 1 or number > len(versions):
                raise ConfluentError(404, 40402, "Version not found.")
            schema = self._schemas[versions[number - 1]]
        body = {"subject": subject, "version": number, "id": schema.id,
                **self._schema_body(schema)}
        return self._confluent(200, body)

    # -- Apicurio ----------------------------------------------------------------------------

    @staticmethod
    def _apicurio_error(status: int, name: str, message: str) -> Response:
        body = {"error_code": status, "message": message, "name": name, "detail": message}
        return Response(status, json.dumps(body).encode(), {"Content-Type": "application/json"})

    def _apicurio_by_global_id(self, text: str) -> Response:
        if not text.isdigit():
            raise OffContract(f"global id {text!r} is not an integer", status=404)
        global_id = int(text)
        schema = self._lookup(global_id)
        if schema is None:
            return self._apicurio_error(
                404, "ArtifactNotFoundException",
                f"No artifact with global ID '{global_id}' was found.")
        content_type = "application/x-protobuf" if schema.schema_type == "PROTOBUF" \
            else "application/json"
        return Response(200, schema.text.encode(),
                        {"Content-Type": content_type, "X-Registry-ArtifactType": schema.schema_type,
                         "X-Registry-GlobalId": str(global_id)})

    # -- errors ------------------------------------------------------------------------------

    def _unauthorized(self, request: Request) -> Response:
        if request.path.startswith(APICURIO_PREFIX + "/"):
            response = self._apicurio_error(401, "NotAuthorizedException", "Unauthorized")
        else:
            response = self._confluent(401, {"error_code": 401, "message": "Unauthorized"})
        response.headers["WWW-Authenticate"] = 'Basic realm="SchemaRegistry"'
        return response

    def error_response(self, error: OffContract, request: Request | None = None) -> Response:
        if request is not None and request.path.startswith(APICURIO_PREFIX + "/"):
            return self._apicurio_error(error.status, "OffContract", str(error))
        messages = {404: "HTTP 404 Not Found", 405: "HTTP 405 Method Not Allowed",
                    415: "HTTP 415 Unsupported Media Type"}
        return self._confluent(error.status, {"error_code": error.status,
                                              "message": messages.get(error.status, str(error))})
