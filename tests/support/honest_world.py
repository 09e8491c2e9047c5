"""An honest team as a transport serves it: paths -> bytes, and the reader that trusts them.

The layout mirrors DESIGN §6, relative to ``{root}/sealmem/{team}/``::

    roster/{version:08d}.json                 every roster version (readers fetch the chain)
    keyrings/{project}/{epoch:08d}.json       one keyring per project epoch
    snapshots/{project}/{writer}/manifest.json    the writer's latest manifest
    snapshots/{project}/{writer}/chunks/{id}      content-addressed chunks

:func:`build_world` makes a small team with real keys from fixed seeds and two
*views* of its transport: ``earlier`` (roster v1, alice's first snapshot) and
``current`` (roster v3 after adding members, a second project, and revoking
eve with a pin; snapshots of alice, bob and eve).  :func:`accept_view` is the
honest reader: it feeds a view through ``protocol/verify.py`` in dependency
order and opens every snapshot, so tests start from a state that trusts it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from sealmem.crypto import SUITE, ContentKey, MemberKey, NaclSuite
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.keyring import build_keyring
from sealmem.protocol.manifest import Head, Manifest
from sealmem.protocol.record import Record, new_memory_id
from sealmem.protocol.roster import Grant, Member, Pin, Revocation, Roster
from sealmem.protocol.snapshot import Snapshot, build_snapshot
from sealmem.protocol.state import TrustedState
from sealmem.protocol.verify import accept_keyring, accept_manifest, accept_roster, open_snapshot

__all__ = [
    "NAMES",
    "NOW",
    "READER_NOW",
    "TEAM",
    "Slot",
    "World",
    "accept_view",
    "build_world",
    "chunk_path",
    "keyring_path",
    "manifest_path",
    "open_view",
    "parse_path",
    "roster_path",
]

TEAM = "acme-team"
NOW = 1_760_000_000_000
READER_NOW = NOW + 60_000  # the reader's clock when it opens snapshots
NAMES = ("root", "alice", "bob", "carol", "eve", "outsider")


def roster_path(version: int) -> str:
    return f"roster/{version:08d}.json"


def keyring_path(project: str, epoch: int) -> str:
    return f"keyrings/{project}/{epoch:08d}.json"


def manifest_path(project: str, writer: str) -> str:
    return f"snapshots/{project}/{writer}/manifest.json"


def chunk_path(project: str, writer: str, chunk_id: str) -> str:
    return f"snapshots/{project}/{writer}/chunks/{chunk_id}"


@dataclass(frozen=True, slots=True)
class Slot:
    """What a path holds: ``kind`` is roster, keyring, manifest or chunk."""

    kind: str
    project: str = ""
    writer: str = ""
    number: int = 0  # roster version or keyring epoch
    chunk_id: str = ""


def parse_path(path: str) -> Slot:
    parts = path.split("/")
    if parts[0] == "roster" and len(parts) == 2:
        return Slot("roster", number=int(parts[1].removesuffix(".json")))
    if parts[0] == "keyrings" and len(parts) == 3:
        return Slot("keyring", project=parts[1], number=int(parts[2].removesuffix(".json")))
    if parts[0] == "snapshots" and len(parts) == 4 and parts[3] == "manifest.json":
        return Slot("manifest", project=parts[1], writer=parts[2])
    if parts[0] == "snapshots" and len(parts) == 5 and parts[3] == "chunks":
        return Slot("chunk", project=parts[1], writer=parts[2], chunk_id=parts[4])
    raise ValueError(f"path {path!r} is not in the sealmem folder layout")


class _Nonces:
    """Pinned nonces: a running counter, so snapshots are reproducible."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, size: int, /) -> bytes:
        self.n += 1
        return self.n.to_bytes(8, "big").rjust(size, b"\x00")


@dataclass
class World:
    suite: NaclSuite
    keys: dict[str, MemberKey]
    content_keys: dict[tuple[str, int], ContentKey]
    earlier: dict[str, bytes] = field(default_factory=dict)
    current: dict[str, bytes] = field(default_factory=dict)
    records: dict[tuple[str, str], list[Record]] = field(default_factory=dict)

    def kid(self, name: str) -> str:
        return self.keys[name].kid

    def pinned(self) -> TrustedState:
        return TrustedState.pin(self.suite, TEAM, self.keys["root"].sign_public)


def _record(key: MemberKey, project: str, i: int) -> Record:
    return Record(
        id=new_memory_id(NOW + i, i.to_bytes(10, "big")),
        project=project,
        kind="note",
        content=f"memory {i} of {project}",
        keywords=("test",),
        importance=0.5,
        author=key.kid,
        editor=key.kid,
        created_at=NOW + i,
        hlc=Hlc(NOW + i, 0),
    ).validate()


