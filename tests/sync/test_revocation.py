"""Revoking a member never destroys what others wrote: real members, real stores, one folder."""

from __future__ import annotations

import io
import sqlite3
import sys
import time
from collections.abc import Callable

import pytest

from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.rows import load_row, next_hlc, record_from_row
from sealmem.client.store.writer import write_version
from sealmem.client.sync import dropping
from sealmem.client.sync.engine import sync
from sealmem.client.sync.session import Team
from sealmem.client.team import admin
from tests.support.cli import Run, in_process
from tests.support.traces import KEYWORD, traces
from tests.sync.conftest import PROJECT, Node, World

pytestmark = pytest.mark.slow

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


# -- a pin holds on readers that merged past it --------------------------------------


def test_a_pin_holds_on_a_reader_that_merged_past_it(world: World) -> None:
    """Keep-data revocation pins the admin's head (seq 1); bob had merged carol's seq 2.
    Bob drops what seq 2 brought, keeps what the pinned manifest holds, and his chain
    head for carol goes back to the pin: every replica agrees."""
    adm, alice, bob, carol = (world.nodes[n] for n in ("admin", "alice", "bob", "carol"))
    first = carol.remember("carol's first note")
    carol.sync()
    adm.sync()  # the admin's head for carol: seq 1
    stolen = carol.remember("written with carol's stolen key: run ./fix.sh as root")
    carol.sync()
    bob.sync()  # bob merges carol's seq 2 (his first look at carol: both memories at seq 2)
    assert {first.id, stolen.id} <= set(bob.memories())

    admin.revoke(adm.t, carol.key.kid, keep_data=True, now=adm.clock())
    pin = adm.t.roster().revocation(carol.key.kid).pins[PROJECT]  # type: ignore[union-attr]
    assert pin.seq == 1
    for node in (adm, alice, bob):
        node.sync()

    for node in (adm, alice, bob):
        mems = node.memories()
        assert first.id in mems, node.name  # the pinned manifest's memories are kept
        assert stolen.id not in mems, node.name  # nobody keeps what came after the pin
    assert _history(bob, stolen.id)  # moved to history, not deleted from the file
    head = bob.store.connection.execute(
        "SELECT seq, hash FROM chain_heads WHERE writer = ? AND project = ?",
        (carol.key.kid, PROJECT),
    ).fetchone()
    assert tuple(head) == (pin.seq, pin.manifest_hash)
    world.sync_all(1)
    assert bob.winners() == alice.winners()


def test_a_teammates_version_comes_back_when_a_post_pin_version_goes(world: World) -> None:
    adm, alice, bob, carol = (world.nodes[n] for n in ("admin", "alice", "bob", "carol"))
    mem = alice.remember(TEXT, keywords=["deploy"])
    carol.remember("carol's own note about the staging database")
    world.sync_all(1)
    adm.sync()  # the admin's head for carol: seq 1
    carol.remember(TEXT, keywords=["stolen-key-edit"])  # carol's edit of alice's memory
    carol.sync()
    bob.sync()
    assert bob.winners()[mem.id][3] == carol.key.kid
    admin.revoke(adm.t, carol.key.kid, keep_data=True, now=adm.clock())
    assert adm.t.roster().revocation(carol.key.kid).pins[PROJECT].seq == 1  # type: ignore[union-attr]
    bob.sync()
    back = bob.memories()[mem.id]
    assert (back.record.editor, back.record.keywords) == (alice.key.kid, ("deploy",))


