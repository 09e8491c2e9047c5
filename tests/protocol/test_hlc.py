"""The hybrid logical clock at its bounds (SPEC.md "Clocks"): never backwards, never a repeat."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sealmem.protocol.hlc import MAX_COUNTER, MAX_WALL_MS, ClockExhausted, Hlc, receive, tick

walls = st.integers(min_value=0, max_value=MAX_WALL_MS)
counters = st.integers(min_value=0, max_value=MAX_COUNTER)
stamps = st.builds(Hlc, walls, counters)
readings = st.integers(min_value=0, max_value=2 * MAX_WALL_MS)


def test_a_tick_with_the_system_clock_past_the_greatest_wall_moves_on() -> None:
    last = Hlc(MAX_WALL_MS, 5)
    assert tick(last, MAX_WALL_MS + 10) == Hlc(MAX_WALL_MS, 6)


def test_the_greatest_value_has_no_successor() -> None:
    last = Hlc(MAX_WALL_MS, MAX_COUNTER)
    with pytest.raises(ClockExhausted, match="system clock"):
        tick(last, MAX_WALL_MS + 1)
    with pytest.raises(ClockExhausted):
        receive(last, Hlc(MAX_WALL_MS, MAX_COUNTER), MAX_WALL_MS)


def test_a_full_counter_carries_into_the_next_millisecond() -> None:
    assert tick(Hlc(1000, MAX_COUNTER), 500) == Hlc(1001, 0)


@given(stamps, readings)
def test_tick_is_always_later(last: Hlc, now: int) -> None:
    try:
        after = tick(last, now)
    except ClockExhausted:
        assert last == Hlc(MAX_WALL_MS, MAX_COUNTER)
        return
    assert after > last
    assert after.wall <= MAX_WALL_MS
    assert after.counter <= MAX_COUNTER


@given(stamps, stamps, readings)
def test_receive_is_later_than_both(last: Hlc, remote: Hlc, now: int) -> None:
    try:
        after = receive(last, remote, now)
    except ClockExhausted:
        assert max(last, remote).wall == MAX_WALL_MS
        return
    assert after > last
    assert after > remote
    assert after.wall <= MAX_WALL_MS
    assert after.counter <= MAX_COUNTER
