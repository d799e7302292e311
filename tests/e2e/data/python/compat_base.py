"""What the compat cases' sources (compat_*_source.py) share: a source without authentication,
always reachable, whose record count is unknown. Imported from the sources' folder, which ours
puts on sys.path and the test puts on the original's PYTHONPATH."""

from bizon.source.source import AbstractSource


class PlainSource(AbstractSource):
    def get_authenticator(self):
        return None

    def check_connection(self):
        return True, None

    def get_total_records_count(self):
        return None
