"""Imported memories stay on the machine until the person shares them.

alice imports her CLAUDE.md into a real two-member folder team: bob receives none of
it until ``sealmem captured accept``, then reads it marked as imported; importing the
same file again afterwards stores nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hosts.conftest import Env
from tests.hosts.test_captured import Member, _held, _team, member

__all__ = ["member"]  # the fixture, used by name

CLAUDE_MD = "# Payments\n\n- Never log card numbers.\n- We decided to pin the SDK to 4.2.\n"


@pytest.mark.slow
def test_a_teammate_gets_an_import_only_once_it_is_shared(
    env: Env, tmp_path: Path, member: Member
) -> None:
    _team(member, tmp_path)
    (env.project / "CLAUDE.md").write_text(CLAUDE_MD, encoding="utf-8")
    done = member("alice", "import", "--from", "claude-md", ".", "--apply", "--json").json()
    assert done["created"] == 2
    member("alice", "sync")
    member("bob", "sync")
    assert _held(tmp_path, "bob") == {}

    waiting = member("alice", "captured", "--json").json()["captured"]
    assert {(w["source"], w["visibility"]) for w in waiting} == {("import", "private")}
    member("alice", "captured", "accept", "--all")
    member("alice", "sync")
    member("bob", "sync")
    held = _held(tmp_path, "bob")
    assert sorted(content for _, content in held.values()) == [
        "Never log card numbers.",
        "We decided to pin the SDK to 4.2.",
    ]
    shown = member("bob", "show", next(iter(held)), "--json").json()
    assert shown["source"] == "import"
    assert "imported" in member("bob", "list").out

    again = member("alice", "import", "--from", "claude-md", ".", "--apply", "--json").json()
    assert again["created"] == 0
    assert {m["status"] for m in again["memories"]} == {"stored"}
