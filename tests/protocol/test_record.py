"""Record validation: every pattern-checked field is matched in full."""

from __future__ import annotations

from typing import Any

import pytest

from sealmem.protocol import record
from sealmem.protocol.errors import ProtocolError
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, is_memory_id, new_memory_id

KID = "a" * 26


def _wire() -> dict[str, Any]:
    return Record(
        id=new_memory_id(1_700_000_000_000, bytes(range(10))),
        project="webapp",
        kind="note",
        content="use the staging database for tests",
        keywords=("staging",),
        importance=0.5,
        author=KID,
        editor=KID,
        created_at=1_700_000_000_000,
        hlc=Hlc(1_700_000_000_000, 0),
    ).to_wire()


def test_a_valid_record_round_trips() -> None:
    wire = _wire()
    assert Record.from_wire(wire).to_wire() == wire


@pytest.mark.parametrize("name", ["id", "project", "kind", "author", "editor"])
def test_a_trailing_newline_is_refused(name: str) -> None:
    # '$' in a pattern used with re.match also matches before a final newline:
    # "note\n" must not pass as the kind "note", nor an id as a UUIDv7.
    wire = _wire()
    wire[name] += "\n"
    with pytest.raises(ProtocolError, match=name):
        Record.from_wire(wire)


def test_is_memory_id_matches_the_whole_string() -> None:
    rid = new_memory_id(1_700_000_000_000, bytes(10))
    assert is_memory_id(rid)
    assert not is_memory_id(rid + "\n")


@pytest.mark.parametrize(
    ("name", "bad"), [("project", "web app"), ("kind", "Note"), ("editor", "B")]
)
def test_names_found_valid_before_let_no_other_value_through(name: str, bad: str) -> None:
    """Valid project, kind and member names are remembered (the same few come back in
    every chunk); a value never seen valid is still matched against its pattern."""
    Record.from_wire(_wire())
    wire = _wire()
    wire[name] = bad
    with pytest.raises(ProtocolError, match=name):
        Record.from_wire(wire)


def test_the_remembered_names_stay_bounded() -> None:
    for i in range(5_000):
        wire = _wire()
        wire["author"] = f"member{i}"
        Record.from_wire(wire)
    assert len(record._VALID_MEMBERS) <= record._VALID_KEPT


def test_a_name_remembered_valid_for_one_field_is_matched_again_for_another() -> None:
    """ "Webapp" and "a.b" are valid projects, not kinds; "x.y" a valid member, not a
    kind: each field keeps the names its own rule accepted."""
    for name, value in (("project", "Webapp"), ("project", "a.b"), ("author", "x.y")):
        wire = _wire()
        wire[name] = value
        if name == "author":
            wire["editor"] = value
        Record.from_wire(wire)
    for field, value in (
        ("kind", "Webapp"),
        ("kind", "a.b"),
        ("kind", "x.y"),
        ("editor", "Webapp"),
    ):
        wire = _wire()
        wire[field] = value
        with pytest.raises(ProtocolError, match=field):
            Record.from_wire(wire)
