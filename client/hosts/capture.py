"""Capture: turn transcript turns into proposed memories, and store the ones that pass.

Candidates are the lines (and sentences of long lines) people and the agent
wrote, outside code fences, with list markers and emphasis removed.  Each goes
through the noise gate (:mod:`sealmem.client.hosts.gate`), is redacted, and is
dropped when it repeats another candidate of the same batch or a memory
already stored (recall finds the closest stored memories; :func:`gate.overlap`
decides).  A line right after a failed tool call is marked ``after_error``,
which is where fixes are explained.

What is stored is **private**, marked as a hook's (``source`` ``hook``, origin
:data:`ORIGIN`): a transcript holds what a person typed and what the agent saw, so
nothing captured leaves the machine until someone reviews it and accepts it
(``sealmem captured accept``, which makes a team version through
:meth:`MemoryStore.share`, still marked ``hook``) or discards it.

Followers (the Stop hook, ``sealmem watch``) remember how far they read each
transcript in ``<home>/capture/<hash>.json``, so a turn is considered once.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..fsutil import atomic_write
from ..recall.api import MemoryStore
from ..store.memory import Memory
from ..store.redact import redact
from . import gate
from .transcripts import Turn, read_turns

__all__ = [
    "ORIGIN",
    "Candidate",
    "CaptureResult",
    "capture",
    "mark_read",
    "propose",
    "unread_turns",
    "was_read",
]

ORIGIN = "claude-code"
MIN_CHARS, MAX_CHARS = 15, 600
_IMPORTANCE = {"decision": 0.7, "warning": 0.7, "lesson": 0.6, "note": 0.5}
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_BULLET = re.compile(r"^\s*(?:[-*•+>]|\d+[.)])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s+")
_EMPHASIS = re.compile(r"\*\*|__")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])")
_ERROR_TEXT = re.compile(r"Traceback \(most recent call last\)|^error\b|\bexit code [1-9]", re.I)


@dataclass(frozen=True)
class Candidate:
    """A proposed memory: redacted text, kind, gate score, where it came from."""

    text: str
    kind: str
    score: float
    role: str
    after_error: bool

    @property
    def importance(self) -> float:
        return _IMPORTANCE.get(self.kind, 0.5)


@dataclass
class CaptureResult:
    proposed: list[Candidate] = field(default_factory=list)
    stored: list[Memory] = field(default_factory=list)
    duplicates: int = 0


def _lines(text: str) -> Iterator[str]:
    in_fence = False
    for raw in text.splitlines():
        if _FENCE.match(raw):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        line = _EMPHASIS.sub("", _HEADING.sub("", _BULLET.sub("", raw))).strip()
        for part in _SENTENCE.split(line):
            part = part.strip()
            if MIN_CHARS <= len(part) <= MAX_CHARS:
                yield part


def _candidate_lines(turns: Iterable[Turn]) -> Iterator[tuple[str, str, bool]]:
    """(line, role, after_error) for every candidate line in ``turns``."""
    after_error = False
    for turn in turns:
        if turn.role == "tool_result":
            after_error = after_error or turn.is_error or bool(_ERROR_TEXT.search(turn.text))
            continue
        for line in _lines(turn.text):
            yield line, turn.role, after_error and turn.role == "assistant"
        if turn.role == "assistant":
            after_error = False


def propose(turns: Iterable[Turn]) -> tuple[list[Candidate], int]:
    """Candidates passing the gate, redacted, without repeats; and how many repeated."""
    kept: list[Candidate] = []
    seen: list[str] = []
    duplicates = 0
    for line, role, after_error in _candidate_lines(turns):
        verdict = gate.judge(line, after_error=after_error)
        if not verdict.keep:
            continue
        text = redact(verdict.text).text
        if gate.redundant(text, seen):
            duplicates += 1
            continue
        seen.append(text)
        kept.append(Candidate(text, verdict.kind, verdict.score, role, after_error))
    return kept, duplicates


def capture(
    store: MemoryStore,
    turns: Iterable[Turn],
    *,
    project: str,
    save: bool,
    origin: str = ORIGIN,
) -> CaptureResult:
    """Propose memories from ``turns``; with ``save``, remember those not already stored,
    private and marked ``hook``, with ``origin`` (``claude-code:<session id>``, or the bare
    :data:`ORIGIN`)."""
    proposed, duplicates = propose(turns)
    result = CaptureResult(duplicates=duplicates)
    for candidate in proposed:
        stored = store.recall(candidate.text, k=5, project=project)
        if gate.redundant(candidate.text, [hit.memory.record.content for hit in stored]):
            result.duplicates += 1
            continue
        result.proposed.append(candidate)
        if save:
            outcome = store.remember(
                candidate.text,
                kind=candidate.kind,
                importance=candidate.importance,
                project=project,
                private=True,
                origin=origin,
                source="hook",
            )
            result.stored.append(outcome.memory)
    return result


def _state_file(home: Path, transcript: Path) -> Path:
    digest = hashlib.sha256(str(transcript.absolute()).encode("utf-8")).hexdigest()[:24]
    return home / "capture" / f"{digest}.json"


def unread_turns(home: Path, transcript: Path) -> tuple[list[Turn], int]:
    """Turns of ``transcript`` not read before, and the offset to :func:`mark_read`."""
    try:
        data = json.loads(_state_file(home, transcript).read_text(encoding="utf-8"))
        offset = int(data["offset"])
    except (OSError, ValueError, KeyError, TypeError):
        offset = 0
    return read_turns(transcript, offset if 0 <= offset <= transcript.stat().st_size else 0)


def was_read(home: Path, transcript: Path) -> bool:
    """True when a follower has recorded an offset for ``transcript``."""
    return _state_file(home, transcript).is_file()


def mark_read(home: Path, transcript: Path, offset: int) -> None:
    """Record that ``transcript`` was read up to byte ``offset``."""
    state = _state_file(home, transcript)
    state.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    atomic_write(state, json.dumps({"path": str(transcript), "offset": offset}).encode())
