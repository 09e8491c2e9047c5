"""The store's write journal: lost committed writes mark the store damaged, every write
path (the API, the MCP tools, sync) is then refused with the fix, reads go on; writers
that overlap or are killed raise no false alarm.

The journal never calls a healthy store damaged, nor crashes on its sidecar: a sidecar
that is garbage, huge, a FIFO or a link to a device, or dated out of range; a store
recovered elsewhere and moved into place; a writer still running over a recovery, or
over a salvage that gave up."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from mcp.client.client import Client
from mcp_types import TextContent

from sealmem.client import MemoryStore
from sealmem.client.mcp.server import create_server
from sealmem.client.store import journal
from sealmem.client.store.connection import (
    DamagedStoreError,
    StoreReplacedError,
    connect_readonly,
)
from sealmem.client.store.recover import _hold_writers, _release, recover
from sealmem.client.sync.engine import sync
from sealmem.client.sync.session import Team
from tests.support.wal import flip_wal_frame, write_unchecked
from tests.sync.conftest import make_world

AUTHOR = "me"


@pytest.mark.slow
def test_a_damaged_wal_refuses_every_write_and_keeps_reads(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    write_unchecked(path, AUTHOR, 40)
    flip_wal_frame(path)
    with MemoryStore.open(path, author=AUTHOR) as store:
        left = len(store.recent(limit=1000, all_projects=True))
        assert left < 40
        with pytest.raises(DamagedStoreError, match=f"{40 - left} memories missing since"):
            store.remember("a new lesson", project="webapp")
        assert len(store.recent(limit=1000, all_projects=True)) == left  # reads go on

    async def agent() -> str:  # an agent's remember, through the MCP server in memory
        async with Client(
            create_server(project="webapp", opener=lambda: MemoryStore.open(path, author=AUTHOR))
        ) as client:
            result = await client.call_tool("remember", {"content": "from an agent"})
            assert result.is_error
            return " ".join(b.text for b in result.content if isinstance(b, TextContent))

    assert "sealmem recover" in asyncio.run(agent())
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


@pytest.mark.slow
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


def _store(path: Path, notes: int = 2) -> None:
    with MemoryStore.open(path, author=AUTHOR) as store:
        for i in range(notes):
            store.remember(f"note number {i} about the build", project="webapp")


def _doc(path: Path) -> dict[str, object]:
    loaded = json.loads(journal.journal_path(path).read_text())
    assert isinstance(loaded, dict)
    return loaded


def _lose_writes(path: Path) -> None:
    """As a damaged WAL does: the journal saw more committed writes than the store holds."""
    doc = _doc(path)
    doc["commits"] = int(str(doc["commits"])) + 5
    doc["memories"] = int(str(doc["memories"])) + 3
    journal.journal_path(path).write_text(json.dumps(doc))


@pytest.mark.parametrize(
    ("field", "value"),
    [("at", 10**20), ("at", -(10**20)), ("at", 1e300), ("at", True), ("commits", "7")],
)
def test_a_sidecar_with_an_impossible_value_is_not_a_crash(
    tmp_path: Path, field: str, value: object
) -> None:
    path = tmp_path / "store.db"
    _store(path)
    _lose_writes(path)
    doc = _doc(path)
    doc[field] = value
    journal.journal_path(path).write_text(json.dumps(doc))
    with MemoryStore.open(path, author=AUTHOR) as store:  # was OSError/OverflowError
        store.remember("one more note after the odd sidecar", project="webapp")


def test_a_damage_mark_dated_out_of_range_is_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _store(path)
    doc = _doc(path)
    doc["damaged"] = {"why": "damaged: test", "detected_at": 10**19}
    journal.journal_path(path).write_text(json.dumps(doc))
    with MemoryStore.open(path, author=AUTHOR) as store:
        store.remember("a note after an odd damage mark", project="webapp")


def test_a_fifo_sidecar_blocks_no_open_and_no_write(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _store(path)
    journal.journal_path(path).unlink()
    os.mkfifo(journal.journal_path(path))
    done: list[int] = []

    def work() -> None:
        with MemoryStore.open(path, author=AUTHOR) as store:
            store.remember("written beside a fifo", project="webapp")
            done.append(len(store.recent(limit=100, all_projects=True)))

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(20)  # a hang detector: the work takes well under a second
    blocked = worker.is_alive()
    if blocked:  # let the blocked open go on, so the test process can end
        fd = os.open(journal.journal_path(path), os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        worker.join(5)
    assert not blocked
    assert done == [3]


def test_a_sidecar_linked_to_an_endless_device_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _store(path)
    journal.journal_path(path).unlink()
    journal.journal_path(path).symlink_to("/dev/zero")
    assert journal.read(path) == (None, None)
    with MemoryStore.open(path, author=AUTHOR) as store:
        store.remember("written beside a link to /dev/zero", project="webapp")
    tally, damage = journal.read(path)  # replaced by a real sidecar
    assert tally is not None
    assert tally.memories == 3
    assert damage is None


def test_a_huge_sidecar_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _store(path)
    doc = _doc(path)
    doc["padding"] = "x" * 1_000_000  # read in full, twice, on every write
    journal.journal_path(path).write_text(json.dumps(doc))
    assert journal.read(path) == (None, None)


def test_a_store_recovered_elsewhere_and_moved_into_place_takes_writes(tmp_path: Path) -> None:
    """'sealmem recover --output X', then X moved to the store's name: the old sidecar
    (same store id, the damage mark, a higher count) must not refuse the new store."""
    path = tmp_path / "store.db"
    _store(path)
    _lose_writes(path)
    with MemoryStore.open(path, author=AUTHOR) as store, pytest.raises(DamagedStoreError):
        store.remember("refused", project="webapp")
    salvaged = tmp_path / "salvaged.db"
    recover(path, output=salvaged, now_ms=1_796_000_000_000)
    path.rename(tmp_path / "store.db.bad")
    salvaged.rename(path)
    with MemoryStore.open(path, author=AUTHOR) as store:
        store.remember("the first note after the recovery", project="webapp")
        assert len(store.recent(limit=100, all_projects=True)) == 3


def test_a_writer_still_open_over_an_in_place_recovery_raises_no_false_alarm(
    tmp_path: Path,
) -> None:
    """An MCP server keeps its connection while 'sealmem recover' salvages the store in
    place; its next writes are refused (they would land in the old file), and must
    not make the new store look like it lost writes either."""
    path = tmp_path / "store.db"
    _store(path, notes=4)
    with MemoryStore.open(path, author=AUTHOR) as server:
        recover(path, now_ms=1_796_000_000_000)
        for i in range(3):
            with pytest.raises(StoreReplacedError):
                server.remember(f"the server still writes {i}", project="webapp")
    with MemoryStore.open(path, author=AUTHOR) as store:
        store.remember("the user's next note", project="webapp")


def test_a_writer_takes_writes_again_after_a_salvage_that_gave_up(tmp_path: Path) -> None:
    """recover marks the store, takes its write lock once, then fails (Ctrl-C, a full
    disk, another writer holding the lock) and puts the journal back: an MCP server
    that tried to write meanwhile was refused, and must not stay refused for ever."""
    path = tmp_path / "store.db"
    with MemoryStore.open(path, author=AUTHOR) as server:
        server.remember("a note before the salvage", project="webapp")
        src = connect_readonly(path)
        try:
            before = _hold_writers(path)
            with pytest.raises(DamagedStoreError, match="being salvaged"):
                server.remember("a note during the salvage", project="webapp")
            _release(path, before)  # the salvage failed: the same file stays in place
        finally:
            src.close()
        assert journal.read(path)[1] is None
        server.remember("a note after the salvage gave up", project="webapp")
        assert len(server.recent(limit=10, all_projects=True)) == 2


@pytest.mark.slow
def test_a_writer_s_sidecar_update_never_lifts_a_salvage_hold(tmp_path: Path) -> None:
    """Another process writes without pause while 'sealmem recover' holds the store:
    its sidecar update after each commit (read, fsync, replace: milliseconds) must not
    lift the hold.  Before, the hold was a mark in that same sidecar, and a writer that
    read the sidecar just before the mark wrote it back without: most holds were gone
    within 50 ms, and the next writes landed in the file being salvaged (then lost)."""
    path = tmp_path / "store.db"
    _store(path, notes=1)
    script = (
        "from pathlib import Path\n"
        "from sealmem.client import MemoryStore\n"
        "from sealmem.client.store.connection import StoreError\n"
        f"with MemoryStore.open(Path({str(path)!r}), author='me') as store:\n"
        "    print('ready', flush=True)\n"
        "    for i in range(100000):\n"
        "        try:\n"
        "            store.remember(f'note {i} from the busy writer', project='webapp')\n"
        "        except StoreError:\n"
        "            pass\n"
    )
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready"
        lifted = 0
        for _ in range(20):
            src = connect_readonly(path)
            try:
                before = _hold_writers(path)
                time.sleep(0.05)
                lifted += journal.refusal(path) is None
                _release(path, before)
            finally:
                src.close()
            time.sleep(0.02)
    finally:
        writer.kill()
        writer.wait(timeout=30)
        if writer.stdout is not None:
            writer.stdout.close()
    assert lifted == 0, f"{lifted} of 20 holds were lifted by the writer"
