"""AbstractSource: the class a custom source extends."""

from abc import ABC, abstractmethod
from typing import Any, List, Optional, Tuple

from bizon.source.callback import AbstractSourceCallback, NoOpSourceCallback
from bizon.source.models import SourceIncrementalState, SourceIteration


class AbstractSource(ABC):
    """Construction stores the validated config, builds the HTTP session (get_session) and
    attaches get_authenticator()'s result to it when there is one. Sources are constructed more
    than once per run, so a constructor must be free of side effects."""

    def __init__(self, config):
        self.config = config
        self.session = self.get_session()
        authenticator = self.get_authenticator()
        if authenticator:
            self.session.auth = authenticator

    @staticmethod
    @abstractmethod
    def streams() -> List[str]:
        """The stream names this class serves."""

    @staticmethod
    @abstractmethod
    def get_config_class():
        """The SourceConfig subclass the raw `source:` mapping is validated with."""

    @abstractmethod
    def get_authenticator(self):
        """A requests authenticator, or None for public APIs."""

    @abstractmethod
    def check_connection(self) -> Tuple[bool, Optional[Any]]:
        """(True, None) when the source is reachable, else (False, error text)."""

    @abstractmethod
    def get_total_records_count(self) -> Optional[int]:
        """Total records of the stream when known (progress only), else None."""

    @abstractmethod
    def get(self, pagination: dict = None) -> SourceIteration:
        """The page after `pagination` ({} or None: the first page)."""

    def get_records_after(self, source_state: SourceIncrementalState, pagination: dict = None) -> SourceIteration:
        """Incremental fetch: records changed since source_state.last_run. Not implemented by
        default: a source that does not override it cannot run with sync_mode incremental."""
        pass

    def get_retry_policy(self):
        """Retry policy of the default session; None keeps the policy `source.http` selects."""
        return None

    def get_session(self):
        from bizon.source.session import Session, session_from_http_config

        retry = self.get_retry_policy()
        if retry is not None:
            return Session(retry=retry)
        return session_from_http_config(getattr(self.config, "http", None))

    def get_source_callback_instance(self) -> AbstractSourceCallback:
        return NoOpSourceCallback(config=self.config)

    def set_streams_config(self, streams) -> None:
        pass

    def commit(self):
        pass
