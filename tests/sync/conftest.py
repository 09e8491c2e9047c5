"""A team of real members for the sync tests: each its own home, store and key; one folder.

``world`` builds admin + alice + bob + carol through the Python API (create,
invite, join requests, one approval), all over one temp folder.  Each member
has its own clock so a test can skew one by a day.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sealmem.client import Memory, MemoryStore
from sealmem.client.identity import load_member_key
from sealmem.client.sync.engine import SyncSummary, sync
from sealmem.client.sync.session import Team
from sealmem.client.team.admin import create_team, invite
from sealmem.client.team.approval import approve
from sealmem.client.team.invite import read_invite
from sealmem.client.team.join import join_team
from sealmem.crypto import MemberKey

PROJECT = "webapp"
DAY_MS = 24 * 60 * 60 * 1000


def every_file(data: bytes, project: str, writer: str, seq: int) -> bool:
    """The ``ours`` of a folder opened with no member key: every manifest file counts."""
    return True


@dataclass
class Node:
    name: str
    home: Path
    key: MemberKey
    store: MemoryStore
    offset_ms: int = 0
    team: Team | None = None

    def clock(self) -> int:
        return time.time_ns() // 1_000_000 + self.offset_ms

    @property
    def t(self) -> Team:
        assert self.team is not None
        return self.team

    def sync(self) -> SyncSummary:
        return sync(self.t, clock=self.clock)

    def remember(self, text: str, **kw: object) -> Memory:
        kw.setdefault("project", PROJECT)
        return self.store.remember(text, **kw).memory  # type: ignore[arg-type]

    def written_by(self, writer: Node) -> int:
        """How many memories this node holds whose current version ``writer`` wrote."""
        (n,) = self.store.connection.execute(
            "SELECT COUNT(*) FROM memories WHERE editor = ?", (writer.key.kid,)
        ).fetchone()
        return int(n)

    def memories(self) -> dict[str, Memory]:
        return {m.id: m for m in self.store.recent(limit=10_000, all_projects=True)}

    def winners(self) -> dict[str, tuple[object, ...]]:
        """Every winning version (tombstones too) as comparable tuples."""
        rows = self.store.connection.execute(
            "SELECT id, hlc_wall, hlc_counter, editor, content, keywords_json, deleted, kind "
            "FROM memories WHERE visibility = 'team' ORDER BY id"
        ).fetchall()
        return {r[0]: tuple(r) for r in rows}


@dataclass
class World:
    folder: Path
    root: Path
    nodes: dict[str, Node] = field(default_factory=dict)

    def node(self, name: str, offset_ms: int = 0) -> Node:
        home = self.root / name
        home.mkdir()
        key = load_member_key(home)

        def clock() -> int:
            return time.time_ns() // 1_000_000 + offset_ms

        store = MemoryStore.open(home / "store.db", author=key.kid, clock=clock)
        node = Node(name, home, key, store, offset_ms)
        self.nodes[name] = node
        return node

    def add_members(self, *names: str, offsets: dict[str, int] | None = None) -> list[Node]:
        admin = self.nodes["admin"]
        inv = read_invite(invite(admin.t, admin.clock()), now=admin.clock())
        added = []
        for name in names:
            node = self.node(name, (offsets or {}).get(name, 0))
            join_team(node.home, inv, node.key, name=name, now=node.clock())
            added.append(node)
        approve(
            admin.t,
            [n.key.kid for n in added],
            projects=None,
            read=True,
            write=True,
            now=admin.clock(),
        )
        for node in added:
            node.team = Team.open(node.home, node.store, node.key)
        return added

    def sync_all(self, rounds: int = 2) -> None:
        for _ in range(rounds):
            for node in self.nodes.values():
                node.sync()

    def close(self) -> None:
        for node in self.nodes.values():
            node.store.close()


def make_world(tmp_path: Path, *names: str, offsets: dict[str, int] | None = None) -> World:
    folder = tmp_path / "shared-folder"
    folder.mkdir()
    world = World(folder, tmp_path)
    admin = world.node("admin")
    admin.team = create_team(
        admin.home, admin.store, admin.key, name="Acme", folder=str(folder),
        projects=[PROJECT, "shared"], admin_name="admin", now=admin.clock(),
    )  # fmt: skip
    if names:
        world.add_members(*names, offsets=offsets)
    return world


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path, "alice", "bob", "carol")
    try:
        yield w
    finally:
        w.close()
