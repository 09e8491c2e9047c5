"""A store that merged far-future versions before clocks were bounded recovers: the best
remaining version comes back and the store clock returns to now (sync and doctor)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable

import pytest

from sealmem.client.store import derived
from sealmem.client.sync.engine import SyncSummary
from sealmem.client.sync.push import push_project
from sealmem.protocol.hlc import MAX_AHEAD_MS, MAX_WALL_MS
from tests.support.cli import Run, in_process
from tests.sync.conftest import PROJECT, Node, World

FAR_WALL = 10**13  # year 2286
POISONED_CLOCK = 2**62


def _poison(node: Node, memory_id: str, writer: str) -> str:
    """As an old sealmem left it: ``memory_id``'s winner replaced by a far-future version
    of ``writer`` (the previous one in history), one more memory only ``writer`` wrote
    in the far future, and the store clock at 2**62.  Returns that other memory's id."""
    current = node.memories()[memory_id]
    future_only = "019f0000-0000-7000-8000-00000000f00d"
    path = node.store.path
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "INSERT INTO history (id, record_json, local_importance, seen_count, updated_at, "
            "transport, signer, signer_name, verified, received_at, snapshot_seq, replaced_at) "
            "SELECT id, ?, local_importance, seen_count, updated_at, transport, signer, "
            "signer_name, verified, received_at, snapshot_seq, updated_at "
            "FROM memories WHERE id = ?",
            (json.dumps(current.record.to_wire(), sort_keys=True), memory_id),
        )
        conn.execute(
            "UPDATE memories SET hlc_wall = ?, hlc_counter = 0, editor = ?, signer = ?, "
            "content = 'pinned forever by a skewed clock', transport = 'folder' WHERE id = ?",
            (FAR_WALL, writer, writer, memory_id),
        )
        conn.execute(
            "INSERT INTO memories (id, project, kind, content, importance, local_importance, "
            "author, editor, created_at, hlc_wall, hlc_counter, origin, visibility, updated_at, "
            "transport, signer, verified) SELECT ?, project, kind, 'from the future', "
            "importance, local_importance, ?, ?, created_at, ?, 0, origin, visibility, "
            "updated_at, 'folder', ?, 1 FROM memories WHERE id = ?",
            (future_only, writer, writer, FAR_WALL, writer, memory_id),
        )
        conn.execute("UPDATE meta SET value = ? WHERE key = 'hlc'", (f"{POISONED_CLOCK}:0",))
        derived.rebuild(conn)  # what copying such a store into this schema computes
    conn.close()
    return future_only


def _clock(node: Node) -> tuple[int, int]:
    (value,) = node.store.connection.execute("SELECT value FROM meta WHERE key = 'hlc'").fetchone()
    wall, _, counter = str(value).partition(":")
    return int(wall), int(counter)


@pytest.mark.slow
def test_sync_recovers_a_poisoned_store(world: World) -> None:
    alice, bob, carol = world.nodes["alice"], world.nodes["bob"], world.nodes["carol"]
    mem = alice.remember("the API keys rotate every 90 days")
    world.sync_all(1)
    future_only = _poison(bob, mem.id, carol.key.kid)
    assert bob.memories()[mem.id].record.hlc.wall == FAR_WALL

    summary = bob.sync()
    assert any("more than 2 days ahead" in w for w in summary.warnings), summary.warnings
    back = bob.memories()[mem.id]
    assert back.record == mem.record  # alice's version came back, with its provenance
    assert back.provenance.signer == alice.key.kid
    assert future_only not in bob.memories()
    history = bob.store.connection.execute(
        "SELECT COUNT(*) FROM history WHERE id = ?", (future_only,)
    ).fetchone()[0]
    assert history == 1  # moved to history, not deleted from the file
    now = time.time_ns() // 1_000_000
    assert now - 60_000 <= _clock(bob)[0] <= now + MAX_AHEAD_MS

    fresh = bob.remember("written after the recovery")
    assert fresh.record.hlc.wall < now + MAX_AHEAD_MS
    assert bob.sync().refused == []
    assert alice.sync().refused == []
    assert fresh.id in alice.memories()
    assert alice.memories()[mem.id].record == mem.record


