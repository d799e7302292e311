"""Compat case (tests/e2e/test_compat_sources.py): a source that extends a built-in connector of
the original, its dummy source, keeping its config class, authentication and pagination and
tagging each record. The original runs it as is; ours needs the original installed in
engine.runner.config.python_env (bizon.connectors.sources comes from there), and says so
without it."""

from bizon.connectors.sources.dummy.src.source import DummySource
from bizon.source.models import SourceIteration, SourceRecord


class TaggedDummySource(DummySource):
    @staticmethod
    def streams():
        return ["creatures"]

    def get(self, pagination: dict = None) -> SourceIteration:
        page = super().get(pagination)
        return SourceIteration(next_pagination=page.next_pagination, records=[
            SourceRecord(id=record.id, data={**record.data, "tagged_by": type(self).__name__,
                                             "auth": self.session.auth.get_auth_header()})
            for record in page.records])
