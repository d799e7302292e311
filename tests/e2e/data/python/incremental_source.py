"""An incremental custom source in the original's documented style: get() reads every event,
get_records_after() only those updated after source_state.last_run (client-side filter on the
cursor field, the documented fallback), bounded by run_started_at, one page of two per call."""

from datetime import datetime, timezone
from typing import List, Tuple

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIncrementalState, SourceIteration, SourceRecord
from bizon.source.source import AbstractSource

EVENTS = [
    {"id": "e1", "kind": "signup", "updated_at": "2024-01-01T10:00:00+00:00"},
    {"id": "e2", "kind": "login", "updated_at": "2024-02-01T10:00:00+00:00"},
    {"id": "e3", "kind": "purchase", "updated_at": "2024-03-01T10:00:00+00:00"},
    {"id": "e4", "kind": "logout", "updated_at": "2024-04-01T10:00:00+00:00"},
    {"id": "e5", "kind": "refund", "updated_at": "2024-05-01T10:00:00+00:00"},
]
PAGE = 2


class IncrementalSourceConfig(SourceConfig):
    pass


class IncrementalSource(AbstractSource):
    def __init__(self, config: IncrementalSourceConfig):
        super().__init__(config)
        self.config: IncrementalSourceConfig = config

    @staticmethod
    def streams() -> List[str]:
        return ["events"]

    @staticmethod
    def get_config_class():
        return IncrementalSourceConfig

    def get_authenticator(self):
        return None

    def check_connection(self) -> Tuple[bool, str]:
        return True, None

    def get_total_records_count(self):
        return None

    def _page(self, events, pagination, next_state=None):
        start = (pagination or {}).get("start", 0)
        page = events[start : start + PAGE]
        done = start + PAGE >= len(events)
        return SourceIteration(
            next_pagination={} if done else {"start": start + PAGE},
            records=[
                SourceRecord(
                    id=event["id"],
                    data=event,
                    timestamp=datetime.fromisoformat(event["updated_at"]),
                )
                for event in page
            ],
            next_state=next_state if done else None,
        )

    def get(self, pagination: dict = None) -> SourceIteration:
        return self._page(EVENTS, pagination, next_state={"seen": len(EVENTS)})

    def get_records_after(self, source_state: SourceIncrementalState, pagination: dict = None) -> SourceIteration:
        assert source_state.last_run.tzinfo is not None, "last_run must be timezone-aware"
        field = source_state.cursor_field or "updated_at"
        upper = source_state.run_started_at or datetime.now(timezone.utc)
        newer = [
            event
            for event in EVENTS
            if source_state.last_run < datetime.fromisoformat(event[field]) <= upper
        ]
        return self._page(newer, pagination, next_state={"seen": len(newer), "previous": source_state.state})
