"""Compat case (tests/e2e/test_compat_sources.py): the HTTP session policy. `source.http` read as
a model (config.http.timeout, .retries), the default session's CappedRetry honouring a capped
Retry-After, raise_for_status off and on, and Session(retries=...) / CappedRetry(max_retry_after=...)
built by hand. The echo server counts the attempts of each /flaky key. Same records from the
original 0.6.4 and from ours."""

from typing import List

from pydantic import Field
from requests.adapters import HTTPAdapter
from requests.exceptions import HTTPError

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord
from bizon.source.session import CappedRetry, Session, legacy_retry_policy

from compat_base import PlainSource


class PolicyConfig(SourceConfig):
    base_url: str = Field(..., description="The echo server")
    run_id: str = Field(..., description="Keeps each run's /flaky counters apart")


def _retry_facts(retry):
    return {"class": type(retry).__name__, "total": retry.total, "backoff_factor": retry.backoff_factor,
            "status_forcelist": sorted(retry.status_forcelist or []),
            "max_retry_after": getattr(retry, "max_retry_after", "absent")}


class SessionPolicySource(PlainSource):
    @staticmethod
    def streams() -> List[str]:
        return ["policy"]

    @staticmethod
    def get_config_class():
        return PolicyConfig

    def _call(self, session, path):
        try:
            response = session.get(f"{self.config.base_url}{path}")
        except HTTPError as error:
            return {"raised": type(error).__name__, "status": error.response.status_code,
                    "body": error.response.json()}
        return {"raised": None, "status": response.status_code, "body": response.json()}

    def _flaky(self, session, key, fail, retry_after):
        return self._call(session, f"/flaky/{self.config.run_id}-{key}?fail={fail}&retry_after={retry_after}")

    def get(self, pagination: dict = None) -> SourceIteration:
        http = self.config.http
        records = [SourceRecord(id="http_config", data={
            "timeout": list(http.timeout) if isinstance(http.timeout, tuple) else http.timeout,
            "total": http.retries.total, "backoff_factor": http.retries.backoff_factor,
            "status_forcelist": http.retries.status_forcelist, "allowed_methods": http.retries.allowed_methods,
            "retry_after_max": http.retries.retry_after_max, "raise_for_status": http.raise_for_status})]

        # The default session, built from source.http: its https adapter's policy, mounted on
        # http:// too so that the local server exercises it.
        policy = self.session.get_adapter("https://example.com").max_retries
        self.session.mount("http://", HTTPAdapter(max_retries=policy))
        records.append(SourceRecord(id="default_session", data={
            "timeout": self.session.timeout, "retry": _retry_facts(policy),
            "retried": self._flaky(self.session, "default", fail=2, retry_after=100),
            "missing": self._call(self.session, "/missing")}))

        # By hand: the original's keywords; raise_for_status defaults to on.
        by_hand = Session(retries=CappedRetry(total=1, backoff_factor=0, status_forcelist=[503],
                                              max_retry_after=0.01, raise_on_status=False), timeout=(3, 9))
        by_hand.mount("http://", HTTPAdapter(max_retries=by_hand.get_adapter("https://example.com").max_retries))
        records.append(SourceRecord(id="by_hand", data={
            "timeout": list(by_hand.timeout), "retry": _retry_facts(by_hand.get_adapter("https://x").max_retries),
            "exhausted": self._flaky(by_hand, "by-hand", fail=5, retry_after=100)}))

        legacy = Session()
        records.append(SourceRecord(id="legacy", data={
            "timeout": legacy.timeout, "retry": _retry_facts(legacy.get_adapter("https://x").max_retries),
            "policy": _retry_facts(legacy_retry_policy()),
            "hooks": len(legacy.hooks["response"]), "missing": self._call(legacy, "/missing")}))
        return SourceIteration(next_pagination={}, records=records)
