"""Queries that only name a period return the memories written then (fixed clock)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.recall.ranking import DAY_MS, Span, date_spans


def _ms(*when: int) -> int:
    return int(datetime(*when, tzinfo=UTC).timestamp() * 1000)  # type: ignore[misc]


NOW = _ms(2025, 5, 14, 15)  # a Wednesday afternoon


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def dated(tmp_path: Path) -> Iterator[tuple[MemoryStore, dict[str, str]]]:
    clock = Clock()
    store = MemoryStore.open(tmp_path / "store.db", author="tester", clock=clock)
    written = {
        "march": (_ms(2025, 3, 20, 10), "Orders moved to PostgreSQL 16"),
        "may8": (_ms(2025, 5, 8, 9), "The payment SDK is pinned to 4.2.x"),
        "may11": (_ms(2025, 5, 11, 17), "Staging certificates were rotated"),
        "yesterday": (_ms(2025, 5, 13, 11), "Flaky checkout test quarantined"),
        "today": (_ms(2025, 5, 14, 9), "Release 3.2 branch cut"),
    }
    ids = {}
    for name, (at, text) in written.items():
        clock.now = at
        ids[name] = store.remember(text, project="app", origin=f"t:{name}").memory.record.id
    clock.now = NOW
    yield store, ids
    store.close()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("yesterday", ["yesterday"]),
        ("what happened yesterday?", ["yesterday"]),
        ("today", ["today"]),
        ("last week", ["today", "yesterday", "may11", "may8"]),
        ("in March", ["march"]),
        ("2025-05-08", ["may8"]),
        ("May 2025", ["today", "yesterday", "may11", "may8"]),
        ("3 days ago", ["may11"]),
        ("last 2 days", ["today", "yesterday"]),
    ],
)
def test_a_date_only_query_returns_that_period_newest_first(
    dated: tuple[MemoryStore, dict[str, str]], query: str, expected: list[str]
) -> None:
    store, ids = dated
    hits = store.recall(query, project="app", k=10)
    assert [h.memory.record.id for h in hits] == [ids[name] for name in expected]
    assert all(h.why["date"] > 0 for h in hits)


def test_a_period_with_words_still_ranks_by_the_words(
    dated: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, ids = dated
    hits = store.recall("certificates last week", project="app", k=10)
    assert hits[0].memory.record.id == ids["may11"]


def test_relative_dates_are_computed_from_the_given_now() -> None:
    today = _ms(2025, 5, 14)
    assert date_spans("yesterday", NOW) == [Span(today - DAY_MS, today)]
    assert date_spans("last year", NOW) == [Span(_ms(2024, 1, 1), _ms(2025, 1, 1))]
    assert date_spans("this month", NOW) == [Span(_ms(2025, 5, 1), today + DAY_MS)]
    assert date_spans("2 weeks ago", NOW) == [Span(today - 14 * DAY_MS, today - 7 * DAY_MS)]
    assert date_spans("deploy notes", NOW) == []


def test_a_named_day_is_parsed_in_both_orders() -> None:
    day = _ms(2022, 10, 9)
    for query in ("the game on 9 October, 2022", "the game on October 9th 2022"):
        assert Span(day, day + 2 * DAY_MS) in date_spans(query, NOW)
    assert all(s.end - s.start > 2 * DAY_MS for s in date_spans("in October 2022", NOW))


def test_a_named_day_ranks_its_memories_above_the_rest_of_its_month(tmp_path: Path) -> None:
    clock = Clock()
    with MemoryStore.open(tmp_path / "s.db", author="tester", clock=clock) as store:
        made = {}
        for day in (3, 9, 20):
            clock.now = _ms(2022, 10, day, 12)
            text = f"Played a strategy board game at the convention, round {day}"
            made[day] = store.remember(text, project="app", origin=f"t:{day}").memory.id
        clock.now = NOW
        hits = store.recall("Which game was played on 9 October, 2022?", project="app", k=3)
        assert hits[0].memory.id == made[9]
        assert hits[0].why["date"] > hits[1].why["date"] > 0
