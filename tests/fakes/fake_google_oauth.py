"""A fake Google OAuth 2.0 token endpoint and GCE metadata server, following Google's documented
protocols:

* "Using OAuth 2.0 for Server to Server Applications" (developers.google.com/identity/protocols/
  oauth2/service-account, "Preparing to make an authorized API call" over HTTP/REST):

      POST /token  Content-Type: application/x-www-form-urlencoded
           grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<RS256 JWT>
      -> {"access_token": "...", "expires_in": 3599, "token_type": "Bearer"}

  The JWT header is {"alg": "RS256", "typ": "JWT", "kid": <private_key_id>}; its claims are
  iss (the client_email), scope (space-delimited), aud (the token URI), iat and exp (at most one
  hour after iat). The signature is checked with the public key of the registered service
  account (RSASSA-PKCS1-v1_5 / SHA-256, verified here in pure Python). A refused assertion is a
  400 {"error": "invalid_grant", "error_description": "Invalid JWT Signature."} as on Google's.
* the refresh-token grant of installed-app / gcloud user credentials
  (grant_type=refresh_token, client_id, client_secret, refresh_token); a wrong secret is
  401 invalid_client, an unknown refresh token 400 invalid_grant;
* the Compute Engine metadata server ("About VM metadata", cloud.google.com/compute/docs/metadata):
  GET /computeMetadata/v1/instance/service-accounts/default/token[?scopes=a,b] and
  /computeMetadata/v1/project/project-id, both requiring `Metadata-Flavor: Google` (else 403).

Tokens are issued with `expires_in` seconds of life (short in tests, so a run sees a refresh);
`check_bearer(request, scope)` lets an API fake verify the token it receives: issued here, not
expired, granted the scope.

Off-contract, answered 400 and listed in `violations`: another content type or grant type, an
unknown or missing form field, a JWT whose header or claims do not follow the protocol. Standard
library plus the `openssl` command (key generation for tests).
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from fake_server import FakeServer, OffContract, Response

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
# DER prefix of a SHA-256 DigestInfo (RFC 8017 §9.2, note 1).
SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def rs256_verify(modulus: int, exponent: int, data: bytes, signature: bytes) -> bool:
    size = (modulus.bit_length() + 7) // 8
    if len(signature) != size:
        return False
    encoded = pow(int.from_bytes(signature, "big"), exponent, modulus).to_bytes(size, "big")
    digest = SHA256_DIGEST_INFO + hashlib.sha256(data).digest()
    return encoded == b"\x00\x01" + b"\xff" * (size - 3 - len(digest)) + b"\x00" + digest


@dataclass
class RsaKey:
    pem: str
    modulus: int
    exponent: int = 65537


_keys: list[RsaKey] = []
_keys_lock = threading.Lock()


def rsa_key(index: int = 0) -> RsaKey:
    """A 2048-bit RSA key made with `openssl genpkey`, shared by every test of the session."""
    with _keys_lock:
        while len(_keys) <= index:
            pem = subprocess.run(
                ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
                check=True, capture_output=True, text=True).stdout
            out = subprocess.run(["openssl", "rsa", "-noout", "-modulus"], input=pem, check=True,
                                 capture_output=True, text=True).stdout
            _keys.append(RsaKey(pem, int(out.strip().split("=", 1)[1], 16)))
        return _keys[index]


@dataclass
class Issued:
    scopes: set
    expires_at: float
    who: str


@dataclass
class ServiceAccount:
    email: str
    key: RsaKey
    key_id: str
    project_id: str = "acme-sheets"


@dataclass
class UserClient:
    client_id: str
    client_secret: str
    refresh_token: str


class FakeGoogleOAuth(FakeServer):
    gzip = False

    def __init__(self, expires_in: int = 3599):
        super().__init__()
        self.expires_in = expires_in
        self.accounts: dict[str, ServiceAccount] = {}
        self.users: dict[str, UserClient] = {}
        self.metadata_scopes_default = {"https://www.googleapis.com/auth/cloud-platform"}
        self.project_id = "acme-metadata"
        self.issued: dict[str, Issued] = {}
        self.assertions: list[tuple[dict, dict]] = []  # (header, claims) of accepted JWTs
        self.route("POST", "/token", self.token)
        self.route("GET", "/computeMetadata/v1/instance/service-accounts/default/token",
                   self.metadata_token)
        self.route("GET", "/computeMetadata/v1/project/project-id", self.metadata_project)

    # -- registration ------------------------------------------------------------------------

    @property
    def token_uri(self) -> str:
        return f"{self.url}/token"

    def add_service_account(self, email: str = "reader@acme-sheets.iam.gserviceaccount.com",
                            key: RsaKey | None = None, key_id: str = "kid-0f1e2d3c") -> dict:
        """Registers an account and returns its key file content (as Google's console makes)."""
        key = key or rsa_key(0)
        self.accounts[email] = ServiceAccount(email, key, key_id)
        return {
            "type": "service_account",
            "project_id": "acme-sheets",
            "private_key_id": key_id,
            "private_key": key.pem,
            "client_email": email,
            "client_id": "104882301234567890123",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": self.token_uri,
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/reader",
            "universe_domain": "googleapis.com",
        }

    def add_user(self, client_id: str = "764086051850-6qr4p6gpi6hn.apps.googleusercontent.com",
                 client_secret: str = "d-FL95Q19q7MQmFpd7hHD0Ty",
                 refresh_token: str = "1//0gfake-refresh-token-abcdef") -> dict:
        """Registers a user client and returns its authorized_user file (as gcloud writes, plus
        the optional `token_uri` that google-auth reads, pointing here)."""
        self.users[client_id] = UserClient(client_id, client_secret, refresh_token)
        return {"type": "authorized_user", "client_id": client_id,
                "client_secret": client_secret, "refresh_token": refresh_token,
                "account": "", "universe_domain": "googleapis.com", "token_uri": self.token_uri}

    # -- checks for API fakes ----------------------------------------------------------------

    def check_bearer(self, request, scope: str) -> str | None:
        """None when the request carries a live token granting `scope`, else the reason."""
        header = request.headers.get("authorization", "")
        if not header.startswith("Bearer "):
            return "no bearer token"
        issued = self.issued.get(header[len("Bearer "):])
        if issued is None:
            return "token not issued by the token endpoint"
        if time.time() >= issued.expires_at:
            return "token expired"
        if scope not in issued.scopes and "https://www.googleapis.com/auth/cloud-platform" not in issued.scopes:
            return f"token lacks scope {scope}"
        return None

    def tokens_issued(self) -> int:
        return len(self.issued)

    # -- routes ------------------------------------------------------------------------------

    def issue(self, scopes: set, who: str) -> dict:
        with self._lock:
            token = f"ya29.fake-{len(self.issued) + 1:04d}-{hashlib.sha1(who.encode()).hexdigest()[:12]}"
            self.issued[token] = Issued(scopes, time.time() + self.expires_in, who)
        return {"access_token": token, "expires_in": self.expires_in, "token_type": "Bearer"}

    def token(self, request):
        if request.path != "/token":
            raise OffContract("no such endpoint", status=404)
        if request.headers.get("content-type", "").split(";")[0] != "application/x-www-form-urlencoded":
            raise OffContract("the token endpoint takes a form body")
        if request.query:
            raise OffContract("the token endpoint takes no query parameters")
        form = {k: v[-1] for k, v in parse_qs(request.body.decode(), keep_blank_values=True).items()}
        grant = form.get("grant_type")
        if grant == JWT_BEARER:
            if set(form) != {"grant_type", "assertion"}:
                raise OffContract(f"jwt-bearer takes grant_type and assertion, got {sorted(form)}")
            return self.jwt_grant(form["assertion"])
        if grant == "refresh_token":
            allowed = {"grant_type", "client_id", "client_secret", "refresh_token", "scope"}
            if not set(form) <= allowed or not {"client_id", "client_secret", "refresh_token"} <= set(form):
                raise OffContract(f"refresh_token grant fields: {sorted(form)}")
            user = self.users.get(form["client_id"])
            if user is None or user.client_secret != form["client_secret"]:
                return Response(401, {"error": "invalid_client", "error_description": "Unauthorized"})
            if user.refresh_token != form["refresh_token"]:
                return Response(400, {"error": "invalid_grant", "error_description": "Bad Request"})
            scopes = set(form.get("scope", "").split()) or {"https://www.googleapis.com/auth/cloud-platform"}
            return self.issue(scopes, user.client_id)
        return Response(400, {"error": "unsupported_grant_type",
                              "error_description": f"Invalid grant_type: {grant}"})

    def jwt_grant(self, assertion: str):
        parts = assertion.split(".")
        if len(parts) != 3:
            raise OffContract("the assertion is not a JWS compact serialization")
        try:
            header = json.loads(b64url_decode(parts[0]))
            claims = json.loads(b64url_decode(parts[1]))
            signature = b64url_decode(parts[2])
        except ValueError as error:
            raise OffContract(f"undecodable assertion: {error}") from None
        if header.get("alg") != "RS256" or header.get("typ") != "JWT":
            raise OffContract(f"JWT header must say RS256/JWT: {header}")
        if set(claims) - {"iss", "scope", "aud", "exp", "iat", "sub"} or not {"iss", "scope", "aud", "exp", "iat"} <= set(claims):
            raise OffContract(f"JWT claims: {sorted(claims)}")
        if claims["aud"] != self.token_uri:
            raise OffContract(f"aud must be the token URI {self.token_uri}, got {claims['aud']}")
        if not isinstance(claims["scope"], str) or not claims["scope"]:
            raise OffContract("scope must be a non-empty space-delimited string")
        now = time.time()
        if not (isinstance(claims["iat"], int) and isinstance(claims["exp"], int)):
            raise OffContract("iat and exp are integers (seconds since the epoch)")
        if abs(claims["iat"] - now) > 300 or not 0 < claims["exp"] - claims["iat"] <= 3600:
            return Response(400, {"error": "invalid_grant",
                                  "error_description": "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."})
        account = self.accounts.get(claims["iss"])
        if (account is None or header.get("kid") != account.key_id or
                not rs256_verify(account.key.modulus, account.key.exponent,
                                 f"{parts[0]}.{parts[1]}".encode(), signature)):
            return Response(400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."})
        with self._lock:
            self.assertions.append((header, claims))
        return self.issue(set(claims["scope"].split(" ")), account.email)

    def _metadata_flavor(self, request):
        if request.headers.get("metadata-flavor") != "Google":
            return Response(403, "Missing required header \"Metadata-Flavor\": \"Google\"\n",
                            {"Content-Type": "text/html; charset=UTF-8"})
        return None

    def metadata_token(self, request):
        refused = self._metadata_flavor(request)
        if refused:
            return refused
        self.only_params(request, {"scopes"})
        scopes = set(request.param("scopes", "").split(",")) - {""} or self.metadata_scopes_default
        return Response(200, self.issue(scopes, "metadata"), {"Metadata-Flavor": "Google"})

    def metadata_project(self, request):
        refused = self._metadata_flavor(request)
        if refused:
            return refused
        return Response(200, self.project_id, {"Metadata-Flavor": "Google",
                                               "Content-Type": "application/text"})

    def error_response(self, error: OffContract) -> Response:
        return Response(error.status, error.body or {"error": "invalid_request",
                                                     "error_description": str(error)})
