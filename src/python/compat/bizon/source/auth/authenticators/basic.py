"""HTTP basic authentication: "<auth_method> base64(username:password)"."""

import base64

from bizon._model import BaseModel, Field
from bizon.source.auth.authenticators._base import AuthBase


class BasicHttpAuthParams(BaseModel):
    username: str = Field(..., description="User name")
    password: str = Field("", description="Password")
    auth_method: str = Field("Basic", description="Scheme written before the credentials")
    auth_header: str = Field("Authorization", description="Header that carries the credentials")


class BasicHttpAuthenticator(AuthBase):
    def __init__(self, username: str, password: str = "", auth_method: str = "Basic",
                 auth_header: str = "Authorization"):
        credentials = base64.b64encode(f"{username}:{password}".encode("utf-8")).decode("ascii")
        self._header = auth_header
        self._value = f"{auth_method} {credentials}"

    def get_auth_header(self) -> dict:
        return {self._header: self._value}

    def __call__(self, request):
        request.headers.update(self.get_auth_header())
        return request
