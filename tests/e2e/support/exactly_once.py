"""The exactly-once check of the kill, restart and multi-process tests: every expected record
arrived once, none twice, none that was not expected.

One core, `assert_exactly_once`, on anything hashable that names a record; the adapters below
only say what names a record where the tests' data differ: a generator id counted from 0, or a
Kafka message's (partition, offset).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable

from support.kafka import positions


def assert_exactly_once(found: Iterable[Hashable] | None, expected: Iterable[Hashable],
                        what: str = "records") -> None:
    """Each of `expected` is in `found` exactly once, and `found` holds nothing else. `found` is
    None when there is nothing to look in at all (a table never created): all are lost."""
    found = list(found or ())
    expected = set(expected)
    counts = Counter(found)
    duplicated = sorted(key for key, n in counts.items() if n > 1)
    lost = sorted(expected - counts.keys())
    extra = sorted(counts.keys() - expected)
    assert not duplicated, f"{len(duplicated)} {what} duplicated, e.g. {duplicated[:10]}"
    assert not lost, f"{len(lost)} {what} lost, e.g. {lost[:10]}"
    assert not extra, f"{len(extra)} unexpected {what}, e.g. {extra[:10]}"
    assert len(found) == len(expected)


def assert_ids_exactly_once(ids: Iterable[int] | None, count: int) -> None:
    """Generator ids: each of 0 .. count-1 exactly once (ids_in() reads them from a file)."""
    assert_exactly_once(ids, range(count), what="ids")


def assert_messages_exactly_once(data: list[dict], expected: set[tuple[int, int]]) -> None:
    """Records the kafka source delivered (data_of() reads them from a file): each expected
    (partition, offset) exactly once (expected_positions() lists a topic's)."""
    assert_exactly_once(positions(data), expected, what="messages")
