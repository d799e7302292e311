"""AuthBuilder: authenticators from their params models (or plain dicts)."""

from bizon.source.auth.authenticators.basic import BasicHttpAuthenticator, BasicHttpAuthParams
from bizon.source.auth.authenticators.cookies import CookiesAuthenticator, CookiesAuthParams
from bizon.source.auth.authenticators.oauth import Oauth2Authenticator, Oauth2AuthParams
from bizon.source.auth.authenticators.token import TokenAuthenticator, TokenAuthParams


def _as(model, params):
    return params if isinstance(params, model) else model(**dict(params))


class AuthBuilder:
    @staticmethod
    def oauth2(params) -> Oauth2Authenticator:
        return Oauth2Authenticator(_as(Oauth2AuthParams, params))

    @staticmethod
    def token(params) -> TokenAuthenticator:
        params = _as(TokenAuthParams, params)
        return TokenAuthenticator(params.token, params.auth_method, params.auth_header)

    @staticmethod
    def basic(params) -> BasicHttpAuthenticator:
        params = _as(BasicHttpAuthParams, params)
        return BasicHttpAuthenticator(params.username, params.password, params.auth_method, params.auth_header)

    @staticmethod
    def cookies(params) -> CookiesAuthenticator:
        params = _as(CookiesAuthParams, params)
        return CookiesAuthenticator(params.cookies, params.headers)
