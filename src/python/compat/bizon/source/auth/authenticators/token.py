"""Token authentication (`api_key`, `bearer`): one header carrying "<auth_method> <token>"."""

from bizon._model import BaseModel, Field
from bizon.source.auth.authenticators._base import AuthBase


class TokenAuthParams(BaseModel):
    token: str = Field(..., description="The token or API key")
    auth_method: str = Field("Bearer", description="Prefix before the token; empty sends it bare")
    auth_header: str = Field("Authorization", description="Header that carries the token")


class TokenAuthenticator(AuthBase):
    def __init__(self, token: str, auth_method: str = "Bearer", auth_header: str = "Authorization"):
        self._token = token
        self._auth_method = auth_method
        self._auth_header = auth_header

    @property
    def token(self) -> str:
        return f"{self._auth_method} {self._token}" if self._auth_method else self._token

    def get_auth_header(self) -> dict:
        return {self._auth_header: self.token}

    def __call__(self, request):
        request.headers.update(self.get_auth_header())
        return request
