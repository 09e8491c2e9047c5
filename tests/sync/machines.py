"""One member's home on several "machines" (directories), for the own-chain tests: a home
copied to a second machine, a whole home or its ``store.db`` alone restored from a backup.

Works with the nodes of ``tests/sync/conftest.py`` (folder) and ``tests/hub/conftest.py``
(hub): ``make_team`` opens the node's team again over its own transport.
"""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from sealmem.client import MemoryStore
from sealmem.client.clock import now_ms
from sealmem.client.store.recover import recover
from sealmem.client.sync.session import Team

__all__ = ["backup", "clone", "close", "contents", "restore_home", "restore_store"]

N = TypeVar("N", bound=Any)
STORE_FILES = ("store.db", "store.db-wal", "store.db-shm", "sync.lock")


def backup(node: Any, dest: Path) -> Path:
    """A consistent copy of the node's whole home at ``dest`` (the store by SQLite's backup
    API, the rest as files): what a backup of the home taken now holds."""
    shutil.copytree(
        node.home, dest, ignore=lambda _d, names: [n for n in names if n in STORE_FILES]
    )
    target = sqlite3.connect(dest / "store.db")
    try:
        node.store.connection.backup(target)
    finally:
        target.close()
    return dest


def _reopen(node: Any, make_team: Callable[[Any], Team]) -> None:
    if node.team is not None:
        node.team.transport.close()
    node.store = MemoryStore.open(node.home / "store.db", author=node.key.kid)
    node.team = make_team(node)


def close(node: Any) -> None:
    """Close a node no world closes (a second machine)."""
    if node.team is not None:
        node.team.transport.close()
    node.store.close()


def clone(node: N, name: str, dest: Path, make_team: Callable[[Any], Team]) -> N:
    """The node's home copied to a second machine (``dest``): the same key, its own store."""
    backup(node, dest)
    other = dataclasses.replace(node, name=name, home=dest, team=None)
    _reopen(other, make_team)
    return other


def restore_home(node: Any, saved: Path, make_team: Callable[[Any], Team]) -> None:
    """The whole home (store, journal, keys, every file) put back as ``saved`` holds it."""
    node.store.close()
    shutil.rmtree(node.home)
    shutil.copytree(saved, node.home)
    _reopen(node, make_team)


def restore_store(node: Any, saved: Path, make_team: Callable[[Any], Team]) -> None:
    """``store.db`` alone put back from the backup ``saved``; its journal then finds
    committed writes gone, and, as it says, ``recover`` salvages it into a new store."""
    node.store.close()
    for name in STORE_FILES[:3]:
        (node.home / name).unlink(missing_ok=True)
    shutil.copyfile(saved / "store.db", node.home / "store.db")
    recover(node.home / "store.db", now_ms=now_ms())
    _reopen(node, make_team)


def contents(node: Any, project: str) -> set[str]:
    """The text of every live team memory of ``project`` in the node's store."""
    rows = node.store.connection.execute(
        "SELECT content FROM memories WHERE project = ? AND visibility = 'team' AND deleted = 0",
        (project,),
    )
    return {str(r[0]) for r in rows}
