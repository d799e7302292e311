"""Cookie authentication: the Cookie header from a map, plus optional extra headers."""

from collections.abc import Mapping
from typing import Any, Optional

from bizon._model import BaseModel, Field
from bizon.source.auth.authenticators._base import AuthBase, params_of


class CookiesAuthParams(BaseModel):
    cookies: Mapping[str, str] = Field(..., description="Cookie name to value")
    headers: Optional[Mapping[str, Any]] = Field({}, description="Extra request headers")


class CookiesAuthenticator(AuthBase):
    def __init__(self, params: CookiesAuthParams):
        super().__init__()
        params = params_of(CookiesAuthParams, params, "CookiesAuthenticator", ("cookies", "headers"))
        self.cookies = params.cookies
        self.headers = params.headers

    def __call__(self, request):
        # requests' own Cookie header (kept when the request already has one).
        request.prepare_cookies(dict(self.cookies))
        if self.headers:
            request.headers.update(self.headers)
        return request
