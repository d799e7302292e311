"""The default HTTP session of a source: a requests.Session with the original's policies.

Without `source.http` (the legacy policy): retries on https:// only (total 20, backoff 1, GET and
POST, 413/429/503 with Retry-After), every 4xx/5xx raises, no timeout. With `source.http`: a
default timeout, raise_for_status as configured, and retries on the configured statuses that
honour Retry-After up to retry_after_max seconds.
"""

from typing import Optional

try:
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry
except ImportError:  # pragma: no cover
    requests = None


def _raise_for_status(response, *args, **kwargs):
    response.raise_for_status()


if requests is not None:

    class CappedRetry(Retry):
        """Retry that honours Retry-After but never sleeps longer than `retry_after_max`."""

        def __init__(self, *args, retry_after_max: Optional[float] = None, **kwargs):
            self.retry_after_max = retry_after_max
            super().__init__(*args, **kwargs)

        def new(self, **kwargs):
            kwargs.setdefault("retry_after_max", self.retry_after_max)
            return super().new(**kwargs)

        def get_retry_after(self, response):
            value = super().get_retry_after(response)
            if value is not None and self.retry_after_max is not None:
                return min(value, self.retry_after_max)
            return value

    def legacy_retry():
        return Retry(total=20, backoff_factor=1, status=30, allowed_methods=["GET", "POST"])

    class Session(requests.Session):
        def __init__(self, retry=None, timeout=None, raise_for_status: bool = True, **kwargs):
            super().__init__(**kwargs)
            self._timeout = timeout
            adapter = HTTPAdapter(max_retries=retry if retry is not None else legacy_retry(),
                                  pool_connections=64, pool_maxsize=64)
            self.mount("https://", adapter)
            if raise_for_status:
                self.hooks["response"].append(_raise_for_status)

        def request(self, method, url, **kwargs):
            if self._timeout is not None and kwargs.get("timeout") is None:
                kwargs["timeout"] = self._timeout
            return super().request(method, url, **kwargs)

        def call(self, method: str, url: str, content_type: str = "application/json", **kwargs):
            self.headers.update({"content-type": content_type})
            if method.upper() == "GET":
                return self.get(url, **kwargs)
            if method.upper() == "POST":
                return self.post(url, **kwargs)
            raise ValueError(f"Session.call supports GET and POST, got {method}")

    def session_from_http_config(http) -> "Session":
        """The default session for `source.http` (None: the legacy policy)."""
        if http is None:
            return Session()
        if hasattr(http, "model_dump"):
            http = http.model_dump()
        elif hasattr(http, "dict") and not isinstance(http, dict):
            http = http.dict()
        http = dict(http or {})
        timeout = http.get("timeout", [10, 60])
        if isinstance(timeout, list):
            timeout = tuple(timeout)
        retries = dict(http.get("retries") or {})
        retry = CappedRetry(
            total=retries.get("total", 10),
            backoff_factor=retries.get("backoff_factor", 2),
            status_forcelist=retries.get("status_forcelist", [429, 500, 502, 503, 504, 520, 522, 524]),
            allowed_methods=retries.get("allowed_methods", ["GET", "POST"]),
            respect_retry_after_header=True,
            raise_on_status=False,
            retry_after_max=retries.get("retry_after_max", 120),
        )
        return Session(retry=retry, timeout=timeout, raise_for_status=http.get("raise_for_status", True))

else:  # pragma: no cover

    class Session:
        """Stands in when requests is not installed: any use says what to install."""

        auth = None

        def __init__(self, *args, **kwargs):
            pass

        def close(self):
            pass

        def __getattr__(self, name):
            raise ImportError("the source's HTTP session needs the requests package "
                              "(bizon's build installs it from src/python/requirements.txt; "
                              "or pip install requests into your virtualenv)")

    def session_from_http_config(http):
        return Session()
