"""AbstractOauth2Authenticator: the OAuth 2 refresh-token flow, with every setting read through a
getter that subclasses implement (Oauth2Authenticator reads them from Oauth2AuthParams)."""

import time
from abc import abstractmethod
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, List, Tuple, Union

from bizon.source.auth.authenticators._base import AuthBase

# The refresh request is retried on 429 and 5xx, with doubling waits, for at most this long.
_REFRESH_RETRY_SECONDS = 300


def now():
    """The current time, timezone-aware: a pendulum DateTime when pendulum is importable (the
    type the original's getters return), else a datetime in UTC."""
    try:
        import pendulum
    except ImportError:  # pragma: no cover - pendulum is bundled
        return datetime.now(timezone.utc)
    return pendulum.now()


def _path_get(document, path):
    """dpath.get(document, path) (one match, "/"-separated), without dpath if it is missing."""
    try:
        import dpath
    except ImportError:  # pragma: no cover - dpath is bundled
        for part in str(path).strip("/").split("/"):
            document = document[int(part)] if isinstance(document, list) else document[part]
        return document
    return dpath.get(document, path)


class AbstractOauth2Authenticator(AuthBase):
    """Sends "Authorization: Bearer <access token>", refreshing the token first when it has
    expired (or will within get_expiry_skew_seconds())."""

    def __call__(self, request):
        request.headers.update(self.get_auth_header())
        return request

    def get_auth_header(self) -> Mapping[str, Any]:
        return {"Authorization": f"Bearer {self.get_access_token()}"}

    def get_access_token(self) -> str:
        if self.token_has_expired():
            token, expires_in = self.refresh_access_token()
            self.access_token = token
            self.set_token_expiry_date(expires_in)
        return self.access_token

    def token_has_expired(self) -> bool:
        return now() + timedelta(seconds=self.get_expiry_skew_seconds()) > self.get_token_expiry_date()

    def get_expiry_skew_seconds(self) -> float:
        """How long before its expiry a token counts as expired (0 here; override)."""
        return 0

    def build_refresh_request_body(self) -> Mapping[str, Any]:
        """The form fields of the refresh request; get_refresh_request_body() adds fields but
        never replaces the OAuth ones."""
        body = {
            "grant_type": self.get_grant_type(),
            "client_id": self.get_client_id(),
            "client_secret": self.get_client_secret(),
            "refresh_token": self.get_refresh_token(),
        }
        scopes = self.get_scopes()
        if scopes:
            body["scope"] = ",".join(scopes)
        for key, value in (self.get_refresh_request_body() or {}).items():
            body.setdefault(key, value)
        return body

    def _get_refresh_access_token_response(self):
        """The JSON of the token endpoint's answer; a 429 or 5xx is retried (doubling waits from
        1 s, for at most 300 s), then raised as DefaultBackoffException; another error raises."""
        import requests

        from bizon.common.errors.backoff import DefaultBackoffException

        deadline = time.monotonic() + _REFRESH_RETRY_SECONDS
        wait = 1.0
        while True:
            response = requests.request(method="POST", url=self.get_token_refresh_endpoint(),
                                        data=self.build_refresh_request_body())
            if response.status_code != 429 and response.status_code < 500:
                response.raise_for_status()
                return response.json()
            if time.monotonic() + wait > deadline:
                raise DefaultBackoffException(request=response.request, response=response)
            time.sleep(wait)
            wait *= 2

    def refresh_access_token(self) -> Tuple[str, int]:
        """(access token, lifetime in seconds) from the token endpoint."""
        answer = self._get_refresh_access_token_response()
        path = self.get_response_field_path()
        if path:
            answer = _path_get(answer, path)
        return answer[self.get_access_token_name()], int(answer[self.get_expires_in_name()])

    @abstractmethod
    def get_token_refresh_endpoint(self) -> str:
        """URL of the token endpoint."""

    @abstractmethod
    def get_client_id(self) -> str:
        """OAuth client id."""

    @abstractmethod
    def get_client_secret(self) -> str:
        """OAuth client secret."""

    @abstractmethod
    def get_refresh_token(self) -> str:
        """The refresh token sent to the endpoint."""

    @abstractmethod
    def get_scopes(self) -> List[str]:
        """Scopes asked for (sent comma-separated), or None."""

    @abstractmethod
    def get_token_expiry_date(self) -> datetime:
        """When the current access token expires (timezone-aware)."""

    @abstractmethod
    def set_token_expiry_date(self, value: Union[str, int]):
        """Records the expiry from the endpoint's answer."""

    @abstractmethod
    def get_access_token_name(self) -> str:
        """Field of the access token in the answer."""

    @abstractmethod
    def get_expires_in_name(self) -> str:
        """Field of the token's lifetime in the answer."""

    @abstractmethod
    def get_refresh_request_body(self) -> Mapping[str, Any]:
        """Extra form fields of the refresh request, or None."""

    @abstractmethod
    def get_grant_type(self) -> str:
        """grant_type sent to the endpoint."""

    @abstractmethod
    def get_response_field_path(self) -> str:
        """dpath path of the token object in the answer, or None for the top level."""

    @property
    @abstractmethod
    def access_token(self) -> str:
        """The current access token."""

    @access_token.setter
    @abstractmethod
    def access_token(self, value: str):
        """Stores a new access token."""
