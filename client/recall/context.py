"""The startup context: what an agent should know when a session begins.

The reader's own memories first, then each teammate's within its share
(:func:`.trust.plan`), each part warnings first, then decisions, then everything else
by importance and recency.  Only what :mod:`.trust` lets into an automatic context
enters: a ``review`` writer's memories once a person accepted them, nothing of a
``muted`` one; a teammate's change to someone else's memory is shown as a proposal
beside the author's version (:mod:`.standing`).  Each line is quoted in the frame of
:mod:`.framing`, marked with its kind and, unless the reader wrote it, with its
verified signer (named from the roster, :meth:`Memory.authorship`) and trust state.
The text is trimmed to a token budget (estimated as ``ceil(chars / 4)``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import replace

from ...protocol.errors import InputError
from ..store.memory import SHARED_PROJECT, Authorship, Memory
from ..store.rows import MEMORY_COLUMNS, memory_from_row
from . import framing
from .standing import Reader, Shown
from .trust import OWN, Budget, Item, plan

__all__ = [
    "CHARS_PER_TOKEN",
    "MAX_LINE_CHARS",
    "choose",
    "choose_shown",
    "marks",
    "render",
    "startup_context",
]

MAX_LINE_CHARS = framing.MAX_LINE_CHARS
CHARS_PER_TOKEN = 4  # the token estimate: ceil(chars / 4)
OWN_ROWS = 300  # the reader's candidates: more lines than the budget holds
PER_WRITER = 40  # candidates per other writer: no writer crowds out the others' rows
_HEADER = "Memories from sealmem for {scope} (notes from past sessions and teammates):"
_TIER = {"warning": 0, "decision": 1}


def _authorship(memory: Memory, reader: Reader) -> Authorship:
    """Who wrote ``memory``, every name in it as a line's marks may hold it
    (:func:`.framing.name`): a roster name, or one kept in provenance (a former member)."""
    said = memory.authorship(reader.names, reader.me)
    return replace(
        said,
        writer_name=framing.name(said.writer_name),
        claimed_author_name=framing.name(said.claimed_author_name),
    )


def marks(memory: Memory, reader: Reader, shown: Shown | None = None) -> list[str]:
    """The marks of one memory's line: shared, who wrote it, its trust state."""
    out = ["shared"] if memory.project == SHARED_PROJECT else []
    out.extend(_authorship(memory, reader).tags())
    standing = shown.standing if shown is not None else reader.standing(memory)
    if standing.label:
        out.append(standing.label)
    return out


def render(shown: Shown, reader: Reader, extra: Sequence[str] = ()) -> list[tuple[str, str, str]]:
    """(key, writer, line) of a memory and of each proposal beside it; writer is
    :data:`OWN` for the reader's own."""
    memory = shown.memory
    owner = OWN if shown.standing.own else (shown.standing.writer or "?")
    tags = [*extra, *marks(memory, reader, shown)]
    rows = [(memory.id, owner, framing.line(memory.kind, tags, memory.content))]
    for p in shown.proposals:
        if not p.standing.automatic:
            continue
        who = _authorship(p.memory, reader)
        # an edit keeps the author's claim by nature; a new memory claiming one is news
        claims = [t for t in who.tags() if t.startswith("claimed") and p.action == "supersede"]
        label = [*claims, p.standing.label] if p.standing.label else claims
        text = framing.proposal_line(
            who.writer_name, p.action, label, p.memory.kind, p.memory.content
        )
        rows.append((f"{memory.id}>{p.memory.id}", p.standing.writer or "?", text))
    return rows


_WHO = (
    "CASE WHEN {t}.transport = 'local' THEN '' WHEN {t}.verified THEN coalesce({t}.signer, '?') "
    "ELSE '?' END"
)
_WHOSE = (
    f"CASE WHEN m.transport = 'local' THEN '' ELSE coalesce((SELECT {_WHO.format(t='h')} "
    "FROM history h WHERE h.id = m.id AND coalesce(h.received_at, h.updated_at) <= "
    "coalesce(m.received_at, m.updated_at) ORDER BY coalesce(h.received_at, h.updated_at), "
    f"h.seq LIMIT 1), {_WHO.format(t='m')}) END"
)
"""Whose candidate a memory is: the writer of the version this store received first (as
:class:`.standing.Reader` has it), so that editing someone's memory never moves it into
the editor's share, where the editor's own memories could push it out; an unverified
version's claimed signer is no one's (``?``: a file cannot fill a member's share)."""


