"""Token authentication (`api_key`, `bearer`): one header carrying "<auth_method> <token>"."""

from bizon._model import BaseModel, Field
from bizon.source.auth.authenticators._base import params_of
from bizon.source.auth.authenticators.abstract_token import AbstractHeaderAuthenticator


class TokenAuthParams(BaseModel):
    token: str = Field(..., description="The token or API key")
    auth_method: str = Field("Bearer", description="Prefix before the token; empty sends it bare")
    auth_header: str = Field("Authorization", description="Header that carries the token")


class TokenAuthenticator(AbstractHeaderAuthenticator):
    def __init__(self, params: TokenAuthParams):
        params = params_of(TokenAuthParams, params, "TokenAuthenticator", ("token", "auth_method", "auth_header"))
        self._auth_header = params.auth_header
        self._auth_method = params.auth_method
        self._token = params.token

    @property
    def auth_header(self) -> str:
        return self._auth_header

    @property
    def token(self) -> str:
        return f"{self._auth_method} {self._token}" if self._auth_method else self._token
