"""AbstractSource: the class a custom source extends."""

from abc import ABC, abstractmethod
from typing import Any, List, Optional, Tuple

from bizon.source.callback import AbstractSourceCallback, NoOpSourceCallback
from bizon.source.models import SourceIncrementalState, SourceIteration


def _log_warning(message):
    try:
        from loguru import logger
    except ImportError:  # pragma: no cover - loguru is bundled
        import logging

        logging.getLogger("bizon").warning(message)
        return
    logger.warning(message)


class AbstractSource(ABC):
    """Construction stores the validated config, builds the HTTP session (get_session) and
    attaches get_authenticator()'s result to it when there is one. Sources are constructed more
    than once per run, so a constructor must be free of side effects."""

    def __init__(self, config):
        self.config = config
        self.session = self.get_session()
        if getattr(config, "http", None) is not None and type(self).get_session is not AbstractSource.get_session:
            _log_warning("source.http has no effect: this source overrides get_session(); override "
                         "get_retry_policy() instead to keep the default session")
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
        """Retry policy of the default session: a CappedRetry from `source.http`, or None (the
        legacy policy) without it. Override to tune retries and keep the default session."""
        http = getattr(self.config, "http", None)
        if http is None:
            return None
        from bizon.source.session import CappedRetry

        retries = http.retries
        return CappedRetry(
            total=retries.total,
            backoff_factor=retries.backoff_factor,
            status_forcelist=retries.status_forcelist,
            allowed_methods=retries.allowed_methods,
            respect_retry_after_header=True,
            max_retry_after=retries.retry_after_max,
            # Once retries run out, raise_for_status raises an HTTPError carrying the last
            # response, not urllib3 a bare RetryError.
            raise_on_status=False,
        )

    def get_session(self):
        """A new default session (bizon.source.session.Session)."""
        from bizon.source.session import Session

        http = getattr(self.config, "http", None)
        if http is None:
            return Session(retries=self.get_retry_policy())
        return Session(retries=self.get_retry_policy(), timeout=http.timeout,
                       raise_for_status=http.raise_for_status)

    def get_source_callback_instance(self) -> AbstractSourceCallback:
        return NoOpSourceCallback(config=self.config)

    def set_streams_config(self, streams) -> None:
        """Called with the top-level `streams:` entries (bizon.common.models.StreamConfig), when
        the pipeline has them, before check_connection(). Optional."""

    def commit(self):
        pass
