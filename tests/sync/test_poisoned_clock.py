"""A store that merged far-future versions before clocks were bounded recovers: the best
remaining version comes back and the store clock returns to now (sync and doctor)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable

import pytest

from sealmem.protocol.hlc import MAX_AHEAD_MS
from tests.support.cli import Run, in_process
from tests.sync.conftest import Node, World

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
    conn.close()
    return future_only


def _clock(node: Node) -> tuple[int, int]:
    (value,) = node.store.connection.execute("SELECT value FROM meta WHERE key = 'hlc'").fetchone()
    wall, _, counter = str(value).partition(":")
    return int(wall), int(counter)


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
