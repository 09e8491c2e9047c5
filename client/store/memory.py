"""The values the local API hands out: memories, provenance, hits, results.

All are frozen dataclasses with a ``to_dict`` giving a flat, JSON-friendly form
(importance as a float 0..1, hlc as ``[wall, counter]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ...protocol.names import name_skeleton
from ...protocol.record import Record, Source

__all__ = [
    "DEFAULT_PROJECT",
    "SHARED_PROJECT",
    "SOURCE_TAGS",
    "Authorship",
    "Check",
    "Hit",
    "ImportResult",
    "Memory",
    "Provenance",
    "RememberResult",
]

SOURCE_TAGS: Mapping[Source, str] = {
    "person": "",
    "agent": "agent-written",
    "hook": "hook-captured",
    "import": "imported",
}
"""How a one-line rendering marks who wrote a memory's text (none for a person)."""

SHARED_PROJECT = "shared"
"""The team-wide tier: searched alongside whatever project is in scope."""

DEFAULT_PROJECT = "default"
"""The project of a memory stored without one."""


@dataclass(frozen=True)
class Provenance:
    """How this version of a memory arrived in the local store."""

    transport: str
    signer: str | None = None
    signer_name: str | None = None
    verified: bool = False
    received_at: int | None = None
    snapshot_seq: int | None = None

    @classmethod
    def local(cls) -> Provenance:
        """Provenance of a version written on this machine."""
        return cls(transport="local")

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))  # every field, in order: one copy per exported entry


def _member(kid: str, names: Mapping[str, str], fallback: str | None = None) -> str:
    """A member's display name; the short kid too when the name alone could mislead:
    when it looks like ``you`` or like another member's name (:func:`name_skeleton`)."""
    name = names.get(kid) or fallback
    if not name:
        return kid[:8]
    looks = name_skeleton(name)
    clash = looks in ("you", "") or any(
        k != kid and name_skeleton(n) == looks for k, n in names.items()
    )
    return f"{name} ({kid[:8]})" if clash else name


@dataclass(frozen=True)
class Authorship:
    """Who wrote a version, as a reader shows it: the one rule every renderer follows.

    Only a version written on this machine (provenance transport ``local``) is
    the reader's own (``mine``).  A version that arrived by sync was written by
    its verified snapshot signer (``writer``, named from the accepted roster).
    Anything else (an import, an unverified arrival) has no known writer.  The
    record's ``author`` is only what its writer claims: it is carried as
    ``claimed_author`` and shown when it differs from the writer, never used to
    decide whose a memory is.  ``source`` says who wrote the text (a person, an agent
    tool, a hook capture, an import): the record's signed claim, shown beside the writer.
    """

    mine: bool
    """Written on this machine (transport ``local``)."""
    writer: str | None
    """The kid that wrote the version: the local key, or the verified signer; None if unknown."""
    writer_name: str
    """``you``, the writer's roster name, or ``unverified <transport>``."""
    verified: bool
    """The writer is established: written here, or a verified snapshot signature."""
    transport: str
    claimed_author: str
    """The record's ``author`` field: a claim by the writer, not a fact."""
    claimed_author_name: str
    claim_differs: bool
    """The claimed author is not the writer (always so when the writer is unknown)."""
    source: Source = "person"
    """Who wrote the text (:attr:`Record.written_by`)."""

    @property
    def source_tag(self) -> str:
        """The mark of who wrote the text (``agent-written``); "" for a person."""
        return SOURCE_TAGS[self.source]

    def tags(self) -> list[str]:
        """Marks for a one-line rendering: none for the reader's own, unchanged claim
        written by a person; who wrote the text follows the writer (``agent-written``)."""
        out = []
        if self.writer is None:
            out.append(f"unverified, via {self.transport}")
        elif not self.mine:
            out.append(f"from {self.writer_name}")
        if self.source_tag:
            out.append(self.source_tag)
        if self.claim_differs:
            out.append(f"claimed author: {self.claimed_author_name}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "written_by": self.writer_name,
            "written_here": self.mine,
            "writer": self.writer,
            "verified": self.verified,
            "transport": self.transport,
            "claimed_author": self.claimed_author,
            "claimed_author_name": self.claimed_author_name,
            "claim_differs": self.claim_differs,
            "source": self.source,
        }


