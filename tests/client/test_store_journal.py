"""The store's write journal: lost committed writes mark the store damaged, every write
path (the API, the MCP tools, sync) is then refused with the fix, reads go on; writers
that overlap or are killed raise no false alarm."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from sealmem.client import MemoryStore
from sealmem.client.mcp.server import MemoryTools
from sealmem.client.store import journal
from sealmem.client.store.connection import DamagedStoreError
from sealmem.client.sync.engine import sync
from sealmem.client.sync.session import Team
from tests.support.wal import flip_wal_frame, write_unchecked
from tests.sync.conftest import make_world

AUTHOR = "me"


def test_a_damaged_wal_refuses_every_write_and_keeps_reads(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    write_unchecked(path, AUTHOR, 40)
    flip_wal_frame(path)
    with MemoryStore.open(path, author=AUTHOR) as store:
        left = len(store.recent(limit=1000, all_projects=True))
        assert left < 40
        with pytest.raises(DamagedStoreError, match=f"{40 - left} memories missing since"):
            store.remember("a new lesson", project="webapp")
        tools = MemoryTools(lambda: store, "webapp")
        with pytest.raises(ToolError, match="sealmem recover"):
            asyncio.run(tools.remember("from an agent"))
        assert len(store.recent(limit=1000, all_projects=True)) == left  # reads go on
    _tally, damage = journal.read(path)
    assert damage is not None


_WRITER = """
import os, sys
from sealmem.client import MemoryStore
store = MemoryStore.open(sys.argv[1], author="me")
for i in range(25):
    store.remember(f"{sys.argv[2]} note {i}", project="webapp")
store.close()
"""


def test_overlapping_writers_raise_no_false_alarm(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    MemoryStore.open(path, author=AUTHOR).close()
    env = {**os.environ, "SEALMEM_HOME": str(tmp_path)}
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), who], env=env)
        for who in ("one", "two", "three")
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0]
    with MemoryStore.open(path, author=AUTHOR) as store:
        store.remember("after them", project="webapp")
        assert len(store.recent(limit=1000, all_projects=True)) == 76
    tally, damage = journal.read(path)
    assert damage is None
    assert tally is not None
    assert tally.memories == 76


def test_sync_refuses_a_store_put_back_from_an_older_copy(tmp_path: Path) -> None:
    world = make_world(tmp_path, "alice")
    try:
        alice = world.nodes["alice"]
        alice.remember("first")
        alice.sync()
        path = alice.home / "store.db"
        alice.store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        older = path.read_bytes()
        alice.remember("second")
        alice.remember("third")
        alice.store.close()
        for extra in ("-wal", "-shm"):
            Path(f"{path}{extra}").unlink(missing_ok=True)
        path.write_bytes(older)
        alice.store = MemoryStore.open(path, author=alice.key.kid, clock=alice.clock)
        team = Team.open(alice.home, alice.store, alice.key)
        with pytest.raises(DamagedStoreError, match="2 memories missing"):
            sync(team, clock=alice.clock)
    finally:
        world.close()


def test_a_store_marked_by_another_process_refuses_an_open_connection(tmp_path: Path) -> None:
    """A long-lived writer (an MCP server) stops writing once doctor marks the store."""
    path = tmp_path / "store.db"
    with MemoryStore.open(path, author=AUTHOR) as server:
        server.remember("before the damage was found", project="webapp")
        with MemoryStore.open(path, author=AUTHOR, readonly=True) as doctor:
            journal.mark(path, journal.measure(doctor.connection), "damaged: found by doctor")
        with pytest.raises(DamagedStoreError, match="found by doctor"):
            server.remember("after", project="webapp")
        assert len(server.recent(limit=10, all_projects=True)) == 1
