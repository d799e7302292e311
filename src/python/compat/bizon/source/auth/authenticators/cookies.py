"""Cookie authentication: a Cookie header built from a map, plus optional extra headers."""

from typing import Dict

from bizon._model import BaseModel, Field
from bizon.source.auth.authenticators._base import AuthBase


class CookiesAuthParams(BaseModel):
    cookies: Dict[str, str] = Field(..., description="Cookie name to value")
    headers: Dict[str, str] = Field(default_factory=dict, description="Extra request headers")


class CookiesAuthenticator(AuthBase):
    def __init__(self, cookies: Dict[str, str], headers: Dict[str, str] = None):
        self._cookies = dict(cookies)
        self._headers = dict(headers or {})

    def __call__(self, request):
        request.headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in self._cookies.items())
        request.headers.update(self._headers)
        return request