def test_doctor_reports_and_mends_a_poisoned_store(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob, carol = world.nodes["alice"], world.nodes["bob"], world.nodes["carol"]
    mem = alice.remember("staging is rebuilt every night")
    world.sync_all(1)
    _poison(bob, mem.id, carol.key.kid)
    monkeypatch.setenv("SEALMEM_HOME", str(bob.home))
    run: Callable[..., Run] = in_process(capsys, monkeypatch)
    done = run("doctor", "--json")
    assert done.code == 0, done.err
    check = next(c for c in done.json()["checks"] if c["name"] == "clock")
    assert check["detail"].startswith("repaired: dropped 2 pulled versions")
    assert "brought the store clock back" in check["detail"]
    assert bob.memories()[mem.id].record == mem.record
    again = run("doctor", "--json")
    assert "no version" in next(c for c in again.json()["checks"] if c["name"] == "clock")["detail"]
    assert bob.remember("works again").record.hlc.wall < FAR_WALL


YEAR_MS = 365 * 24 * 60 * 60 * 1000


def _sane(wall: int) -> bool:
    now = time.time_ns() // 1_000_000
    return now - 600_000 <= wall <= now + MAX_AHEAD_MS


@pytest.mark.slow
def test_a_member_who_wrote_while_poisoned_is_read_again(world: World) -> None:
    """Local versions written while the store clock was far ahead are stamped again from
    the recovered clock and published: teammates no longer refuse the snapshot."""
    alice, bob, carol = world.nodes["alice"], world.nodes["bob"], world.nodes["carol"]
    mem = alice.remember("the API keys rotate every 90 days")
    world.sync_all(1)
    far = time.time_ns() // 1_000_000 + YEAR_MS
    conn = sqlite3.connect(bob.store.path)
    with conn:  # as an old sealmem left it: a pulled version a year ahead, the clock after it
        conn.execute(
            "UPDATE memories SET hlc_wall = ?, editor = ?, signer = ?, transport = 'folder' "
            "WHERE id = ?",
            (far, carol.key.kid, carol.key.kid, mem.id),
        )
        conn.execute("UPDATE meta SET value = ? WHERE key = 'hlc'", (f"{far}:0",))
    conn.close()
    poisoned = bob.remember("bob wrote this while his clock was poisoned")
    assert poisoned.record.hlc.wall >= far  # ticked from the poisoned clock

    summary = bob.sync()
    assert any("store clock was brought back" in w for w in summary.warnings), summary.warnings
    assert _sane(_clock(bob)[0])
    again = bob.memories()[poisoned.id]
    assert again.record.content == poisoned.record.content  # same memory, same text ...
    assert again.record.editor == bob.key.kid
    assert _sane(again.record.hlc.wall)  # ... a fresh clock
    assert again.provenance.transport == "local"
    old = bob.store.connection.execute(
        "SELECT record_json FROM history WHERE id = ?", (poisoned.id,)
    ).fetchall()
    assert [json.loads(r[0])["hlc"][0] for r in old] == [poisoned.record.hlc.wall]
    fresh = bob.remember("written after the recovery")
    assert _sane(fresh.record.hlc.wall)
    bob.sync()

    pulled = alice.sync()
    assert [r for r in pulled.refused if r.reason == "clock-ahead"] == []
    assert pulled.refused == []
    mems = alice.memories()
    for mid in (poisoned.id, fresh.id):
        assert mid in mems
        assert _sane(mems[mid].record.hlc.wall)
        assert mems[mid].provenance.signer == bob.key.kid


@pytest.mark.slow
def test_a_poisoned_push_is_published_again(world: World) -> None:
    """A version pushed while poisoned (teammates refused that snapshot) is published again
    once stamped anew: what the own chain recorded as pushed is reset."""
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    world.sync_all(1)
    far = time.time_ns() // 1_000_000 + YEAR_MS
    conn = sqlite3.connect(bob.store.path)
    with conn:
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('hlc', ?)", (f"{far}:0",))
    conn.close()
    poisoned = bob.remember("pushed by an old sealmem with a poisoned clock")
    assert poisoned.record.hlc.wall >= far
    # an old sealmem pushed it without bringing the store clock back first
    push_project(bob.t, bob.t.trusted(), PROJECT, SyncSummary(), bob.clock)
    refused = alice.sync().refused
    assert [r.reason for r in refused] == ["clock-ahead"]

    bob.sync()
    pulled = alice.sync()
    assert pulled.refused == []
    assert poisoned.id in alice.memories()
    assert _sane(alice.memories()[poisoned.id].record.hlc.wall)


@pytest.mark.slow
def test_an_import_from_the_far_future_does_not_cut_a_member_off(world: World) -> None:
    alice, bob, carol = world.nodes["alice"], world.nodes["bob"], world.nodes["carol"]
    tip = carol.remember("handy tip from carol's export")
    doc = carol.store.export()
    for item in doc["memories"]:
        item["record"]["hlc"] = [MAX_WALL_MS, 0]  # a hostile or broken export file
    result = bob.store.import_(doc)
    assert result.skipped == 1
    assert tip.id not in bob.memories()
    mine = bob.remember("bob writes after importing")
    assert _sane(mine.record.hlc.wall)
    bob.sync()
    pulled = alice.sync()
    assert pulled.refused == []
    assert mine.id in alice.memories()


@pytest.mark.slow
def test_doctor_stamps_own_versions_again_and_keeps_revocations(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sealmem doctor`` applies the whole drop rule (it reads the trusted roster): a
    far-ahead winner does not bring back the edit of a member revoked with
    --drop-data; bob's own far-ahead memory is stamped again; the clock is in bounds."""
    from sealmem.client.team import admin

    adm, alice, bob, carol = (world.nodes[n] for n in ("admin", "alice", "bob", "carol"))
    mem = alice.remember("staging db lives on host db-7")
    world.sync_all(1)
    carol.remember("staging db lives on host db-7", keywords=["carol-edit"])
    carol.sync()
    bob.sync()
    admin.revoke(adm.t, carol.key.kid, keep_data=False, now=adm.clock())
    bob.sync()
    far = bob.clock() + YEAR_MS
    conn = sqlite3.connect(bob.store.path)
    with conn:  # as an old sealmem left it
        conn.execute("UPDATE memories SET hlc_wall = ? WHERE id = ?", (far, mem.id))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'hlc'", (f"{far}:0",))
    conn.close()
    own = bob.remember("bob wrote this while his clock was poisoned")

    monkeypatch.setenv("SEALMEM_HOME", str(bob.home))
    run: Callable[..., Run] = in_process(capsys, monkeypatch)
    done = run("doctor", "--json")
    assert done.code == 0, done.err
    detail = next(c for c in done.json()["checks"] if c["name"] == "clock")["detail"]
    assert "stamped 1 of your memories" in detail
    assert "brought the store clock back" in detail
    assert carol.key.kid not in {row[3] for row in bob.winners().values()}
    assert _sane(_clock(bob)[0])
    assert _sane(bob.memories()[own.id].record.hlc.wall)
    bob.sync()
    assert [r.object for r in alice.sync().refused if r.reason == "clock-ahead"] == []
    assert own.id in alice.memories()
