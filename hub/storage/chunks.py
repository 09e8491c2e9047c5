"""The chunk rules of every hub storage: a blob is durable before the row naming it
commits, a row is deleted before its blob, so a crash leaves at worst a blob no row
names; such orphans go only past a minimum age (a younger one may belong to a put
still in flight on another replica); a row whose blob is gone or damaged is dropped
(:meth:`ChunkRules.chunk`, :meth:`ChunkRules.scrub`), so that the hub reports the
chunk missing and its writer uploads it again (a put always rewrites the blob).

:class:`ChunkRules`, the base of :class:`~sealmem.hub.storage.sql.Storage`, keeps
them once over the chunk rows (``chunk_row_*``, ``chunk_rows_*``,
``missing_chunks``) and the storage's
:class:`~sealmem.hub.storage.blobs.BlobStore`.  The row primitives re-check their
conditions inside their own transaction: a row refreshed or referenced meanwhile
is kept.  See :mod:`sealmem.hub.storage` for the whole seam.

A dropped row is the hub's mark on the writer's slot: :meth:`ChunkRules.lost_chunks`
lists the ids its kept manifests name without a row, which the writer reads at its
next sync (``GET .../seqs``) and publishes again (SPEC "Self-repair").

One race is left on purpose, because it heals: a blob deleted (as an orphan,
or after its row) at the moment the same chunk is uploaded again can leave a
row without its blob.  :meth:`ChunkRules.chunk` then drops the row, the hub
reports the chunk missing, and the writer publishes that bucket again.
"""

from __future__ import annotations

import abc
import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .blobs import BlobEntry, BlobKey, BlobStore
from .dialect import Conn, Dialect
from .feed import Feed
from .values import Quota, QuotaExceeded, ScrubReport
from .writes import MEMBER_BYTES, PART, TEAM_BYTES, TeamWrite, charge, missing_ids

__all__ = ["ANY_AGE_MS", "Check", "ChunkRules"]

log = logging.getLogger("sealmem.hub")

_PAGE = 500
Check = Callable[[int | None], None]
"""Run inside a chunk row's transaction with the team's generation read there (None: the
team has no row); it raises to refuse the row."""

#: a bound no stored_at reaches: "whatever its age"
ANY_AGE_MS = 2**62
_KEY = "team = ? AND project = ? AND writer = ? AND id = ?"
_UNREFERENCED = (
    "NOT EXISTS (SELECT 1 FROM manifest_chunks r WHERE r.team = chunks.team AND "
    "r.project = chunks.project AND r.writer = chunks.writer AND r.id = chunks.id)"
)


