"""A teammate's supersede the reader dismissed, or a muted teammate's, replaces nothing:
``show``, ``recall``, ``list`` and MCP ``recall`` marked the reader's own memory
superseded by it (they left out only the proposals still waiting, so a settled one read
as applied)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sync import test_teammate_trust as trust_tests
from tests.sync.conftest import PROJECT, Node, World, make_world
from tests.sync.test_teammate_trust import _mcp

pytestmark = trust_tests.pytestmark
SEALMEM, MINE = trust_tests.SEALMEM, trust_tests.MINE


@pytest.fixture
def team(tmp_path: Path) -> Iterator[World]:
    world = make_world(tmp_path, "alice", "bob")
    (tmp_path / PROJECT).mkdir()
    try:
        yield world
    finally:
        world.close()


def _run(node: Node, *args: str) -> str:
    done = subprocess.run(
        [str(SEALMEM), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "SEALMEM_HOME": str(node.home), "COLUMNS": "200"},
        cwd=node.home.parent / PROJECT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("settle", ["dismissed", "muted"])
def test_a_settled_supersede_marks_nothing_superseded(team: World, settle: str) -> None:
    alice, bob = team.nodes["alice"], team.nodes["bob"]
    warning = alice.remember(MINE, kind="warning", importance=0.6)
    team.sync_all(rounds=1)
    note = bob.remember("Friday deploys are fine now.", kind="note", supersedes=[warning.id])
    team.sync_all(rounds=2)
    assert f"bob proposes to replace it: {note.id}" in _run(alice, "show", warning.id)
    if settle == "dismissed":
        _run(alice, "captured", "discard", note.id)
    else:
        _run(alice, "trust", "set", "bob", "muted")
    shown = _run(alice, "show", warning.id)
    assert "SUPERSEDED" not in shown, shown
    assert "proposes" not in shown  # settled: no longer beside it either
    assert json.loads(_run(alice, "show", warning.id, "--json"))["superseded_by"] == []
    recalled = _run(alice, "recall", "deploy on fridays")
    assert MINE in recalled
    assert f"superseded by {note.id}" not in recalled, recalled
    hits = json.loads(_run(alice, "recall", "deploy on fridays", "--json"))["hits"]
    mine = next(h for h in hits if h["id"] == warning.id)
    assert mine["superseded_by"] == [], mine["superseded_by"]
    row = next(line for line in _run(alice, "list").splitlines() if "Never deploy" in line)
    assert "superseded" not in row, row
    (recalled_by_agent,) = _mcp(alice, [("recall", {"query": "deploy on fridays"})])
    hit = next(h for h in recalled_by_agent["hits"] if h["id"] == warning.id)
    assert (hit["superseded_by"], hit["proposals"]) == ([], [])


def test_accept_all_shares_the_captures_and_lets_in_no_teammates_proposal(team: World) -> None:
    """``captured accept --all``, the hint under the captures' table, also accepted every
    teammate's version waiting: a supersede of the reader's own warning applied unseen."""
    alice, bob = team.nodes["alice"], team.nodes["bob"]
    warning = alice.remember(MINE, kind="warning", importance=0.6)
    team.sync_all(rounds=1)
    note = bob.remember("Friday deploys are fine now.", kind="note", supersedes=[warning.id])
    team.sync_all(rounds=2)
    capture = alice.remember("the CI cache lives on the build host", private=True, source="hook")
    listed = _run(alice, "captured")
    assert note.id[-12:] in listed
    assert capture.id[-12:] in listed
    accepted = _run(alice, "captured", "accept", "--all")
    assert "1 accepted" in accepted
    assert "by id" in accepted, accepted  # what is left waiting, and how to let it in
    queue = json.loads(_run(alice, "captured", "--json"))
    assert queue["captured"] == []
    assert [t["id"] for t in queue["teammates"]] == [note.id]
    assert json.loads(_run(alice, "show", warning.id, "--json"))["superseded_by"] == []
    _run(alice, "captured", "accept", note.id)  # by id, it applies
    shown = json.loads(_run(alice, "show", warning.id, "--json"))["superseded_by"]
    assert [d["id"] for d in shown] == [note.id]


def test_show_of_a_memory_a_teammate_proposes_to_delete_shows_the_authors_text(
    team: World,
) -> None:
    """``show`` printed the stored tombstone (FORGOTTEN) while the reader's agent still
    had the warning: the version that stands is the author's, the delete a proposal."""
    alice, bob = team.nodes["alice"], team.nodes["bob"]
    warning = alice.remember(MINE, kind="warning", importance=0.6)
    team.sync_all(rounds=1)
    bob.store.forget(warning.id, reason="obsolete")
    team.sync_all(rounds=2)
    shown = _run(alice, "show", warning.id)
    assert MINE in shown, shown
    assert "FORGOTTEN" not in shown
    assert f"bob proposes to delete it: {warning.id}" in shown
    doc = json.loads(_run(alice, "show", warning.id, "--json"))
    assert (doc["content"], doc["deleted"], doc["written_here"]) == (MINE, False, True)
    assert [(p["action"], p["writer"]) for p in doc["proposals"]] == [("delete", bob.key.kid)]
    _run(alice, "captured", "accept", warning.id)  # accepted: the delete applies
    assert "FORGOTTEN" in _run(alice, "show", warning.id)
