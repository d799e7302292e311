"""A fake Google Secret Manager, following the documented REST API v1
(cloud.google.com/secret-manager/docs/reference/rest/v1/projects.secrets.versions/access):

    GET /v1/projects/{project}/secrets/{secret}/versions/{version}:access
    -> {"name": "projects/<project number>/secrets/<secret>/versions/<n>",
        "payload": {"data": "<base64>", "dataCrc32c": "<CRC32C as an int64 string>"}}

`{project}` is the project id or its number; `{version}` a version number or `latest`, the alias
of the most recently created version. The request body must be empty and the bearer token one
that the fake token endpoint (fake_google_oauth.py) issued, unexpired, granting the cloud-platform
scope (the one access_secret_version requires). Answers in Google's error shape
{"error": {"code", "message", "status"}}, with the messages Secret Manager gives:

* 401 UNAUTHENTICATED without a valid token;
* 403 PERMISSION_DENIED for a project the fake does not hold, or a secret the caller is denied
  (`deny`), as Google answers when the caller lacks secretmanager.versions.access;
* 404 NOT_FOUND "Secret [...] not found or has no versions." for an unknown secret, and
  "Secret Version [...] not found." for an unknown version;
* 400 FAILED_PRECONDITION "... is in DISABLED state." / "DESTROYED state." for such versions.

Off-contract, answered 400 and listed in `violations`: a query parameter, a request body, a
resource path not of the documented shape. Standard library only.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field

from fake_gsheets import google_error
from fake_server import FakeServer, OffContract, Response

CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
ACCESS_PATH = re.compile(r"^/v1/projects/([^/]+)/secrets/([^/]+)/versions/([^/:]+):access$")


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


@dataclass
class Version:
    data: bytes
    state: str = "ENABLED"  # ENABLED, DISABLED, DESTROYED


@dataclass
class Project:
    number: str
    secrets: dict[str, list[Version]] = field(default_factory=dict)
    denied: set[str] = field(default_factory=set)  # secret ids the caller may not access


class FakeSecretManager(FakeServer):
    gzip = False

    def __init__(self, oauth):
        super().__init__()
        self.oauth = oauth
        self.projects: dict[str, Project] = {}
        #: Answer this dataCrc32c instead of the true one (a corrupted payload), when set.
        self.wrong_crc = False
        self.route("GET", "/v1/projects", self.access)

    # -- registration ------------------------------------------------------------------------

    def add(self, project: str, secret: str, *values: str | bytes, number: str = "123456789012"):
        """Adds versions 1..n of `secret` (created in that order, so `latest` is the last)."""
        holder = self.projects.setdefault(project, Project(number))
        versions = holder.secrets.setdefault(secret, [])
        for value in values:
            versions.append(Version(value.encode() if isinstance(value, str) else value))

    def set_state(self, project: str, secret: str, version: int, state: str):
        self.projects[project].secrets[secret][version - 1].state = state

    def deny(self, project: str, secret: str):
        self.projects[project].denied.add(secret)

    def accesses(self) -> list[str]:
        """The resource names asked for, in order."""
        return [r.path[len("/v1/"):-len(":access")] for r in self.requests]

    # -- route -------------------------------------------------------------------------------

    def access(self, request):
        match = ACCESS_PATH.match(request.path)
        if match is None:
            raise OffContract(f"not a secret version access path: {request.path}", status=404)
        if request.query:
            raise OffContract(f"access takes no query parameters, got {sorted(request.query)}")
        if request.body:
            raise OffContract("the request body must be empty")
        refused = self.oauth.check_bearer(request, CLOUD_PLATFORM)
        if refused:
            return google_error(
                401, "Request had invalid authentication credentials. Expected OAuth 2 access "
                "token, login cookie or other valid authentication credential. See "
                f"https://developers.google.com/identity/sign-in/web/devconsole-project. ({refused})",
                "UNAUTHENTICATED")
        project_ref, secret, version = match.groups()
        project = self.projects.get(project_ref) or next(
            (p for p in self.projects.values() if p.number == project_ref), None)
        asked = f"projects/{project_ref}/secrets/{secret}/versions/{version}"
        if project is None or secret in project.denied:
            return google_error(
                403, f"Permission 'secretmanager.versions.access' denied for resource '{asked}' "
                "(or it may not exist).", "PERMISSION_DENIED")
        versions = project.secrets.get(secret)
        if not versions:
            return google_error(
                404, f"Secret [projects/{project.number}/secrets/{secret}] not found or has no "
                "versions.", "NOT_FOUND")
        if version == "latest":
            number = len(versions)
        elif version.isdigit() and 1 <= int(version) <= len(versions):
            number = int(version)
        else:
            return google_error(
                404, f"Secret Version [projects/{project.number}/secrets/{secret}/versions/"
                f"{version}] not found.", "NOT_FOUND")
        name = f"projects/{project.number}/secrets/{secret}/versions/{number}"
        entry = versions[number - 1]
        if entry.state != "ENABLED":
            return google_error(400, f"Secret Version [{name}] is in {entry.state} state.",
                                "FAILED_PRECONDITION")
        crc = crc32c(entry.data) ^ (1 if self.wrong_crc else 0)
        # proto3 JSON leaves out default values: an empty payload is "payload": {}.
        payload = {"data": base64.b64encode(entry.data).decode(), "dataCrc32c": str(crc)}
        return Response(200, {"name": name, "payload": {k: v for k, v in payload.items()
                                                        if v not in ("", "0")}})

    def error_response(self, error: OffContract) -> Response:
        return google_error(error.status, str(error),
                            "NOT_FOUND" if error.status == 404 else "INVALID_ARGUMENT")
