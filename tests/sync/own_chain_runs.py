"""The two-machine and restore runs of the own-chain tests, over any transport (the folder
tests and the hub tests call them with their own world and ``make_team``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sealmem.client.sync import replica
from sealmem.client.sync.engine import sync
from sealmem.client.sync.own_chain import KeyInUse, is_adopted
from sealmem.client.sync.session import Team

from .machines import backup, clone, contents, restore_home, restore_store

__all__ = ["READ_BACK", "alternate", "restore_again", "restore_run"]

PROJECT = "webapp"
READ_BACK = "this store was behind its own chain"


def _said(summary: Any, words: str) -> list[str]:
    return [w for w in summary.warnings if words in w]


def alternate(
    laptop: Any, bob: Any, root: Path, make_team: Callable[[Any], Team], chain: Callable[[], Any]
) -> Any:
    """A home copied to a second machine, both writing and syncing in turn for 3 rounds:
    each side reads the other's head back once, then the one behind the other's write
    stops as ``key-in-use`` before writing; return the desktop node (to close)."""
    laptop.remember("alice's first note, written before the home was copied")
    laptop.sync()
    desktop = clone(laptop, "desktop", root / "alice-desktop", make_team)
    written: dict[str, set[str]] = {"alice": set(), "desktop": set()}
    stopped: list[str] = []
    seen_by_bob: set[str] = set()
    for n in range(3):
        for who in (laptop, desktop):
            text = f"{who.name} round {n}: the build cache key is v{n}"
            who.remember(text)
            written[who.name].add(text)
            before = chain()
            try:
                who.sync()
            except KeyInUse as exc:
                stopped.append(f"{who.name}: {exc}")
                assert chain() == before  # nothing was written over
            bob.sync()
            now = contents(bob, PROJECT)
            assert seen_by_bob <= now  # no flip-flop: what bob had stays
            seen_by_bob = now
    assert [line.split(": ", 2)[:2] for line in stopped] == [["desktop", "key-in-use"]] * 2
    assert all("\n" not in line for line in stopped)
    for node in (laptop, desktop):  # what each side wrote is still in the store that wrote it
        assert written[node.name] <= contents(node, PROJECT)
    # each side read the other's published writes back once
    assert "desktop round 0: the build cache key is v0" in contents(laptop, PROJECT)
    assert "alice round 0: the build cache key is v0" in contents(desktop, PROJECT)
    published = written["alice"] | {"desktop round 0: the build cache key is v0"}
    assert published | {"alice's first note, written before the home was copied"} <= seen_by_bob
    return desktop


def restore_run(
    alice: Any, root: Path, make_team: Callable[[Any], Team], *, whole_home: bool
) -> tuple[list[str], Path]:
    """alice writes 50, a backup is taken at 20, restored (the whole home, or ``store.db``
    alone), synced: all 50 come back as written here, the chain goes on above the
    transport's head; return the texts (a late joiner must get them all) and the backup."""
    texts = [f"alice note {i}: service {i} listens on port {8000 + i}" for i in range(50)]
    for text in texts[:20]:
        alice.remember(text)
    alice.sync()
    saved = backup(alice, root / "alice-backup")
    for i, text in enumerate(texts[20:]):
        alice.remember(text)
        if i % 10 == 9:
            alice.sync()
    ahead = replica.load_own_chain(alice.store.connection, PROJECT)
    assert ahead is not None
    (restore_home if whole_home else restore_store)(alice, saved, make_team)
    assert contents(alice, PROJECT) == set(texts[:20])
    summary = alice.sync()
    assert len(_said(summary, READ_BACK)) == 1, summary.warnings
    assert contents(alice, PROJECT) == set(texts)
    rows = alice.store.connection.execute(
        "SELECT DISTINCT transport FROM memories WHERE project = ?", (PROJECT,)
    ).fetchall()
    assert [tuple(r) for r in rows] == [("local",)]  # written here, as before the restore
    own = replica.load_own_chain(alice.store.connection, PROJECT)
    assert own is not None
    assert own.seq > ahead.seq
    assert is_adopted(alice.home)
    alice.remember("alice after the restore")
    assert not _said(alice.sync(), READ_BACK)
    return [*texts, "alice after the restore"], saved


def restore_again(alice: Any, saved: Path, make_team: Callable[[Any], Team]) -> None:
    """A second restore after an adopt reads as a copy until the person confirms."""
    restore_store(alice, saved, make_team)
    with pytest.raises(KeyInUse):
        alice.sync()
    summary = sync(alice.t, adopt=True)
    assert len(_said(summary, READ_BACK)) == 1
