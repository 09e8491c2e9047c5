"""The write journal must never call a healthy store damaged, nor crash on its sidecar:
a sidecar that is garbage, huge, a FIFO or a link to a device, or dated out of range;
a store recovered elsewhere and moved into place; a writer still running over a
recovery."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store import journal
from sealmem.client.store.connection import DamagedStoreError, StoreReplacedError
from sealmem.client.store.recover import recover

AUTHOR = "me"


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
