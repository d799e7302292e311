"""Compat case (tests/e2e/test_compat_sources.py): every authenticator of the original's API,
built as its users build them (params= or positional params, AuthBuilder, the abstract bases
subclassed), sends one request to the test's echo server; one record per authenticator holds the
authentication headers the server saw. Run by the original 0.6.4 and by ours: same records."""

from typing import List

import pendulum
from pydantic import Field

from bizon.source.auth.authenticators.abstract_oauth import AbstractOauth2Authenticator
from bizon.source.auth.authenticators.abstract_token import AbstractHeaderAuthenticator
from bizon.source.auth.authenticators.basic import BasicHttpAuthenticator, BasicHttpAuthParams
from bizon.source.auth.authenticators.cookies import CookiesAuthenticator, CookiesAuthParams
from bizon.source.auth.authenticators.oauth import Oauth2Authenticator, Oauth2AuthParams
from bizon.source.auth.authenticators.token import TokenAuthenticator, TokenAuthParams
from bizon.source.auth.builder import AuthBuilder
from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord

from compat_base import PlainSource


class EchoConfig(SourceConfig):
    base_url: str = Field(..., description="The echo server")


class ShopHeader(AbstractHeaderAuthenticator):
    """A header authenticator of the source's own."""

    @property
    def auth_header(self) -> str:
        return "X-Shop-Key"

    @property
    def token(self) -> str:
        return "shop-42"


class StaticOauth(AbstractOauth2Authenticator):
    """An OAuth authenticator whose settings are constants."""

    def __init__(self, endpoint):
        self._endpoint = endpoint
        self._token = None
        self._expiry = pendulum.now().subtract(days=1)

    def get_token_refresh_endpoint(self):
        return self._endpoint

    def get_client_id(self):
        return "static-client"

    def get_client_secret(self):
        return "static-secret"

    def get_refresh_token(self):
        return "static-refresh"

    def get_scopes(self):
        return None

    def get_token_expiry_date(self):
        return self._expiry

    def set_token_expiry_date(self, value):
        self._expiry = pendulum.now().add(seconds=value)

    def get_access_token_name(self):
        return "access_token"

    def get_expires_in_name(self):
        return "expires_in"

    def get_refresh_request_body(self):
        return {"audience": "api", "grant_type": "ignored"}

    def get_grant_type(self):
        return "refresh_token"

    def get_response_field_path(self):
        return None

    @property
    def access_token(self):
        return self._token

    @access_token.setter
    def access_token(self, value):
        self._token = value


class AuthEchoSource(PlainSource):
    @staticmethod
    def streams() -> List[str]:
        return ["headers"]

    @staticmethod
    def get_config_class():
        return EchoConfig

    def get_authenticator(self):
        # The session's own: from the `authentication:` block, as the built-in sources do.
        if self.config.authentication is None:
            return None
        return AuthBuilder.token(params=self.config.authentication.params)

    def _authenticators(self):
        url = self.config.base_url
        oauth = Oauth2Authenticator(params=Oauth2AuthParams(
            token_refresh_endpoint=f"{url}/token-nested", client_id="client-a", client_secret="secret-a",
            refresh_token="refresh-a", scopes=["read", "write"], response_field_path="data"))
        return {
            "token_keyword": TokenAuthenticator(params=TokenAuthParams(token="abc")),
            "token_positional": TokenAuthenticator(TokenAuthParams(token="abc", auth_method="Token",
                                                                   auth_header="X-Api-Key")),
            "token_bare": TokenAuthenticator(params=TokenAuthParams(token="raw-key", auth_method="")),
            "builder_token": AuthBuilder.token(params=TokenAuthParams(token="built")),
            "basic_keyword": BasicHttpAuthenticator(params=BasicHttpAuthParams(username="user", password="pw")),
            "basic_positional": BasicHttpAuthenticator(BasicHttpAuthParams(username="u2", auth_header="X-Basic")),
            "builder_basic": AuthBuilder.basic(params=BasicHttpAuthParams(username="b", password="c")),
            "cookies_keyword": CookiesAuthenticator(params=CookiesAuthParams(
                cookies={"session": "s1", "lang": "fr"}, headers={"X-Extra": "yes"})),
            "cookies_positional": CookiesAuthenticator(CookiesAuthParams(cookies={"only": "one"})),
            "builder_cookies": AuthBuilder.cookies(params=CookiesAuthParams(cookies={"c": "d"})),
            "oauth_params": oauth,
            "builder_oauth": AuthBuilder.oauth2(params=Oauth2AuthParams(
                token_refresh_endpoint=f"{url}/token", client_id="client-b", client_secret="secret-b")),
            "abstract_header": ShopHeader(),
            "abstract_oauth": StaticOauth(f"{url}/token"),
        }

    def get(self, pagination: dict = None) -> SourceIteration:
        records = []
        session_headers = self.session.get(f"{self.config.base_url}/echo").json()
        records.append(SourceRecord(id="session_auth", data={"headers": session_headers}))
        for name, authenticator in self._authenticators().items():
            seen = self.session.get(f"{self.config.base_url}/echo", auth=authenticator).json()
            data = {"headers": seen}
            if isinstance(authenticator, AbstractOauth2Authenticator):
                data["refresh_body"] = dict(authenticator.build_refresh_request_body())
                data["expired_after_refresh"] = authenticator.token_has_expired()
            records.append(SourceRecord(id=name, data=data))
        # A bare token string is not a params object: refused (by the original with an
        # AttributeError, by ours with a TypeError), never sent as a header.
        for name, build in (("token_from_string", lambda: TokenAuthenticator("abc")),
                            ("basic_from_string", lambda: BasicHttpAuthenticator("user:pw"))):
            try:
                header = build().get_auth_header()
            except (TypeError, AttributeError):
                header = None
            records.append(SourceRecord(id=name, data={"header": header}))
        return SourceIteration(next_pagination={}, records=records)
