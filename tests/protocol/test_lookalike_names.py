"""Names that look alike: refused when they hide characters, flagged when they only look alike.

A reader shows a teammate by roster name; the short member id is added when the
name could be mistaken for another member's or for ``you``.  Exact equality
missed ``"alice\\u00a0"``, ``"Alice"``, Cyrillic ``"аlice"`` and ``"alice\\u3164"``
(a Hangul filler that renders blank).  Fillers and leading or trailing
whitespace are now refused in names; the rest is compared by skeleton.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sealmem.client import Memory, Provenance
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.names import name_problem, name_skeleton
from sealmem.protocol.record import Record

ALICE, EVE, ME = "a" * 26, "e" * 26, "k" * 26


@pytest.mark.parametrize(
    "name",
    [
        "alice\u3164", "\u3164", "al\u1160ice", "\u115falice", "alice\uffa0",
        "alice ", " alice", "alice\u00a0", "\u2003alice", "alice\t", "   ",
    ],
)  # fmt: skip
def test_fillers_and_outer_whitespace_are_refused(name: str) -> None:
    assert name_problem(name) is not None


@pytest.mark.parametrize("name", ["alice", "Alice Smith", "Zoë", "Jean-Luc", "김민준", "Ана"])
def test_real_names_stay_writable(name: str) -> None:
    assert name_problem(name) is None


@pytest.mark.parametrize(
    "lookalike",
    [
        "Alice", "ALICE", "\u0430lice", "alic\u0435", "\u0430l\u0456c\u0435", "ａｌｉｃｅ",
        "al ice", "alice\u00a0", "alice\u3164", "\u03b1lice", "al\u200bice",
        "aIice", "a1ice", "AIICE", "a|ice", "a\u04cfice", "\uff41\uff11ice",
    ],
)  # fmt: skip
def test_lookalikes_share_alices_skeleton(lookalike: str) -> None:
    assert name_skeleton(lookalike) == name_skeleton("alice") == "allce"


@pytest.mark.parametrize(
    ("name", "lookalike"),
    [("bob", "b0b"), ("bob", "B0B"), ("mary", "rnary"), ("will", "vvill"), ("tom", "t0rn")],
)
def test_ascii_lookalikes_share_a_skeleton(name: str, lookalike: str) -> None:
    """Digits and letter pairs that read as another letter: mapped after case folding."""
    assert name_skeleton(lookalike) == name_skeleton(name)


@pytest.mark.parametrize("other", ["alicia", "bob", "alice2", "malice", "allice", "alic3"])
def test_other_names_do_not(other: str) -> None:
    assert name_skeleton(other) != name_skeleton("alice")


@given(st.text(max_size=20))
def test_the_skeleton_is_idempotent_and_ignores_case(name: str) -> None:
    skeleton = name_skeleton(name)
    assert name_skeleton(skeleton) == skeleton
    assert name_skeleton(name.upper()) == name_skeleton(name.casefold())


def _arrived(signer: str) -> Memory:
    record = Record(
        id="01900000-0000-7000-8000-000000000000", project="p", kind="note",
        content="rotate the staging keys", keywords=(), importance=0.5, author=signer,
        editor=signer, created_at=1, hlc=Hlc(1, 0),
    )  # fmt: skip
    prov = Provenance(transport="folder", signer=signer, verified=True)
    return Memory(record=record, seen_count=1, updated_at=1, provenance=prov)


@pytest.mark.parametrize(
    "eve_name", ["Alice", "\u0430lice", "alice\u00a0", "alice\u3164", "ALICE", "a lice"]
)
def test_a_lookalike_of_a_teammate_is_shown_with_both_short_ids(eve_name: str) -> None:
    names = {ALICE: "alice", EVE: eve_name, ME: "bob"}
    assert _arrived(EVE).authorship(names, ME).writer_name == f"{eve_name} ({EVE[:8]})"
    assert _arrived(ALICE).authorship(names, ME).writer_name == f"alice ({ALICE[:8]})"


@pytest.mark.parametrize("eve_name", ["You", "y\u043eu", "Y O U", "ｙｏｕ"])
def test_a_name_that_looks_like_you_is_shown_with_its_short_id(eve_name: str) -> None:
    names = {EVE: eve_name, ME: "bob"}
    assert _arrived(EVE).authorship(names, ME).writer_name == f"{eve_name} ({EVE[:8]})"


def test_a_former_members_name_next_to_a_current_lookalike_gets_the_id() -> None:
    """The name comes from provenance (the signer left the roster); a member holds it now."""
    names = {ALICE: "alice", ME: "bob"}
    record = _arrived(EVE).record
    prov = Provenance(transport="folder", signer=EVE, signer_name="alice", verified=True)
    gone = Memory(record=record, seen_count=1, updated_at=1, provenance=prov)
    assert gone.authorship(names, ME).writer_name == f"alice ({EVE[:8]})"


def test_distinct_names_are_shown_alone() -> None:
    names = {ALICE: "alice", EVE: "eve", ME: "bob"}
    assert _arrived(EVE).authorship(names, ME).writer_name == "eve"
    assert _arrived(ALICE).authorship(names, ME).writer_name == "alice"