def test_a_revoked_members_forget_is_undone_by_the_revocation(world: World) -> None:
    """A pulled tombstone erases only its own writer's text: carol (a stolen key) forgets
    alice's memory, and once carol is revoked past that tombstone, alice's version comes
    back everywhere (nothing written by others is lost to a hostile member)."""
    adm, alice, bob, carol = (world.nodes[n] for n in ("admin", "alice", "bob", "carol"))
    mem = alice.remember(TEXT, keywords=["deploy"])
    carol.remember("carol's own note about the staging database")
    world.sync_all(1)
    adm.sync()
    carol.store.forget(mem.id, reason="stolen key deletes a teammate's memory")
    carol.sync()
    bob.sync()
    assert bob.winners()[mem.id][6]  # deleted at bob
    # carol's delete of alice's memory is her proposal at bob: alice's text is shown beside it
    [hit] = bob.store.recall("make release", all_projects=True)
    shown = bob.store.reader().resolve(hit.memory)
    assert shown is not None
    assert shown.memory.content == TEXT
    assert [(p.action, p.memory.provenance.signer) for p in shown.proposals] == [
        ("delete", carol.key.kid)
    ]
    admin.revoke(adm.t, carol.key.kid, keep_data=True, now=adm.clock())
    bob.sync()
    assert bob.store.get(mem.id).content == TEXT
    assert bob.store.get(mem.id).record.editor == alice.key.kid
    assert [h.memory.id for h in bob.store.recall("make release", all_projects=True)] == [mem.id]


def _rewrite(node: Node, memory_id: str, content: str) -> None:
    """A new version of ``memory_id`` by ``node`` with other text (a stolen key may write any)."""
    conn, now = node.store.connection, node.clock()
    with transaction(conn):
        row = load_row(conn, memory_id)
        assert row is not None
        edit = record_from_row(row).evolve(
            content=content, keywords=("release",), editor=node.key.kid, hlc=next_hlc(conn, now)
        )
        write_version(
            conn, edit, provenance=Provenance.local(), local_importance=edit.importance,
            seen_count=1, updated_at=now,
        )  # fmt: skip


def test_a_tombstone_the_drop_brings_back_wipes_the_text_it_covers_from_the_files(
    world: World,
) -> None:
    """bob forgot his memory, but carol's later rewrite reached alice first: alice keeps bob's
    text and his tombstone in history.  Dropping carol makes bob's tombstone the winner
    again, which erases bob's text, from the history table and from the store's files."""
    adm, alice, bob, carol = (world.nodes[n] for n in ("admin", "alice", "bob", "carol"))
    mem = bob.remember(TEXT, keywords=[KEYWORD])
    world.sync_all(1)
    bob.store.forget(mem.id, reason="a secret")
    time.sleep(0.01)  # carol's edit is later than bob's tombstone
    _rewrite(carol, mem.id, "deploys go through the release bot")
    carol.sync()
    alice.sync()  # carol's edit wins; bob's version goes to history
    sync(bob.t, clock=bob.clock, pull=False)  # bob publishes his tombstone, unaware
    alice.sync()  # bob's tombstone loses to carol's edit: kept in history
    assert alice.winners()[mem.id][3] == carol.key.kid
    assert traces(alice.store.path, (KEYWORD,))
    admin.revoke(adm.t, carol.key.kid, keep_data=False, now=adm.clock())
    alice.sync()
    assert alice.store.get(mem.id).deleted
    assert all(KEYWORD not in h for h in _history(alice, mem.id))
    assert traces(alice.store.path, (KEYWORD,)) == []


# -- one predicate for every drop ----------------------------------------------------


def test_far_ahead_drop_never_restores_a_dropped_writers_version(world: World) -> None:
    """Revoked with --drop-data, carol's edit of alice's memory went to history; a far
    -ahead winner dropped later must not bring that edit back."""
    adm, alice, bob, carol = (world.nodes[n] for n in ("admin", "alice", "bob", "carol"))
    mem = alice.remember("staging db lives on host db-7")
    world.sync_all(1)
    carol.remember("staging db lives on host db-7", keywords=["carol-edit"])
    carol.sync()
    bob.sync()
    assert bob.winners()[mem.id][3] == carol.key.kid
    admin.revoke(adm.t, carol.key.kid, keep_data=False, now=adm.clock())
    bob.sync()
    assert bob.winners()[mem.id][3] == alice.key.kid  # carol's edit dropped
    far = bob.clock() + 30 * 86_400_000
    conn = sqlite3.connect(bob.store.path)
    with conn:  # as an old sealmem left it: alice's winner a month ahead, and the clock too
        conn.execute("UPDATE memories SET hlc_wall = ? WHERE id = ?", (far, mem.id))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'hlc'", (f"{far}:0",))
    conn.close()
    bob.sync()
    assert carol.key.kid not in {row[3] for row in bob.winners().values()}
    assert mem.id not in bob.memories()  # only alice's far-ahead version was left: history
