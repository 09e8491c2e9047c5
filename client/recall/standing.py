"""The reader's view of each memory: whose it is, its trust, and what others propose.

:class:`Reader` reads the store's trust state once (roster history, the person's
settings and verdicts) and answers, for a memory, what every surface shows
(:meth:`Reader.resolve`), following the rules of :mod:`.trust`:

- a version written by someone other than the memory's author (an edit or a tombstone)
  is a *proposal*: the author's latest version is shown, the proposal beside it, until
  the author or the reader accepts it; the reader's and the author's own changes apply
  at once.  The author is the writer of the version this store received first (a
  version that arrived later, even one claiming an older clock, is never the author's).
- a memory another writer supersedes stays shown, the superseding one beside it as a
  proposal, unless the superseder is the author, the reader, or a person accepted it.
- an accepted change applies while its writer is not muted: muting a member later
  takes back its accepted edits, deletes and supersedes of others' memories.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ...protocol import canonical
from ...protocol.devices import key_owners
from ...protocol.errors import ProtocolError
from ...protocol.hlc import Hlc
from ..store import periods, trust_rows
from ..store.memory import Memory
from ..store.rows import MEMORY_COLUMNS, memory_from_history_row, memory_from_row
from .names import member_ids, member_names
from .trust import DAY_MS, MUTED, OWN, REVIEW, TRUSTED, Standing, default_state

__all__ = ["PROPOSED_DELETE", "Proposal", "Reader", "Shown", "member_states"]

PROPOSED_DELETE = (
    "m.deleted = 1 AND m.visibility = 'team' AND m.transport != 'local' AND EXISTS ("
    "SELECT 1 FROM history h "
    "WHERE h.id = m.id AND (h.transport = 'local' OR h.signer IS NOT m.signer))"
)
"""SQL over ``memories AS m``: the tombstones that may be a teammate's proposal to delete
a memory someone else wrote (a version by another writer is kept in history).  A
pre-filter: :meth:`Reader.resolve_all` decides which stand (then the author's version
is shown, the proposal beside it) and which apply (nothing is shown)."""


def _rosters(conn: sqlite3.Connection) -> list[tuple[int, int, str, set[str]]]:
    """(version, accepted_at, signer, member ids) of every roster this store accepted
    (verified before it was saved), oldest first."""
    out = []
    for name, data, at in conn.execute(
        "SELECT name, data, accepted_at FROM team_objects WHERE kind = 'roster' ORDER BY name"
    ):
        try:
            envelope = canonical.decode(bytes(data))
            owners = key_owners(envelope["body"]["members"])
            kids = {mid for mid, _, _ in owners.values()}
            signer = str(envelope["signer"])
            out.append((int(name), int(at), owners.get(signer, (signer, "", ""))[0], kids))
        except (ProtocolError, KeyError, TypeError, ValueError):
            continue
    return out


def member_states(conn: sqlite3.Connection, me: str, now: int) -> dict[str, str]:
    """``{member id: state}`` for every member of the accepted rosters, and every member a
    person set: the person's setting, else :func:`default_state`."""
    first: dict[str, tuple[int, int, str]] = {}
    for version, at, signer, kids in _rosters(conn):
        for kid in kids:
            first.setdefault(kid, (version, at, signer))
    me = member_ids(conn).get(me, me)  # trust is the member's, on every device
    mine = first.get(me, (None, 0, ""))[0]
    review_ms = periods.period(conn, periods.REVIEW).days * DAY_MS
    states = {
        kid: default_state(
            first_version=v,
            my_first_version=mine,
            first_seen_at=at,
            now=now,
            approved_by_me=signer == me,
            review_ms=review_ms,
        )
        for kid, (v, at, signer) in first.items()
    }
    states.update(trust_rows.member_settings(conn))
    return states


@dataclass(frozen=True)
class Proposal:
    """A change someone other than the author made: ``edit``, ``delete`` or ``supersede``."""

    memory: Memory
    standing: Standing
    action: str

    @property
    def verb(self) -> str:
        """What people's surfaces say it proposes: "delete it", "change it", "replace it"."""
        return _VERBS[self.action]


@dataclass(frozen=True)
class Shown:
    """What a surface shows for one memory: the version that stands, and proposals."""

    memory: Memory
    standing: Standing
    proposals: list[Proposal] = field(default_factory=list)
    superseded_by: list[Memory] = field(default_factory=list)
    """The memories that supersede it and apply (by the author, the reader, or accepted);
    a superseder that is a proposal, waiting, dismissed or muted, is not one of them."""

    @property
    def superseded(self) -> bool:
        return bool(self.superseded_by)

    def note(self, names: Mapping[str, str], me: str) -> str:
        """People's mark on a memory a teammate proposes to delete or change (the
        author's version is shown), "" for none: "NAME proposes to delete it", with the
        proposer's verified name (not escaped here: every surface escapes what it shows)."""
        for p in self.proposals:
            if p.action in _MARKED:
                return f"{p.memory.authorship(names, me).writer_name} proposes to {p.verb}"
        return ""


_VERBS = {"delete": "delete it", "edit": "change it", "supersede": "replace it"}
_MARKED = ("delete", "edit")  # a list marks these; a superseder is its own entry


