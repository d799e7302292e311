"""OAuth 2 refresh-token authentication configured by Oauth2AuthParams."""

from datetime import datetime, timedelta
from typing import Any, Dict, List, Optional, Union

from bizon._model import BaseModel, Field
from bizon.source.auth.authenticators._base import params_of
from bizon.source.auth.authenticators.abstract_oauth import AbstractOauth2Authenticator, now

try:  # The original's field type: a pendulum DateTime, parsed from ISO 8601 text.
    from pydantic_extra_types.pendulum_dt import DateTime as _ExpiryDate
except Exception:  # pragma: no cover - bundled, but needs pydantic 2 (a virtualenv may bring 1)
    _ExpiryDate = datetime


class Oauth2AuthParams(BaseModel):
    token_refresh_endpoint: str = Field(..., description="URL of the token endpoint")
    client_id: str = Field(..., description="OAuth client id")
    client_secret: str = Field(..., description="OAuth client secret")
    refresh_token: Optional[str] = Field(None, description="Refresh token")
    scopes: Optional[List[str]] = Field(None, description="Scopes, sent comma-separated")
    token_expiry_date: Optional[_ExpiryDate] = Field(None, description="Expiry of a known access token")
    token_expiry_date_format: Optional[str] = Field(None, description="Format of a date-valued expires_in")
    access_token_name: str = Field("access_token", description="Field of the access token in the answer")
    expires_in_name: str = Field("expires_in", description="Field of the lifetime in the answer")
    refresh_request_body: Optional[Dict[str, Any]] = Field(None, description="Extra form fields")
    grant_type: str = Field("refresh_token", description="grant_type sent to the endpoint")
    response_field_path: Optional[str] = Field(None, description="dpath path of the token object in the answer")
    expiry_skew_seconds: Optional[float] = Field(
        None, description="Refresh this early (default: 10 % of the token's lifetime, at most 60 s)")


_PARAMS = ("token_refresh_endpoint", "client_id", "client_secret", "refresh_token", "scopes",
           "token_expiry_date", "token_expiry_date_format", "access_token_name", "expires_in_name",
           "refresh_request_body", "grant_type", "response_field_path")


class Oauth2Authenticator(AbstractOauth2Authenticator):
    """Refreshes an access token from a refresh token and client credentials, and sends it as a
    bearer token."""

    def __init__(self, params: Oauth2AuthParams):
        params = params_of(Oauth2AuthParams, params, "Oauth2Authenticator", _PARAMS)
        self._token_refresh_endpoint = params.token_refresh_endpoint
        self._client_id = params.client_id
        self._client_secret = params.client_secret
        self._refresh_token = params.refresh_token
        self._scopes = params.scopes
        self._access_token_name = params.access_token_name
        self._expires_in_name = params.expires_in_name
        self._refresh_request_body = params.refresh_request_body
        self._grant_type = params.grant_type
        self._response_field_path = params.response_field_path
        self._token_expiry_date = params.token_expiry_date or now() - timedelta(days=1)
        self._token_expiry_date_format = params.token_expiry_date_format
        self._expiry_skew_seconds = getattr(params, "expiry_skew_seconds", None)
        self._token_lifetime_seconds: Optional[float] = None
        self._access_token = None

    def get_token_refresh_endpoint(self) -> str:
        return self._token_refresh_endpoint

    def get_client_id(self) -> str:
        return self._client_id

    def get_client_secret(self) -> str:
        return self._client_secret

    def get_refresh_token(self) -> str:
        return self._refresh_token

    def get_scopes(self) -> List[str]:
        return self._scopes

    def get_access_token_name(self) -> str:
        return self._access_token_name

    def get_expires_in_name(self) -> str:
        return self._expires_in_name

    def get_refresh_request_body(self):
        return self._refresh_request_body

    def get_grant_type(self) -> str:
        return self._grant_type

    def get_response_field_path(self) -> str:
        return self._response_field_path

    def get_token_expiry_date(self):
        return self._token_expiry_date

    def set_token_expiry_date(self, value: Union[str, int]):
        start = now()
        if self._token_expiry_date_format:
            import pendulum

            self._token_expiry_date = pendulum.from_format(value, self._token_expiry_date_format)
        else:
            self._token_expiry_date = start + timedelta(seconds=value)
        self._token_lifetime_seconds = (self._token_expiry_date - start).total_seconds()

    def get_expiry_skew_seconds(self) -> float:
        if self._expiry_skew_seconds is not None:
            return self._expiry_skew_seconds
        if self._token_lifetime_seconds is not None:
            # A tenth of the lifetime, so a short-lived token is not refreshed before each request.
            return max(0.0, min(60.0, 0.1 * self._token_lifetime_seconds))
        return 60.0

    @property
    def access_token(self) -> str:
        return self._access_token

    @access_token.setter
    def access_token(self, value: str):
        self._access_token = value
