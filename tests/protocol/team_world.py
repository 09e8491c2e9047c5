"""A small deterministic team for the protocol tests: real keys, real signatures.

Keys come from fixed seeds (``MemberKey(sign_seed, box_seed)``) and nonces from a counter,
so every object is reproducible; the verifier under test is the real one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from sealmem.crypto import SUITE, ContentKey, MemberKey
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.keyring import Keyring, build_keyring
from sealmem.protocol.manifest import Head
from sealmem.protocol.record import Record, new_memory_id
from sealmem.protocol.roster import Grant, Member, Roster
from sealmem.protocol.snapshot import PreviousSnapshot, Snapshot, build_snapshot
from sealmem.protocol.state import TrustedState
from sealmem.protocol.verify import accept_keyring, accept_roster

TEAM = "acme-team"
PROJECT = "webapp"
NOW = 1_760_000_000_000


def member_key(n: int) -> MemberKey:
    return MemberKey(bytes([n]) * 32, bytes([n + 100]) * 32)


def member_of(key: MemberKey, name: str, role: str = "member") -> Member:
    return Member(key.kid, name, key.sign_public, key.box_public, role, False)


class Counter:
    """Deterministic 'random' bytes: a running counter, for pinned nonces."""

    def __init__(self, start: int = 0) -> None:
        self.n = start

    def __call__(self, size: int) -> bytes:
        self.n += 1
        return self.n.to_bytes(8, "big").rjust(size, b"\x00")[:size]


def make_record(
    editor: MemberKey, i: int, *, project: str = PROJECT, content: str | None = None
) -> Record:
    rid = new_memory_id(NOW + i, i.to_bytes(10, "big"))
    return Record(
        id=rid,
        project=project,
        kind="note",
        content=f"memory number {i}" if content is None else content,
        keywords=("test",),
        importance=0.5,
        author=editor.kid,
        editor=editor.kid,
        created_at=NOW + i,
        hlc=Hlc(NOW + i, 0),
    )


@dataclass
class World:
    root: MemberKey = field(default_factory=lambda: member_key(1))
    alice: MemberKey = field(default_factory=lambda: member_key(2))
    bob: MemberKey = field(default_factory=lambda: member_key(3))
    mallory: MemberKey = field(default_factory=lambda: member_key(4))
    key1: ContentKey = field(default_factory=lambda: ContentKey(b"\x11" * 32))
    key2: ContentKey = field(default_factory=lambda: ContentKey(b"\x22" * 32))
    nonces: Counter = field(default_factory=Counter)

    def roster_v1(self) -> Roster:
        members = (
            member_of(self.root, "root", "admin"),
            member_of(self.alice, "alice"),
            member_of(self.bob, "bob"),
        )
        grants = tuple(Grant(m.kid, PROJECT, True, True) for m in members)
        return Roster(
            team=TEAM,
            version=1,
            prev=None,
            admins=(self.root.kid,),
            members=members,
            projects={PROJECT: 1},
            grants=grants,
            created_at=NOW,
        ).check(SUITE)

    def pinned(self) -> TrustedState:
        return TrustedState.pin(SUITE, TEAM, self.root.sign_public)

    def keyring(self, roster: Roster, key: ContentKey | None = None) -> Keyring:
        return build_keyring(key or self.key1, roster, PROJECT)

    def state(self) -> TrustedState:
        """Pinned root + roster v1 + keyring epoch 1, all accepted through the verifier."""
        roster = self.roster_v1()
        state, _ = accept_roster(SUITE, self.pinned(), roster.sign(self.root))
        state, _ = accept_keyring(SUITE, state, self.keyring(roster).sign(self.root))
        return state

    def snapshot(
        self,
        writer: MemberKey,
        records: Iterable[Record],
        *,
        seq: int = 1,
        prev: str | None = None,
        epoch: int = 1,
        roster_version: int = 1,
        heads: Iterable[Head] = (),
        key: ContentKey | None = None,
        previous: PreviousSnapshot | None = None,
        project: str = PROJECT,
    ) -> Snapshot:
        return build_snapshot(
            SUITE,
            key or self.key1,
            writer,
            team=TEAM,
            project=project,
            epoch=epoch,
            roster_version=roster_version,
            seq=seq,
            prev=prev,
            records=records,
            random=self.nonces,
            heads=heads,
            created_at=NOW,
            previous=previous,
        )


def next_roster(old: Roster, **changes: object) -> Roster:
    """The successor of ``old`` with ``changes``, checked for consistency."""
    return old.successor(SUITE, created_at=NOW + old.version, **changes).check(SUITE)