@dataclass(frozen=True)
class Memory:
    """The current (or a historical) version of one memory, with its local state."""

    record: Record
    seen_count: int
    updated_at: int
    provenance: Provenance

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def project(self) -> str:
        return self.record.project

    @property
    def kind(self) -> str:
        return self.record.kind

    @property
    def content(self) -> str:
        return self.record.content

    @property
    def deleted(self) -> bool:
        return self.record.deleted

    @property
    def source(self) -> Source:
        """Who wrote the text: a person, an agent, a hook, an import (:class:`Record`)."""
        return self.record.written_by

    @property
    def written_here(self) -> bool:
        """True when this version was written on this machine: the only "mine"."""
        return self.provenance.transport == "local"

    @property
    def verified_writer(self) -> str | None:
        """The kid that signed this version when it arrived verified by sync, else None."""
        prov = self.provenance
        if self.written_here or not prov.verified or not prov.signer:
            return None
        return prov.signer

    def authorship(
        self, names: Mapping[str, str] | None = None, me: str | None = None
    ) -> Authorship:
        """Who wrote this version (:class:`Authorship`); ``names`` maps kids to roster names,
        ``me`` (the local member id) only calls a *claimed* author "you"."""
        names = names or {}
        prov, author = self.provenance, self.record.author
        if self.written_here:
            writer: str | None = self.record.editor
            writer_name = "you"
        elif (signer := self.verified_writer) is not None:
            writer, writer_name = signer, _member(signer, names, prov.signer_name)
        else:
            writer, writer_name = None, f"unverified {prov.transport}"
        claimed = "you" if me is not None and author == me else _member(author, names)
        return Authorship(
            mine=self.written_here,
            writer=writer,
            writer_name=writer_name,
            verified=self.written_here or self.verified_writer is not None,
            transport=prov.transport,
            claimed_author=author,
            claimed_author_name=claimed,
            claim_differs=author != writer,
            source=self.record.written_by,
        )

    def to_dict(self) -> dict[str, Any]:
        out = self.record.to_wire()
        out["source"] = self.record.written_by
        out["importance"] = self.record.importance
        out["seen_count"] = self.seen_count
        out["updated_at"] = self.updated_at
        out["provenance"] = self.provenance.to_dict()
        return out


@dataclass(frozen=True)
class Hit:
    """One recall result: the memory, its score, the score's parts, its replacements,
    ``related``: it matches nothing in the query but was written beside a memory that
    matches well (recall puts such results after the matches), and whether it is stale."""

    memory: Memory
    score: float
    why: dict[str, float]
    superseded_by: list[Memory] = field(default_factory=list)
    related: bool = False
    stale: bool = False
    """No one confirmed it within the review period (:mod:`.freshness`)."""

    def to_dict(self) -> dict[str, Any]:
        out = self.memory.to_dict()
        out["score"] = self.score
        out["related"] = self.related
        out["why"] = dict(self.why)
        out["superseded_by"] = [m.to_dict() for m in self.superseded_by]
        out["stale"] = self.stale
        return out


@dataclass(frozen=True)
class RememberResult:
    """What :meth:`MemoryStore.remember` did: ``created`` a new memory, or ``merged`` into
    the same one (reinforced); ``warnings`` say what was redacted or adjusted, never the
    secret."""

    memory: Memory
    created: bool
    merged: bool
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "memory": self.memory.to_dict(),
            "created": self.created,
            "merged": self.merged,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class ImportResult:
    """Counts from :meth:`MemoryStore.import_`; a repeated import adds nothing."""

    added: int
    updated: int
    unchanged: int
    skipped: int = 0
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Check:
    """One line of :meth:`MemoryStore.doctor`."""

    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
