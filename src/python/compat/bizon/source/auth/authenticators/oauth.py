"""OAuth2 refresh-token authentication: fetches an access token and refreshes it before expiry."""

import time
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, List, Optional

from bizon._model import BaseModel, Field
from bizon.source.auth.authenticators._base import AuthBase


class Oauth2AuthParams(BaseModel):
    token_refresh_endpoint: str = Field(..., description="URL of the token endpoint")
    client_id: str = Field(..., description="OAuth client id")
    client_secret: str = Field(..., description="OAuth client secret")
    refresh_token: Optional[str] = Field(None, description="Refresh token")
    scopes: Optional[List[str]] = Field(None, description="Scopes, sent comma-separated")
    token_expiry_date: Optional[str] = Field(None, description="Expiry of a known access token (ISO 8601)")
    token_expiry_date_format: Optional[str] = Field(None, description="strptime format of expires_in")
    access_token_name: str = Field("access_token", description="Field of the access token in the response")
    expires_in_name: str = Field("expires_in", description="Field of the lifetime in the response")
    refresh_request_body: Optional[Dict[str, Any]] = Field(None, description="Extra body fields")
    grant_type: str = Field("refresh_token", description="grant_type sent to the endpoint")
    response_field_path: Optional[str] = Field(None, description="Path of the token object in the response")
    expiry_skew_seconds: Optional[float] = Field(None, description="Refresh this early (default min(10% of lifetime, 60 s))")


class Oauth2Authenticator(AuthBase):
    _RETRY_BUDGET_SECONDS = 300

    def __init__(self, params: Oauth2AuthParams):
        self.params = params
        self._access_token: Optional[str] = None
        self._expires_at = datetime.now(timezone.utc) - timedelta(days=1)
        self._skew = timedelta(0)
        if params.token_expiry_date:
            expiry = datetime.fromisoformat(params.token_expiry_date.replace("Z", "+00:00"))
            self._expires_at = expiry if expiry.tzinfo else expiry.replace(tzinfo=timezone.utc)

    def build_refresh_request_body(self) -> Dict[str, Any]:
        body = {
            "grant_type": self.params.grant_type,
            "client_id": self.params.client_id,
            "client_secret": self.params.client_secret,
            "refresh_token": self.params.refresh_token,
        }
        if self.params.scopes:
            body["scope"] = ",".join(self.params.scopes)
        for key, value in (self.params.refresh_request_body or {}).items():
            body.setdefault(key, value)
        return {key: value for key, value in body.items() if value is not None}

    def token_has_expired(self) -> bool:
        return datetime.now(timezone.utc) > self._expires_at - self._skew

    def refresh_access_token(self):
        import requests

        deadline = time.monotonic() + self._RETRY_BUDGET_SECONDS
        delay = 1.0
        while True:
            response = requests.post(self.params.token_refresh_endpoint, data=self.build_refresh_request_body())
            retryable = response.status_code == 429 or response.status_code >= 500
            if not retryable or time.monotonic() + delay > deadline:
                response.raise_for_status()
                break
            time.sleep(delay)
            delay *= 2
        payload = response.json()
        if self.params.response_field_path:
            for part in self.params.response_field_path.split("/"):
                payload = payload[part]
        token = payload[self.params.access_token_name]
        expires_in = payload[self.params.expires_in_name]
        now = datetime.now(timezone.utc)
        if self.params.token_expiry_date_format:
            expiry = datetime.strptime(str(expires_in), self.params.token_expiry_date_format)
            self._expires_at = expiry if expiry.tzinfo else expiry.replace(tzinfo=timezone.utc)
            lifetime = self._expires_at - now
        else:
            lifetime = timedelta(seconds=int(expires_in))
            self._expires_at = now + lifetime
        if self.params.expiry_skew_seconds is not None:
            self._skew = timedelta(seconds=self.params.expiry_skew_seconds)
        else:
            self._skew = min(lifetime * 0.1, timedelta(seconds=60))
        return token, expires_in

    def get_access_token(self) -> str:
        if self._access_token is None or self.token_has_expired():
            self._access_token, _ = self.refresh_access_token()
        return self._access_token

    def get_auth_header(self) -> dict:
        return {"Authorization": f"Bearer {self.get_access_token()}"}

    def __call__(self, request):
        request.headers.update(self.get_auth_header())
        return request