def build_world(records_per_snapshot: int = 4) -> World:
    """The deterministic team described in the module docstring."""
    keys = {n: MemberKey(bytes([i + 1]) * 32, bytes([i + 101]) * 32)
            for i, n in enumerate(NAMES)}  # fmt: skip
    world = World(SUITE, keys, {})
    ids = {n: k.kid for n, k in keys.items()}
    nonces = _Nonces()

    def member(name: str, role: str = "member") -> Member:
        k = keys[name]
        return Member(k.kid, name, k.sign_public, k.box_public, role, False)

    v1 = Roster(
        team=TEAM, version=1, prev=None, admins=(ids["root"],),
        members=(member("root", "admin"), member("alice")), projects={"app": 1},
        grants=(Grant(ids["alice"], "app"),), created_at=NOW,
    ).check(SUITE)  # fmt: skip
    v2 = v1.successor(
        SUITE, created_at=NOW + 2,
        members=(*v1.members, member("bob"), member("carol"), member("eve")),
        projects={"app": 2, "lib": 1},
        grants=(*v1.grants, Grant(ids["bob"], "app"), Grant(ids["carol"], "app", True, False),
                Grant(ids["eve"], "app"), Grant(ids["alice"], "lib"),
                Grant(ids["carol"], "lib", True, False)),
    ).check(SUITE)  # fmt: skip
    serial = 0

    def snapshot(
        name: str, project: str, epoch: int, rv: int, seq: int, prev: Manifest | None,
        heads: Iterable[Head] = (),
    ) -> Snapshot:  # fmt: skip
        nonlocal serial
        records = []
        for _ in range(records_per_snapshot):
            serial += 1
            records.append(_record(keys[name], project, serial))
        world.records[(name, project)] = records
        return build_snapshot(
            SUITE, world.content_keys[(project, epoch)], keys[name], team=TEAM,
            project=project, epoch=epoch, roster_version=rv, seq=seq,
            prev=None if prev is None else prev.hash(SUITE), records=records,
            random=nonces, heads=heads, created_at=NOW + seq,
        )  # fmt: skip

    def publish(view: dict[str, bytes], snap: Snapshot, chunks: Mapping[str, bytes]) -> None:
        m = snap.manifest
        view[manifest_path(m.project, m.writer)] = snap.envelope
        for ref in m.chunks:
            view[chunk_path(m.project, m.writer, ref.id)] = chunks[ref.id]

    def keyring(view: dict[str, bytes], roster: Roster, project: str) -> None:
        epoch = roster.projects[project]
        seed = (project.encode() * 32)[:31] + bytes([epoch])
        key = world.content_keys.setdefault((project, epoch), ContentKey(seed))
        view[keyring_path(project, epoch)] = build_keyring(key, roster, project).sign(keys["root"])

    earlier = world.earlier
    earlier[roster_path(1)] = v1.sign(keys["root"])
    keyring(earlier, v1, "app")
    alice1 = snapshot("alice", "app", 1, 1, 1, None)
    publish(earlier, alice1, alice1.new_chunks)

    current = world.current
    current.update(earlier)
    current[roster_path(2)] = v2.sign(keys["root"])
    keyring(current, v2, "app")
    keyring(current, v2, "lib")
    alice2 = snapshot("alice", "app", 2, 2, 2, alice1.manifest)
    eve1 = snapshot("eve", "app", 2, 2, 1, None)
    eve_pin = Pin(eve1.manifest.seq, eve1.manifest.hash(SUITE))
    v3 = v2.successor(
        SUITE, created_at=NOW + 3, projects={"app": 3, "lib": 1},
        revocations=(Revocation(ids["eve"], 3, {"app": eve_pin}),),
    ).check(SUITE)  # fmt: skip
    current[roster_path(3)] = v3.sign(keys["root"])
    keyring(current, v3, "app")
    alice3 = snapshot("alice", "app", 3, 3, 3, alice2.manifest)
    lib1 = snapshot("alice", "lib", 1, 3, 1, None)
    bob1 = snapshot("bob", "app", 3, 3, 1, None, heads=[alice3.manifest.head(SUITE)])
    for snap in (eve1, alice3, lib1, bob1):
        publish(current, snap, snap.new_chunks)
    del current[manifest_path("app", ids["alice"])]
    for ref in alice1.manifest.chunks:  # alice's first snapshot was superseded
        current.pop(chunk_path("app", ids["alice"], ref.id), None)
    publish(current, alice3, {**alice1.new_chunks, **alice2.new_chunks, **alice3.new_chunks})
    return world


def _ordered(objects: Mapping[str, bytes], kind: str) -> list[tuple[Slot, str]]:
    found = [(parse_path(p), p) for p in objects]
    return sorted(((s, p) for s, p in found if s.kind == kind), key=lambda sp: sp[1])


def accept_view(
    suite: NaclSuite, state: TrustedState, objects: Mapping[str, bytes]
) -> TrustedState:
    """Accept every new roster (by version), keyring and manifest of a view, as a reader would."""
    for slot, path in _ordered(objects, "roster"):
        if state.roster is None or slot.number > state.roster.version:  # fetch only new ones
            state, _ = accept_roster(suite, state, objects[path])
    for _, path in _ordered(objects, "keyring"):
        state, _ = accept_keyring(suite, state, objects[path])
    for slot, path in _ordered(objects, "manifest"):
        state, _ = accept_manifest(
            suite, state, objects[path], project=slot.project, writer=slot.writer
        )
    return state


def open_view(
    world: World,
    state: TrustedState,
    objects: Mapping[str, bytes],
    project: str,
    writer: str,
    reader: str = "carol",
) -> list[Record]:
    """Accept the manifest filed at (project, writer) and open its chunks from ``objects``.

    The epoch key is unwrapped from the trusted keyring with ``reader``'s key.
    """
    _, manifest = accept_manifest(
        world.suite, state, objects[manifest_path(project, writer)], project=project, writer=writer
    )
    chunks = {
        parse_path(p).chunk_id: data
        for p, data in objects.items()
        if p.startswith(f"snapshots/{project}/{writer}/chunks/")
    }
    keyring = state.keyring(project, manifest.epoch)
    if keyring is None:
        raise LookupError(f"no trusted keyring for {project!r} epoch {manifest.epoch}")
    member = world.keys[reader]
    key = ContentKey.unwrap(keyring.wraps[member.kid], member)
    return open_snapshot(world.suite, key, manifest, chunks, now_ms=READER_NOW)
