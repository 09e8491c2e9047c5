"""The own-chain table of SPEC "Restore and copied keys" (protocol.own_chain), row by row."""

from __future__ import annotations

import pytest

from sealmem.protocol.own_chain import (
    ADOPT,
    BEHIND_WITNESS,
    KEY_IN_USE,
    PUBLISH,
    Link,
    OwnChainStep,
    decide,
)

A3, A4, A5, B4, B5 = Link(3, "a3"), Link(4, "a4"), Link(5, "a5"), Link(4, "b4"), Link(5, "b5")


@pytest.mark.parametrize(
    ("own", "sent", "adopted", "t", "w", "expected"),
    [
        (None, [], False, None, 0, OwnChainStep(PUBLISH, 1)),  # a new store, a new chain
        (A3, [], True, None, 3, OwnChainStep(PUBLISH, 4)),  # the transport lists none above
        (A3, [], True, A3, 3, OwnChainStep(PUBLISH, 4)),
        (A5, [], True, A3, 3, OwnChainStep(PUBLISH, 6)),  # the transport lost our newest
        (A3, [A4, B5], True, A4, 4, OwnChainStep(PUBLISH, 6)),  # interrupted; 5 never landed
        (A3, [A4], True, A4, 5, OwnChainStep(BEHIND_WITNESS)),
        (A3, [], False, None, 4, OwnChainStep(BEHIND_WITNESS)),  # the transport withholds
        (None, [], False, None, 4, OwnChainStep(BEHIND_WITNESS)),  # a new store, chain gone
        (A3, [], False, B5, 6, OwnChainStep(BEHIND_WITNESS)),
        (A3, [], False, B5, 5, OwnChainStep(ADOPT, 6)),
        (None, [], False, B4, 0, OwnChainStep(ADOPT, 5)),
        (A3, [], True, B5, 5, OwnChainStep(KEY_IN_USE)),  # it adopted once already
        (A4, [], False, B4, 4, OwnChainStep(KEY_IN_USE)),  # our seq with another hash
        (A3, [A4], True, B4, 4, OwnChainStep(KEY_IN_USE)),  # our seq was taken by another
    ],
)
def test_the_first_row_that_applies_decides(
    own: Link | None,
    sent: list[Link],
    adopted: bool,
    t: Link | None,
    w: int,
    expected: OwnChainStep,
) -> None:
    assert decide(own=own, sent=sent, adopted=adopted, transport=t, witnessed=w) == expected
