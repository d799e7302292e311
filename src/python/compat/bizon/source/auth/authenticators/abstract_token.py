"""AbstractHeaderAuthenticator: an authenticator that sets one header on every request."""

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

from bizon.source.auth.authenticators._base import AuthBase


class AbstractHeaderAuthenticator(AuthBase):
    """Subclasses name the header (`auth_header`) and its value (`token`); an empty header name
    sets nothing."""

    def __call__(self, request):
        request.headers.update(self.get_auth_header())
        return request

    def get_auth_header(self) -> Mapping[str, Any]:
        header = self.auth_header
        return {header: self.token} if header else {}

    @property
    @abstractmethod
    def auth_header(self) -> str:
        """Name of the header."""

    @property
    @abstractmethod
    def token(self) -> str:
        """Value of the header."""