class ChunkRules(abc.ABC):
    """A storage's engine access, its chunk rows, and chunks as blob + row in the one
    safe order; see the module docstring."""

    dialect: Dialect

    def __init__(self, blobs: BlobStore, quota: Quota | None = None) -> None:
        self.blobs = blobs
        self.quota = quota or Quota()

    def close(self) -> None:
        self.blobs.close()

    def feed(self) -> Feed:
        """Wake-ups of long-polling readers (in-process unless the backend shares them)."""
        return Feed()

    @abc.abstractmethod
    def _read(self, sql: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """The rows of one statement, outside any write (each read its own snapshot)."""

    @abc.abstractmethod
    def _tx(self, *teams: str, grouped: bool = False) -> contextlib.AbstractContextManager[Conn]:
        """A write transaction holding the write locks of ``teams``, committed (durably)
        on a normal exit.  ``grouped``: a write that changes nothing other writes verify
        against (a manifest, a chunk row), which the backend may commit together with
        others (SQLite's group commit)."""

    def usage(self, team: str) -> int:
        """Bytes the team holds (objects and chunks)."""
        return int(self._read(TEAM_BYTES, (team,))[0][0])

    def member_usage(self, team: str, member: str) -> int:
        """Bytes of the member's chunks and manifests (:data:`TEAM_OWNER`: team objects)."""
        rows = self._read(MEMBER_BYTES, (team, member))
        return int(rows[0][0]) if rows else 0

    # -- chunk rows: for the methods below, not for the app ----------------------------

    def missing_chunks(self, team: str, project: str, writer: str, ids: Iterable[str]) -> list[str]:
        """The ids among ``ids`` the writer's slot holds no row for, sorted."""
        return missing_ids(self._read, (team, project, writer), ids)

    def lost_chunks(self, team: str, project: str, writer: str, limit: int) -> list[str]:
        """The ids the writer's kept manifests name that its slot holds no row for (the
        hub dropped them: a read or a scrub found the blob gone or damaged), those of the
        newest manifests first, at most ``limit``: the marks the writer reads at its next
        sync (it republishes those its newest manifest lists)."""
        rows = self._read(
            "SELECT r.id, MAX(r.seq) FROM manifest_chunks r WHERE r.team = ? AND r.project = ? "
            "AND r.writer = ? AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.team = r.team "
            "AND c.project = r.project AND c.writer = r.writer AND c.id = r.id) "
            "GROUP BY r.id ORDER BY MAX(r.seq) DESC, r.id LIMIT ?",
            (team, project, writer, limit),
        )
        return [str(i) for i, _ in rows]

    def chunk_row_add(
        self, key: BlobKey, size: int, now_ms: int, check: Check | None = None
    ) -> bool:
        """Insert the row (True), or refresh its stored_at if there (False); the
        writer's and the team's data quota, and ``check`` (given the team's generation
        as the transaction reads it; it raises to refuse), checked in the same
        transaction."""
        with self._tx(key.team, grouped=True) as conn:
            if check is not None:
                check(TeamWrite(conn, key.team, self.quota, self.dialect).generation)
            again = conn.execute(
                "UPDATE chunks SET stored_at = CASE WHEN stored_at < ? THEN ? ELSE stored_at "
                f"END WHERE {_KEY}",
                (now_ms, now_ms, *key.parts()),
            )
            if again.rowcount:
                return False
            charge(conn, self.quota, key.team, key.writer, size)
            conn.execute(
                "INSERT INTO chunks (team, project, writer, id, size, stored_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (*key.parts(), size, now_ms),
            )
            return True

    def chunk_rows(self, after: BlobKey | None, limit: int) -> list[tuple[BlobKey, int]]:
        """(key, size) of every chunk row in key order, after ``after``: a page."""
        start = after.parts() if after is not None else ("", "", "", "")
        rows = self._read(
            "SELECT team, project, writer, id, size FROM chunks "
            "WHERE (team, project, writer, id) > (?, ?, ?, ?) "
            "ORDER BY team, project, writer, id LIMIT ?",
            (*start, limit),
        )
        return [(BlobKey(str(t), str(p), str(w), str(i)), int(n)) for t, p, w, i, n in rows]

    def chunk_rows_named(self, keys: Sequence[BlobKey]) -> set[BlobKey]:
        """Those of ``keys`` that have a row."""
        found: set[BlobKey] = set()
        for i in range(0, len(keys), PART // 4):
            part = keys[i : i + PART // 4]
            marks = ", ".join(["(?, ?, ?, ?)"] * len(part))
            rows = self._read(
                "SELECT team, project, writer, id FROM chunks "
                f"WHERE (team, project, writer, id) IN (VALUES {marks})",
                [name for key in part for name in key.parts()],
            )
            found.update(BlobKey(str(t), str(p), str(w), str(c)) for t, p, w, c in rows)
        return found

    def chunk_rows_unreferenced(
        self,
        stored_before_ms: int,
        *,
        team: str | None = None,
        writer: str | None = None,
        limit: int = _PAGE,
    ) -> list[BlobKey]:
        """Chunks no kept manifest of their slot names, stored before the bound."""
        where: list[str] = ["stored_at < ?"]
        args: list[object] = [stored_before_ms]
        for column, value in (("team", team), ("writer", writer)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        rows = self._read(
            f"SELECT team, project, writer, id FROM chunks WHERE {' AND '.join(where)} "
            f"AND {_UNREFERENCED} LIMIT ?",
            (*args, limit),
        )
        return [BlobKey(str(t), str(p), str(w), str(i)) for t, p, w, i in rows]

    def chunk_rows_remove(
        self, keys: Sequence[BlobKey], *, stored_before_ms: int, unreferenced: bool
    ) -> list[BlobKey]:
        """Delete those rows still stored before the bound (and, if ``unreferenced``,
        still named by no kept manifest), in one transaction; the usage goes down by
        their sizes.  Return the keys deleted."""
        gone: list[BlobKey] = []
        if not keys:
            return gone
        sql = f"DELETE FROM chunks WHERE {_KEY} AND stored_at < ?"
        sql += f" AND {_UNREFERENCED} RETURNING size" if unreferenced else " RETURNING size"
        with self._tx(*(k.team for k in keys)) as conn:
            for key in keys:
                row = conn.execute(sql, (*key.parts(), stored_before_ms)).fetchone()
                if row is not None:
                    charge(conn, None, key.team, key.writer, -int(row[0]))
                    gone.append(key)
        return gone

    # -- chunks: the blob/row ordering, once for every backend ------------------------

    def put_chunk(
        self,
        team: str,
        project: str,
        writer: str,
        chunk_id: str,
        data: bytes,
        now_ms: int,
        check: Check | None = None,
    ) -> bool:
        """Store a chunk whose id the caller checked: blob durable first, then the row.

        Putting an id already held rewrites the blob (a damaged one is repaired) and
        refreshes its age; False when the row was already there.  ``check`` runs inside
        the row's transaction, given the team's generation there (what it raises
        refuses the row; the blob is left an orphan)."""
        key = BlobKey(team, project, writer, chunk_id)
        self._check_room(team, writer, len(data))
        self.blobs.put(key, data)
        try:
            return self.chunk_row_add(key, len(data), now_ms, check)
        except QuotaExceeded:
            if not self.chunk_rows_named([key]):
                self.blobs.delete(key)
            raise

    def _check_room(self, team: str, writer: str, incoming: int) -> None:
        """Refuse before writing a blob that the transaction would refuse anyway."""
        self.quota.check(
            team,
            writer,
            incoming,
            lambda: self.usage(team),
            lambda: self.member_usage(team, writer),
        )

    def chunk(self, team: str, project: str, writer: str, chunk_id: str) -> bytes | None:
        """The chunk's bytes; a row whose blob is gone is dropped (the writer re-uploads)."""
        data = self.chunk_read(team, project, writer, chunk_id)
        if isinstance(data, BlobKey):
            self.drop_blobless(data)
            return None
        return data

    def chunk_read(
        self, team: str, project: str, writer: str, chunk_id: str
    ) -> bytes | BlobKey | None:
        """The chunk's bytes, None if the slot holds no such chunk, or its key if the row
        is there but the blob is gone: the caller then drops the row
        (:meth:`drop_blobless`, a write).  Reads only."""
        if self.missing_chunks(team, project, writer, [chunk_id]):
            return None
        key = BlobKey(team, project, writer, chunk_id)
        data = self.blobs.get(key)
        return key if data is None else data

    def drop_blobless(self, key: BlobKey, seen_at_ms: int = ANY_AGE_MS) -> None:
        """Drop the row of a chunk whose blob is gone (or damaged: the read checks it), so
        that it reads as missing and marks the writer's slot (:meth:`lost_chunks`).

        ``seen_at_ms``: when the row was read without its blob.  A row stored since (the
        writer uploaded the chunk again, blob and row, meanwhile) is kept."""
        if self.chunk_rows_remove([key], stored_before_ms=seen_at_ms, unreferenced=False):
            log.warning("chunk %s of %s/%s/%s has no intact blob: dropped its row (marked "
                        "for its writer to publish again)",
                        key.chunk_id[:16], key.team, key.project, key.writer)  # fmt: skip

    def _remove(self, keys: Sequence[BlobKey], *, stored_before_ms: int, unreferenced: bool) -> int:
        gone = self.chunk_rows_remove(
            keys, stored_before_ms=stored_before_ms, unreferenced=unreferenced
        )
        for key in gone:  # rows first, then blobs: a crash leaves only orphans
            self.blobs.delete(key)
        return len(gone)

    def collect(
        self, team: str, project: str, writer: str, keep: set[str], older_than_ms: int
    ) -> int:
        """Delete the writer's chunks not in ``keep`` stored before ``older_than_ms``.

        A chunk a kept manifest names is never removed, even if ``keep`` misses it: the
        caller read ``keep`` before this runs, and a manifest naming an old chunk may
        have committed since (the rows are re-checked in the deleting transaction)."""
        rows = self._read(
            "SELECT id FROM chunks WHERE team = ? AND project = ? AND writer = ? AND stored_at < ?",
            (team, project, writer, older_than_ms),
        )
        keys = [BlobKey(team, project, writer, str(i)) for (i,) in rows if str(i) not in keep]
        removed = 0
        for i in range(0, len(keys), _PAGE):
            part = keys[i : i + _PAGE]
            removed += self._remove(part, stored_before_ms=older_than_ms, unreferenced=True)
        return removed

    def expire_unreferenced(self, stored_before_ms: int) -> int:
        """Delete chunks no kept manifest names, stored before the bound (all teams)."""
        return self._drain(stored_before_ms, None, None)

    def drop_unreferenced(self, team: str, writer: str) -> int:
        """Delete a (revoked) writer's chunks no kept manifest names, whatever their age."""
        return self._drain(ANY_AGE_MS, team, writer)

    def _drain(self, before_ms: int, team: str | None, writer: str | None) -> int:
        removed = 0
        while True:
            keys = self.chunk_rows_unreferenced(before_ms, team=team, writer=writer)
            if not keys:
                return removed
            n = self._remove(keys, stored_before_ms=before_ms, unreferenced=True)
            removed += n
            if n == 0:  # referenced or refreshed meanwhile: leave them for the next run
                return removed

    def collect_orphans(self, min_age_s: float) -> int:
        """Delete blobs no row names once they are ``min_age_s`` old; count them.

        ``min_age_s`` must cover the longest put in flight (blob written, row not yet
        committed) on any replica: the hub never calls this with 0."""
        removed = self.blobs.sweep(min_age_s)
        batch: list[BlobEntry] = []
        for entry in self.blobs.entries():
            if entry.age_s >= min_age_s:
                batch.append(entry)
            if len(batch) >= _PAGE:
                removed += self._orphans(batch, min_age_s)
                batch = []
        return removed + self._orphans(batch, min_age_s)

    def _orphans(self, batch: Sequence[BlobEntry], min_age_s: float) -> int:
        if not batch:
            return 0
        named = self.chunk_rows_named([e.key for e in batch])
        removed = 0
        for entry in batch:
            if entry.key not in named:
                self.blobs.delete(entry.key)
                removed += 1
        return removed

    def scrub(self, verify: Callable[[BlobKey, bytes], bool]) -> ScrubReport:
        """Re-check every chunk's blob with ``verify`` (its id is the hash of its bytes);
        drop the rows, then the blobs, of damaged and missing ones, so that the hub
        reports them missing and their writers upload them again."""
        checked = damaged = missing = 0
        after: BlobKey | None = None
        while True:
            page = self.chunk_rows(after, _PAGE)
            if not page:
                return ScrubReport(checked, damaged, missing)
            for key, _size in page:
                checked += 1
                data = self.blobs.get(key)
                if data is not None and verify(key, data):
                    continue
                if data is None:
                    missing += 1
                else:
                    damaged += 1
                log.warning("scrub: chunk %s of %s/%s/%s is %s: dropped", key.chunk_id[:16],
                            key.team, key.project, key.writer,
                            "missing" if data is None else "damaged")  # fmt: skip
                self._remove([key], stored_before_ms=ANY_AGE_MS, unreferenced=False)
            after = page[-1][0]
