"""HTTP basic authentication (RFC 7617): "<auth_method> base64(username:password)"."""

import base64

from bizon._model import BaseModel, Field
from bizon.source.auth.authenticators._base import params_of
from bizon.source.auth.authenticators.abstract_token import AbstractHeaderAuthenticator


class BasicHttpAuthParams(BaseModel):
    username: str = Field(..., description="User name")
    password: str = Field("", description="Password")
    auth_method: str = Field("Basic", description="Scheme written before the credentials")
    auth_header: str = Field("Authorization", description="Header that carries the credentials")


class BasicHttpAuthenticator(AbstractHeaderAuthenticator):
    def __init__(self, params: BasicHttpAuthParams):
        params = params_of(BasicHttpAuthParams, params, "BasicHttpAuthenticator",
                           ("username", "password", "auth_method", "auth_header"))
        self._auth_header = params.auth_header
        self._auth_method = params.auth_method
        self._token = base64.b64encode(f"{params.username}:{params.password}".encode()).decode("utf-8")

    @property
    def auth_header(self) -> str:
        return self._auth_header

    @property
    def token(self) -> str:
        return f"{self._auth_method} {self._token}"
