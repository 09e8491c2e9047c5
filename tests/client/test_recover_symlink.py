"""``sealmem recover`` of a store reached through a symlink (a home whose store lives on
another disk) salvages the file the link points to, and keeps the link.

Before, it renamed the link itself to ``store.db.damaged-<time>`` and put the salvaged
store where the link was: the link was gone, the damaged file and its WAL stayed on
the other disk under their own name, and the "damaged copy" was a link to them.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store import journal, recover
from sealmem.client.store.connection import StoreReplacedError

AUTHOR = "me"
NOW = 1_796_000_000_000


def _linked_store(tmp_path: Path, notes: int = 3) -> tuple[Path, Path]:
    real = tmp_path / "disk" / "store.db"
    real.parent.mkdir()
    link = tmp_path / "home" / "store.db"
    link.parent.mkdir()
    link.symlink_to(real)
    with MemoryStore.open(link, author=AUTHOR) as store:
        for i in range(notes):
            store.remember(f"note number {i} on the other disk", project="webapp")
    return real, link


def test_recover_through_a_symlink_keeps_the_link_and_the_damaged_copy_beside_the_target(
    tmp_path: Path,
) -> None:
    real, link = _linked_store(tmp_path)
    result = recover.recover(link, now_ms=NOW)
    assert result.recovered["memories"] == 3
    assert link.is_symlink()
    assert os.readlink(link) == str(real)
    assert real.is_file()
    assert not real.is_symlink()
    assert result.damaged is not None
    assert result.damaged.parent == real.parent
    assert result.damaged.is_file()
    assert not result.damaged.is_symlink()
    damaged = sqlite3.connect(f"file:{result.damaged}?mode=ro", uri=True)
    try:  # the damaged copy is the old store's file, with its rows
        assert damaged.execute("SELECT count(*) FROM memories").fetchone()[0] == 3
    finally:
        damaged.close()
    assert sorted(p.name for p in link.parent.iterdir()) == ["store.db"]  # nothing beside
    assert not os.path.lexists(journal.holding_path(link))
    assert not os.path.lexists(journal.holding_path(real))
    with MemoryStore.open(link, author=AUTHOR) as store:  # the link reaches the new store
        assert len(store.recent(limit=10, all_projects=True)) == 3
        store.remember("the first note after the recovery", project="webapp")
    with MemoryStore.open(real, author=AUTHOR) as store:
        assert len(store.recent(limit=10, all_projects=True)) == 4


def test_writers_through_the_link_are_held_while_the_target_is_salvaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer holds the store by the link's name: the hold must be where it looks."""
    real, link = _linked_store(tmp_path)
    seen: list[tuple[bool, bool]] = []
    copy = recover._copy

    def watched(*args: object) -> None:
        seen.append(
            (
                os.path.lexists(journal.holding_path(link)),
                os.path.lexists(journal.holding_path(real)),
            )
        )
        copy(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(recover, "_copy", watched)
    with MemoryStore.open(link, author=AUTHOR) as server:
        recover.recover(link, now_ms=NOW)
        assert seen == [(True, True)]
        with pytest.raises(StoreReplacedError):  # its handle is on the old file
            server.remember("the server still writes", project="webapp")


def test_writers_through_every_link_of_a_chain_are_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """home/store.db -> home/current.db (relative) -> disk/store.db: a writer that opened
    the store by the middle name must find the hold there too, or its write lands in
    the damaged file being moved aside."""
    real = tmp_path / "disk" / "store.db"
    real.parent.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    middle = home / "current.db"
    middle.symlink_to(os.path.relpath(real, home))
    link = home / "store.db"
    link.symlink_to("current.db")
    with MemoryStore.open(link, author=AUTHOR) as store:
        store.remember("a note reached through two links", project="webapp")
    seen: list[tuple[bool, ...]] = []
    copy = recover._copy

    def watched(*args: object) -> None:
        seen.append(tuple(os.path.lexists(journal.holding_path(p)) for p in (link, middle, real)))
        copy(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(recover, "_copy", watched)
    with MemoryStore.open(middle, author=AUTHOR) as server:
        recover.recover(link, now_ms=NOW)
        assert seen == [(True, True, True)]
        with pytest.raises(StoreReplacedError):  # its handle is on the old file
            server.remember("the server still writes", project="webapp")
    assert os.readlink(link) == "current.db"  # both links stay as they were
    assert not any(journal.holding_path(p).exists() for p in (link, middle, real))
    with MemoryStore.open(link, author=AUTHOR) as store:
        assert len(store.recent(limit=10, all_projects=True)) == 1
