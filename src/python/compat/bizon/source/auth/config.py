"""The `authentication: {type, params}` block of a source."""

from enum import Enum
from typing import Union

from bizon._model import BaseModel, Field
from bizon.source.auth.authenticators.basic import BasicHttpAuthParams
from bizon.source.auth.authenticators.cookies import CookiesAuthParams
from bizon.source.auth.authenticators.oauth import Oauth2AuthParams
from bizon.source.auth.authenticators.token import TokenAuthParams


class AuthType(str, Enum):
    OAUTH = "oauth"
    API_KEY = "api_key"
    BEARER = "bearer"
    BASIC = "basic"
    COOKIES = "cookies"


class AuthConfig(BaseModel):
    type: AuthType = Field(..., description="Type of authentication")
    # Matched by shape, first match wins: the params' required keys decide.
    params: Union[Oauth2AuthParams, BasicHttpAuthParams, TokenAuthParams, CookiesAuthParams] = Field(
        ..., description="Parameters of the authentication type"
    )
