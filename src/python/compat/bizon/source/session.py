"""The HTTP session a source gets from AbstractSource.get_session(): a requests.Session with
bizon's policies, the original's constructor (`retries`, `timeout`, `raise_for_status`).

The legacy policy (no `source.http`): retries on https:// only (total 20, backoff 1, GET and POST,
413/429/503 when they carry a Retry-After), every 4xx/5xx raises, no timeout. With `source.http`,
AbstractSource.get_retry_policy() builds a CappedRetry from it and the session gets its timeout
and raise_for_status.
"""

from typing import Optional, Tuple, Union

try:
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry
except ImportError:  # pragma: no cover - requests is bundled with the binary
    requests = None


def raise_for_status_hook(response, *args, **kwargs):
    """Response hook: a 4xx/5xx raises requests.HTTPError (a module-level function, so a session
    carrying it can be pickled)."""
    response.raise_for_status()


if requests is not None:

    class CappedRetry(Retry):
        """A Retry that honours Retry-After but never waits longer than `max_retry_after` seconds
        (None: as long as the server asks)."""

        def __init__(self, *args, max_retry_after: Optional[float] = None, **kwargs):
            super().__init__(*args, **kwargs)
            self.max_retry_after = max_retry_after

        def new(self, **kwargs):
            # urllib3 builds a fresh Retry after each attempt from the arguments it knows.
            renewed = super().new(**kwargs)
            renewed.max_retry_after = self.max_retry_after
            return renewed

        def get_retry_after(self, response):
            wait = super().get_retry_after(response)
            if wait is not None and self.max_retry_after is not None:
                return min(wait, self.max_retry_after)
            return wait

    def legacy_retry_policy() -> Retry:
        """The policy of a source without `source.http`: without a status list, urllib3 retries
        only 413, 429 and 503, and only when they carry a Retry-After."""
        return Retry(total=20, backoff_factor=1, raise_on_status=True, status=30,
                     allowed_methods=["GET", "POST"])

    class Session(requests.Session):
        """requests.Session with a retrying adapter on https://, an optional default timeout and
        (by default) a hook that raises on 4xx/5xx."""

        # requests pickles only the attributes it lists; the timeout travels too.
        __attrs__ = requests.Session.__attrs__ + ["timeout"]

        def __init__(self, retries: Optional[Retry] = None,
                     timeout: Optional[Union[float, Tuple[float, float]]] = None,
                     raise_for_status: bool = True):
            super().__init__()
            self.timeout = tuple(timeout) if isinstance(timeout, list) else timeout
            if raise_for_status:
                self.hooks["response"] = [raise_for_status_hook]
            self.mount("https://", HTTPAdapter(max_retries=retries or legacy_retry_policy(), pool_maxsize=64))
            self._method_mapping = {"GET": self.get, "POST": self.post}

        def request(self, method, url, *args, **kwargs):
            if self.timeout is not None:
                kwargs.setdefault("timeout", self.timeout)
            return super().request(method, url, *args, **kwargs)

        def call(self, method: str, url: str, content_type: str = "application/json", *args, **kwargs):
            """GET or POST `url` with the given content type (anything else: KeyError, as the
            original)."""
            self.headers.update({"content-type": content_type})
            return self._method_mapping[method](url, *args, **kwargs)

else:  # pragma: no cover

    _MISSING = ("the source's HTTP session needs the requests package, which bizon's build bundles "
                "(src/python/requirements.txt); it was not found")

    class Session:
        """Stands in when requests is missing, so that a source making no HTTP call still
        constructs; any use says what is missing."""

        auth = None

        def __init__(self, *args, **kwargs):
            pass

        def close(self):
            pass

        def __getattr__(self, name):
            raise ImportError(_MISSING)

    class CappedRetry:
        def __init__(self, *args, **kwargs):
            raise ImportError(_MISSING)

    def legacy_retry_policy():
        raise ImportError(_MISSING)