def _candidates(conn: sqlite3.Connection, projects: Sequence[str]) -> list[Memory]:
    """Live memories (and tombstones with history: a teammate's delete is a proposal),
    each writer's best first: at most :data:`OWN_ROWS` of the reader's, :data:`PER_WRITER`
    of each other writer's (more than its share can ever show); a memory counts as its
    first writer's (:data:`_WHOSE`)."""
    marks_ = ", ".join("?" * len(projects))
    ranked = conn.execute(
        "SELECT rid FROM (SELECT rid, who, ROW_NUMBER() OVER (PARTITION BY who "
        "  ORDER BY tier, importance DESC, updated DESC, rid DESC) AS rank FROM ("
        f"  SELECT m.rowid AS rid, {_WHOSE} AS who, m.local_importance AS importance, "
        "  CASE m.kind WHEN 'warning' THEN 0 WHEN 'decision' THEN 1 ELSE 2 END AS tier, "
        "  m.updated_at AS updated "
        f"  FROM memories m WHERE m.project IN ({marks_}) AND (m.deleted = 0 OR EXISTS ("
        "    SELECT 1 FROM history h WHERE h.id = m.id)))) "
        "WHERE rank <= CASE WHEN who = '' THEN ? ELSE ? END",
        (*projects, OWN_ROWS, PER_WRITER),
    ).fetchall()
    rowids = [int(r[0]) for r in ranked]
    out: list[Memory] = []
    for start in range(0, len(rowids), 500):
        part = rowids[start : start + 500]
        rows = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE rowid IN ({', '.join('?' * len(part))})",
            part,
        )
        out.extend(memory_from_row(row) for row in rows)
    return out


def _order(shown: Shown) -> tuple[int, float, int, int, int]:
    m, stamp = shown.memory, shown.memory.record.hlc
    return (_TIER.get(m.kind, 2), -m.record.importance, -m.updated_at, -stamp.wall, -stamp.counter)


def choose(
    chosen: Sequence[tuple[Shown, Sequence[str]]], reader: Reader, budget: Budget
) -> list[str]:
    """The lines of an automatic context: of the memories in ``chosen`` (best first, each
    with extra marks), what trust lets in, within ``budget`` (:func:`.trust.plan`), each
    proposal under the line it would change.  A memory shown as a proposal beside the one
    it would replace is not shown again on its own."""
    return choose_shown(chosen, reader, budget)[0]


def choose_shown(
    chosen: Sequence[tuple[Shown, Sequence[str]]], reader: Reader, budget: Budget
) -> tuple[list[str], list[str]]:
    """:func:`choose`'s lines, and the ids of the memories they show (proposals too)."""
    proposed = {
        p.memory.id
        for s, _ in chosen
        for p in s.proposals
        if p.standing.automatic and p.action == "supersede"
    }
    lines: dict[str, str] = {}
    items: list[Item] = []
    for one, extra in chosen:
        if not one.standing.automatic or one.memory.id in proposed or one.memory.id in lines:
            continue
        for key, writer, text in render(one, reader, extra):
            if key not in lines:
                parent = key.split(">")[0] if ">" in key else None
                items.append(Item(key, writer, len(text) + 1, parent))
                lines[key] = text
    picked = plan(items, budget)
    below: dict[str, list[str]] = {}
    for key in picked:
        if ">" in key:
            below.setdefault(key.split(">")[0], []).append(key)
    tops = [k for k in picked if ">" not in k]
    keys = [k for top in tops for k in (top, *below.get(top, []))]
    return [lines[k] for k in keys], [k.split(">")[-1] for k in keys]


def startup_context(
    conn: sqlite3.Connection, *, projects: Sequence[str], me: str, budget_tokens: int, now: int
) -> str:
    """The context text for ``projects`` within ``budget_tokens``; "" when nothing fits."""
    if budget_tokens < 1:
        raise InputError(f"budget_tokens={budget_tokens} must be a positive number of tokens")
    reader = Reader(conn, me, now)
    resolved = reader.resolve_all(_candidates(conn, projects))
    shown = sorted((s for s in resolved.values() if s is not None and not s.superseded), key=_order)
    header = _HEADER.format(scope=", ".join(f"'{p}'" for p in projects))
    room = budget_tokens * CHARS_PER_TOKEN - len(framing.frame(header, []))
    lines = choose([(s, ()) for s in shown], reader, Budget(chars=max(room, 0)))
    return framing.frame(header, lines) if lines else ""
