"""Revoking a member never destroys what others wrote: real members, real stores, one folder."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable

import pytest

from sealmem.client.sync import dropping
from sealmem.client.team import admin
from sealmem.client.team.session import Team
from tests.support.cli import Run, in_process
from tests.sync.conftest import Node, World

TEXT = "deploys go through 'make release', never by hand"


def _history(node: Node, memory_id: str) -> list[str]:
    rows = node.store.connection.execute(
        "SELECT record_json FROM history WHERE id = ? ORDER BY seq", (memory_id,)
    ).fetchall()
    return [str(r[0]) for r in rows]


def _carol_takes_over(world: World) -> tuple[str, str]:
    """alice writes a memory; carol honestly remembers the same text (one more keyword),
    which makes carol the editor of alice's memory everywhere; carol also writes her own."""
    alice, carol = world.nodes["alice"], world.nodes["carol"]
    original = alice.remember(TEXT, keywords=["deploy"])
    world.sync_all(1)
    again = carol.remember(TEXT, keywords=["release"])
    assert again.id == original.id  # the same memory, a new version by carol
    own = carol.remember("carol's own note about the staging database")
    world.sync_all(2)
    for node in world.nodes.values():
        assert node.memories()[original.id].record.editor == carol.key.kid
    return original.id, own.id


def test_dropping_a_revoked_member_brings_teammates_versions_back(world: World) -> None:
    adm, alice, bob = (world.nodes[n] for n in ("admin", "alice", "bob"))
    shared, only_carol = _carol_takes_over(world)

    admin.revoke(adm.t, "carol", keep_data=False, now=adm.clock())
    summaries = {n.name: n.sync() for n in (adm, alice, bob)}
    for node in (adm, alice, bob):
        mems = node.memories()
        assert shared in mems, node.name  # never lost
        record = mems[shared].record
        assert (record.editor, record.content, record.keywords) == (
            alice.key.kid, TEXT, ("deploy",)
        ), node.name  # fmt: skip
        assert only_carol not in mems  # only carol wrote it: out of the winners ...
        assert _history(node, only_carol), node.name  # ... but kept in history
        assert any("revoked members" in w for w in summaries[node.name].warnings)
    restored = bob.memories()[shared]
    assert restored.provenance.signer == alice.key.kid  # as it arrived from alice
    assert restored.provenance.transport == "folder"
    assert alice.memories()[shared].provenance.transport == "local"

    # applied once: later syncs change nothing and every replica agrees
    world.sync_all(2)
    winners = [{k: v for k, v in n.winners().items() if k != only_carol} for n in (adm, alice, bob)]
    assert winners[0] == winners[1] == winners[2]
    with adm.store.connection:
        assert dropping.drop_revoked(adm.store.connection, adm.t.roster(), adm.key.kid,
                                     adm.clock()).affected == 0  # fmt: skip


def test_keeping_data_keeps_the_revoked_members_versions_up_to_the_pin(world: World) -> None:
    adm, bob = world.nodes["admin"], world.nodes["bob"]
    shared, only_carol = _carol_takes_over(world)
    admin.revoke(adm.t, "carol", keep_data=True, now=adm.clock())
    world.sync_all(1)
    assert bob.memories()[shared].record.editor == world.nodes["carol"].key.kid
    assert only_carol in bob.memories()


# -- the CLI -------------------------------------------------------------------------


@pytest.fixture
def as_admin(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Run]:
    monkeypatch.setenv("SEALMEM_HOME", str(world.nodes["admin"].home))
    return in_process(capsys, monkeypatch)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _revoked(world: World) -> bool:
    adm = world.nodes["admin"]
    adm.team = Team.open(adm.home, adm.store, adm.key)
    return adm.t.roster().revocation(world.nodes["carol"].key.kid) is not None


def test_cli_revoke_keeps_data_by_default(world: World, as_admin: Callable[..., Run]) -> None:
    bob = world.nodes["bob"]
    shared, only_carol = _carol_takes_over(world)
    run = as_admin
    done: Run = run("admin", "revoke", "carol", "--json")
    assert done.code == 0, done.err
    assert done.json()["keep_data"] is True
    bob.sync()
    assert bob.memories()[shared].record.editor == world.nodes["carol"].key.kid
    assert only_carol in bob.memories()


def test_cli_drop_data_asks_first_and_refuses_without_a_terminal(
    world: World, as_admin: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    shared, only_carol = _carol_takes_over(world)
    run = as_admin

    refused: Run = run("admin", "revoke", "carol", "--drop-data")
    assert refused.code == 1
    assert "changes 2 memories in your store: 1 go back" in refused.err
    assert "--yes" in refused.err
    assert not _revoked(world)  # nothing was changed

    monkeypatch.setattr(sys, "stdin", _Terminal("n\n"))
    declined: Run = run("admin", "revoke", "carol", "--drop-data")
    assert declined.code == 1
    assert "aborted" in declined.err
    assert not _revoked(world)

    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    done: Run = run("admin", "revoke", "carol", "--drop-data", "--json")
    assert done.code == 0, done.err
    assert done.json()["keep_data"] is False
    assert _revoked(world)
    bob.sync()
    assert bob.memories()[shared].record.editor == alice.key.kid
    assert only_carol not in bob.memories()


def test_cli_drop_data_with_yes_needs_no_terminal(
    world: World, as_admin: Callable[..., Run]
) -> None:
    _carol_takes_over(world)
    run = as_admin
    done: Run = run("admin", "revoke", "carol", "--drop-data", "--yes")
    assert done.code == 0, done.err
    assert "changes 2 memories" in done.err
    assert _revoked(world)
    assert "every member drops its versions on its next sync" in done.out