class Reader:
    """One reader's trust state, read once; its answers need no further writes."""

    def __init__(self, conn: sqlite3.Connection, me: str, now: int) -> None:
        self.conn, self.me = conn, me
        self.names: Mapping[str, str] = member_names(conn)
        self.ids: Mapping[str, str] = member_ids(conn)
        self.member = self.ids.get(me, me)
        """This device's member: a sibling device's writes are the member's own."""
        self.states = member_states(conn, me, now)
        self.verdicts = trust_rows.verdicts(conn)

    def writer_of(self, memory: Memory) -> str | None:
        """The member that wrote this version (its member id: any of the member's devices
        counts as the member): the reader, the verified signer's member, or None."""
        if memory.written_here:
            return self.member
        writer = memory.verified_writer
        return None if writer is None else self.ids.get(writer, writer)

    def state_of(self, writer: str | None, transport: str = "") -> str:
        if writer is not None and self.ids.get(writer, writer) == self.member:
            return OWN
        if writer is None:
            return TRUSTED if transport == "import" else REVIEW
        return self.states.get(writer, TRUSTED)

    def standing(self, memory: Memory) -> Standing:
        writer = self.writer_of(memory)
        verdict = self.verdicts.get(trust_rows.version_key(memory.record))
        return Standing(writer, self.state_of(writer, memory.provenance.transport), verdict)

    def _first(self, memory: Memory) -> tuple[int, bool, Hlc]:
        """The order in which versions of one memory count as its first: when this store
        received it (its pull's time; written here, the earliest local time), then, among
        versions of one pull, one that names its own writer as author, the oldest clock.
        A version that lost the merge on arrival, whatever clock it claims, is not first."""
        prov = memory.provenance
        at = prov.received_at
        if at is None:
            at = min(memory.updated_at, memory.record.hlc.wall)
        claimed = self.ids.get(memory.record.author, memory.record.author)
        return at, self.writer_of(memory) != claimed, memory.record.hlc

    def _history(self, ids: Iterable[str]) -> dict[str, list[Memory]]:
        """Replaced versions per id, oldest first."""
        wanted = list(dict.fromkeys(ids))
        out: dict[str, list[Memory]] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            for row in self.conn.execute(
                f"SELECT * FROM history WHERE id IN ({', '.join('?' * len(part))}) ORDER BY seq",
                part,
            ):
                try:
                    out.setdefault(str(row["id"]), []).append(memory_from_history_row(row))
                except (ProtocolError, ValueError):
                    continue
        return out

    def _superseders(self, ids: Iterable[str]) -> dict[str, list[Memory]]:
        wanted = list(dict.fromkeys(ids))
        out: dict[str, list[Memory]] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            cols = ", ".join(f"m.{c.strip()}" for c in MEMORY_COLUMNS.split(","))
            for row in self.conn.execute(
                f"SELECT s.old_id AS old, {cols} FROM supersedes s JOIN memories m "
                f"ON m.id = s.new_id WHERE s.old_id IN ({', '.join('?' * len(part))}) "
                "AND m.deleted = 0 ORDER BY m.updated_at DESC",
                part,
            ):
                out.setdefault(str(row["old"]), []).append(memory_from_row(row))
        return out

    def _applies(self, change: Memory, author: str | None) -> Standing | None:
        """None when ``change`` applies; else its standing as a proposal.  A person's
        acceptance holds while its writer is not muted: muting a member takes back every
        change of theirs to someone else's memory (a verdict is read, never applied)."""
        standing = self.standing(change)
        if standing.writer in (author, self.member) or author is None:
            return None
        accepted = standing.verdict == "accepted" and standing.state != MUTED
        return None if accepted else standing

    def resolve_all(self, memories: Iterable[Memory]) -> dict[str, Shown | None]:
        """:meth:`resolve` of each memory (None: nothing stands, e.g. its author deleted it)."""
        current = {m.id: m for m in memories}
        history = self._history(current)
        replacing = self._superseders(current)
        out: dict[str, Shown | None] = {}
        for memory_id, memory in current.items():
            older = history.get(memory_id, [])
            author = self.writer_of(min([memory, *older], key=self._first))
            proposals: list[Proposal] = []
            shown = memory
            if (standing := self._applies(memory, author)) is not None:
                by_author = [v for v in older if self.writer_of(v) == author]
                shown = max(by_author, key=lambda v: v.record.hlc) if by_author else memory
                action = "delete" if memory.deleted else "edit"
                proposals.append(Proposal(memory, standing, action))
            applied: list[Memory] = []
            for newer in replacing.get(memory_id, []):
                if (standing := self._applies(newer, author)) is None:
                    applied.append(newer)
                else:
                    proposals.append(Proposal(newer, standing, "supersede"))
            if shown.deleted:
                out[memory_id] = None
                continue
            kept = [
                p for p in proposals if p.standing.state != MUTED and p.standing.verdict is None
            ]
            out[memory_id] = Shown(shown, self.standing(shown), kept, applied)
        return out

    def resolve(self, memory: Memory) -> Shown | None:
        return self.resolve_all([memory])[memory.id]

    def for_people(self, memories: Iterable[Memory]) -> list[tuple[Memory, str]]:
        """What people's lists (CLI ``list`` and ``recall``, the viewer) show of each of
        ``memories``, in order: the version that stands and its :meth:`Shown.note`; a
        memory whose deletion applies is left out, a tombstone asked for stays."""
        listed = list(memories)
        resolved = self.resolve_all(listed)
        out = []
        for memory in listed:
            shown = resolved.get(memory.id)
            if shown is not None:
                out.append((shown.memory, shown.note(self.names, self.me)))
            elif memory.deleted:
                out.append((memory, ""))
        return out

    def replacements(self, memories: Iterable[Memory]) -> dict[str, list[Memory]]:
        """``{id: the superseders that apply}`` (:attr:`Shown.superseded_by`) of each of
        ``memories`` that has some: what a surface marks "superseded by"."""
        resolved = self.resolve_all(memories).items()
        return {i: s.superseded_by for i, s in resolved if s is not None and s.superseded_by}
