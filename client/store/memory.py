"""The values the local API hands out: memories, provenance, hits, results.

All are frozen dataclasses with a ``to_dict`` giving a flat, JSON-friendly form
(importance as a float 0..1, hlc as ``[wall, counter]``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...protocol.record import Record

__all__ = [
    "DEFAULT_PROJECT",
    "SHARED_PROJECT",
    "Check",
    "Hit",
    "ImportResult",
    "Memory",
    "Provenance",
    "RememberResult",
]

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
        return {
            "transport": self.transport,
            "signer": self.signer,
            "signer_name": self.signer_name,
            "verified": self.verified,
            "received_at": self.received_at,
            "snapshot_seq": self.snapshot_seq,
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

    def to_dict(self) -> dict[str, Any]:
        out = self.record.to_wire()
        out["importance"] = self.record.importance
        out["seen_count"] = self.seen_count
        out["updated_at"] = self.updated_at
        out["provenance"] = self.provenance.to_dict()
        return out


@dataclass(frozen=True)
class Hit:
    """One recall result: the memory, its score, the score's parts, its replacements."""

    memory: Memory
    score: float
    why: dict[str, float]
    superseded_by: list[Memory] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = self.memory.to_dict()
        out["score"] = self.score
        out["why"] = dict(self.why)
        out["superseded_by"] = [m.to_dict() for m in self.superseded_by]
        return out


@dataclass(frozen=True)
class RememberResult:
    """What :meth:`MemoryStore.remember` did.

    ``created`` is True for a new memory; ``merged`` is True when the same
    normalized content already existed in the project and was reinforced
    instead.  ``warnings`` say what was redacted or adjusted, never the secret.
    """

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
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class Check:
    """One line of :meth:`MemoryStore.doctor`."""

    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}
