"""The order of a member's trust decisions across its devices (SPEC "Private memories
and trust follow the member"): the highest (wall, counter, device kid) wins."""

from __future__ import annotations

import pytest

from sealmem.protocol.private_trust import replaces


@pytest.mark.parametrize(
    ("new", "held", "expected"),
    [
        ((5, 0, "B"), None, True),  # nothing held yet
        ((5, 0, "B"), (4, 9, "Z"), True),  # a later wall clock wins whatever the counter
        ((5, 1, "A"), (5, 0, "Z"), True),  # same wall: the counter decides
        ((5, 0, "B"), (5, 0, "A"), True),  # same stamp: the higher device kid decides
        ((5, 0, "A"), (5, 0, "B"), False),
        ((5, 0, "A"), (5, 0, "A"), False),  # the decision already held
        ((4, 9, "Z"), (5, 0, "A"), False),
    ],
)
def test_the_highest_stamp_replaces(
    new: tuple[int, int, str], held: tuple[int, int, str] | None, expected: bool
) -> None:
    assert replaces(new, held) is expected
