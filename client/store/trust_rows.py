"""The reader's trust settings and verdicts, as rows (schema versions 3 and 4).

``member_trust`` holds what a person set for a member (a member without a row has
the default of :func:`sealmem.client.recall.trust.default_state`); ``verdicts`` what a
person decided about one version of a teammate's memory waiting for review, or of a
proposal: ``accepted`` or ``dismissed``.  Neither is part of a memory: they are the
reader's own view, never published to the team; the trust states (not the verdicts)
follow the person to its other devices, sealed (:mod:`sealmem.client.sync.private_chains`):
a row's ``device`` is the sibling that set it ('' for this device), merged by
``(set_at, counter, device)``, last writer wins.
"""

from __future__ import annotations

import hashlib
import sqlite3

from ...protocol import canonical
from ...protocol.hlc import ZERO, Hlc, tick
from ...protocol.record import Record
from .connection import transaction

__all__ = [
    "VersionKey",
    "decisions_here",
    "member_settings",
    "merge_decision",
    "save_member_state",
    "save_verdict",
    "verdicts",
    "version_key",
]

VersionKey = tuple[str, int, int, str, str]
"""(memory id, hlc wall, hlc counter, editor, digest): one version of one memory.  The
digest (of its canonical bytes) tells apart two versions an editor signed with one id,
clock and editor: a verdict on one must not pass to the other."""


def version_key(record: Record) -> VersionKey:
    digest = hashlib.blake2b(canonical.encode(record.to_wire()), digest_size=16).hexdigest()
    return (record.id, record.hlc.wall, record.hlc.counter, record.editor, digest)


def member_settings(conn: sqlite3.Connection) -> dict[str, str]:
    """``{member id: state}`` for every member a person set."""
    return {str(r[0]): str(r[1]) for r in conn.execute("SELECT member, state FROM member_trust")}


def save_member_state(conn: sqlite3.Connection, member: str, state: str, now: int) -> None:
    """A person's decision on this device (it travels to the member's other devices),
    stamped above the decision it replaces (a hybrid logical clock): a sibling's decision
    stamped by a clock running ahead does not outlive a later one made here."""
    with transaction(conn):
        row = conn.execute(
            "SELECT set_at, counter FROM member_trust WHERE member = ?", (member,)
        ).fetchone()
        last = ZERO if row is None else Hlc(int(row[0]), int(row[1]))
        wall, counter = tick(last, now)
        conn.execute(
            "INSERT OR REPLACE INTO member_trust (member, state, set_at, device, counter) "
            "VALUES (?, ?, ?, '', ?)",
            (member, state, wall, counter),
        )


def decisions_here(conn: sqlite3.Connection) -> list[tuple[str, str, int, int]]:
    """(member, state, set_at, counter) of every decision made on this device."""
    rows = conn.execute(
        "SELECT member, state, set_at, counter FROM member_trust WHERE device = '' ORDER BY member"
    )
    return [(str(r[0]), str(r[1]), int(r[2]), int(r[3])) for r in rows]


def merge_decision(
    conn: sqlite3.Connection, me: str, device: str, member: str, state: str, at: tuple[int, int]
) -> bool:
    """Keep ``device``'s decision on ``member`` if it is the last one written: the highest
    (set_at, counter, device kid), this device's decisions counting under ``me``."""
    row = conn.execute(
        "SELECT set_at, counter, device FROM member_trust WHERE member = ?", (member,)
    ).fetchone()
    held = None if row is None else (int(row[0]), int(row[1]), str(row[2]) or me)
    # the protocol's trust objects (8 ms of imports) load when a decision is merged, never
    # in a process that only reads the states (a prompt hook's recall)
    from ...protocol.private_trust import replaces

    if not replaces((*at, device), held):
        return False
    conn.execute(
        "INSERT OR REPLACE INTO member_trust (member, state, set_at, device, counter) "
        "VALUES (?, ?, ?, ?, ?)",
        (member, state, at[0], device, at[1]),
    )
    return True


def verdicts(conn: sqlite3.Connection) -> dict[VersionKey, str]:
    """Every verdict a person gave, by version."""
    rows = conn.execute("SELECT id, hlc_wall, hlc_counter, editor, digest, verdict FROM verdicts")
    return {(str(r[0]), int(r[1]), int(r[2]), str(r[3]), str(r[4])): str(r[5]) for r in rows}


def save_verdict(conn: sqlite3.Connection, key: VersionKey, verdict: str, now: int) -> None:
    with transaction(conn):
        conn.execute(
            "INSERT OR REPLACE INTO verdicts (id, hlc_wall, hlc_counter, editor, digest, "
            "verdict, decided_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (*key, verdict, now),
        )
