"""The full manifests that delta manifests are listed against, kept per chain.

A delta (``sealmem/manifest/v2``) lists only the chunks changed since a full manifest
of the same chain, its base.  This store keeps, per (writer, project), the newest full
manifest it accepted or published (``team_objects`` kind ``manifest-base``), so that a
delta is rebuilt without reading a manifest of one ref per bucket from the transport at
every sync; a base it does not hold is looked for in the transport, by seq, and taken
only if its body hashes to the one the delta signed
(:func:`sealmem.protocol.bases.rebuild`).

A v3 delta lists its witnessed heads against its base as well, so a reader needs the
base before it accepts the delta (SPEC.md "Witness encoding"): a :class:`Finder` lives
for one project's pull, rebuilds deltas for the floors it learns and for the manifests
it accepts, and reads each base from the transport at most once (one it did not find
there is not asked for again in that pull).
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass

from ...crypto import SUITE
from ...protocol import reasons
from ...protocol.bases import rebuild_with
from ...protocol.errors import Rejected
from ...protocol.manifest import Manifest
from .transport import Transport

__all__ = ["Finder", "Found", "find", "load", "save"]

_KIND = "manifest-base"


def _name(writer: str, project: str) -> str:
    return f"{project}/{writer}"


def load(conn: sqlite3.Connection, writer: str, project: str) -> bytes | None:
    """The full manifest envelope kept for (writer, project), if any."""
    row = conn.execute(
        "SELECT data FROM team_objects WHERE kind = ? AND name = ?",
        (_KIND, _name(writer, project)),
    ).fetchone()
    return None if row is None else bytes(row[0])


def save(conn: sqlite3.Connection, writer: str, project: str, data: bytes, now: int) -> None:
    """Keep ``data`` (a full manifest envelope) as the base of (writer, project)."""
    conn.execute(
        "INSERT OR REPLACE INTO team_objects (kind, name, data, accepted_at) VALUES (?, ?, ?, ?)",
        (_KIND, _name(writer, project), data, now),
    )


@dataclass(frozen=True)
class Found:
    """A delta rebuilt: the complete manifest, and the base's bytes when they came from
    the transport (keep them with what the delta's snapshot commits; None: already kept)."""

    manifest: Manifest
    fetched: bytes | None


def find(conn: sqlite3.Connection, transport: Transport, m: Manifest) -> Found:
    """``m`` with its whole chunk list (a full manifest comes back as is), rebuilt from
    the base kept here, else from the transport's copy (read only then).  Raise
    ``Rejected`` (``missing-base``, ``tampered``) when it cannot be rebuilt."""
    return Finder(conn, transport).find(m)


class Finder:
    """:func:`find` for the deltas of one pull, each base read once (kept or fetched)."""

    def __init__(self, conn: sqlite3.Connection, transport: Transport) -> None:
        self.conn, self.transport = conn, transport
        self._bases: dict[tuple[str, str, str], tuple[bytes, bool]] = {}  # data, fetched
        self._missing: set[tuple[str, str, str]] = set()  # not in the transport this pull

    def find(self, m: Manifest) -> Found:
        """``m`` whole, and the base's bytes when the transport gave them (to keep with
        the snapshot; also for an ``m`` already rebuilt by :meth:`rebuild`)."""
        delta = m.delta
        if delta is None:
            return Found(m, None)
        slot = (m.writer, m.project, delta.base_hash)
        seen = self._bases.get(slot)
        if seen is not None:
            whole = m if m.complete else rebuild_with(SUITE, m, seen[0], ())[0]
            return Found(whole, seen[0] if seen[1] else None)
        if m.complete:
            return Found(m, None)
        kept = load(self.conn, m.writer, m.project)
        if kept is not None:
            with contextlib.suppress(Rejected):  # a damaged copy is passed over
                whole = rebuild_with(SUITE, m, kept, ())[0]
                self._bases[slot] = (kept, False)
                return Found(whole, None)
        copies: list[bytes] = []
        if slot not in self._missing:  # (a base the transport did not have is not asked again)
            copies = self.transport.base_manifests(m.project, m.writer, delta.base_seq)
        try:
            rebuilt, base = rebuild_with(SUITE, m, None, copies)
        except Rejected as exc:
            if exc.reason == reasons.MISSING_BASE:
                self._missing.add(slot)
            raise
        if base is not None:
            self._bases[slot] = (base.data, True)
        return Found(rebuilt, None if base is None else base.data)

    def rebuild(self, m: Manifest) -> Manifest:
        """``m`` whole (what :func:`~sealmem.protocol.verify.accept_manifest` asks)."""
        return self.find(m).manifest
