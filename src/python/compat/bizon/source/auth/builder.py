"""AuthBuilder: an authenticator from its params model (or a mapping of the same keys)."""

from bizon.source.auth.authenticators.basic import BasicHttpAuthenticator
from bizon.source.auth.authenticators.cookies import CookiesAuthenticator
from bizon.source.auth.authenticators.oauth import Oauth2Authenticator
from bizon.source.auth.authenticators.token import TokenAuthenticator


class AuthBuilder:
    @staticmethod
    def oauth2(params) -> Oauth2Authenticator:
        return Oauth2Authenticator(params=params)

    @staticmethod
    def basic(params) -> BasicHttpAuthenticator:
        return BasicHttpAuthenticator(params=params)

    @staticmethod
    def token(params) -> TokenAuthenticator:
        return TokenAuthenticator(params=params)

    @staticmethod
    def cookies(params) -> CookiesAuthenticator:
        return CookiesAuthenticator(params=params)
