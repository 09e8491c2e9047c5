"""The review queue the CLI and the viewer share: what a hook captured (:mod:`.capture`)
or an agent stored (MCP ``remember``, held private by
:mod:`sealmem.client.store.agentwrites`) or an import brought (``sealmem import --from``,
:mod:`.importing`), and teammates' versions.

Captures, agent writes and imports: every live private memory whose text a hook, an
agent or an import wrote (its record's ``source``,
:attr:`~sealmem.protocol.record.Record.written_by`).  Accepting makes a team version,
still marked as the agent's, the hook's or the import's (the next sync
shares it); discarding forgets one that was never shared.  A teammate's version waiting
for a person (a ``review`` writer's memory, or a change proposed to someone else's
memory, :mod:`sealmem.client.recall.standing`): accepting lets it into the automatic
contexts (a proposal then applies), discarding keeps it out; either is a local verdict,
nothing is published.  An agent's forget of a shared memory
(:mod:`sealmem.client.store.agentwrites`): accepting forgets it as the person's forget
(published with the next sync), discarding keeps it.  Each chosen memory is checked
before any is changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...protocol.errors import InputError
from ..store import agentwrites
from ..store.ids import short_id
from ..store.trust_rows import VersionKey, save_verdict, version_key

if TYPE_CHECKING:
    from ..recall.api import MemoryStore
    from ..recall.trust import Standing
    from ..store.memory import Memory

__all__ = [
    "DISCARD_REASON",
    "REVIEWED",
    "Waiting",
    "accept",
    "check_forgets",
    "choose",
    "discard",
    "forgets",
    "from_teammates",
    "judge",
    "ref",
    "settle_forgets",
    "split",
    "take_forgets",
    "waiting",
]

DISCARD_REASON = "discarded capture"

REVIEWED = ("agent", "hook", "import")
"""Who wrote the texts the queue holds: an agent tool, a hook capture, an import."""


def waiting(store: MemoryStore, project: str | None = None) -> list[Memory]:
    """Live private memories a hook captured, an agent stored or an import brought,
    oldest first (a record stating no ``source`` is read from its origin: a capture of
    before the field)."""
    from ..store.rows import MEMORY_COLUMNS, memory_from_row

    marks = ", ".join("?" for _ in REVIEWED)
    where = f"visibility = 'private' AND deleted = 0 AND (source IS NULL OR source IN ({marks}))"
    params: list[Any] = list(REVIEWED)
    if project is not None:
        where += " AND project = ?"
        params.append(project)
    rows = store.connection.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY created_at, id", params
    ).fetchall()
    found = map(memory_from_row, rows)
    return [memory for memory in found if memory.source in REVIEWED]


def choose(store: MemoryStore, ids: Sequence[str], verb: str) -> list[Memory]:
    """The memories ``ids`` name, each a hook's, an agent's or an import's written here,
    without repeats."""
    if not ids:
        raise InputError(
            f"name the memories to {verb} (sealmem captured {verb} ID...), or give --all; "
            "'sealmem captured' lists them"
        )
    chosen: list[Memory] = []
    for given in ids:
        memory = store.get(given)
        if not memory.written_here:
            raise InputError(
                f"memory {memory.id} is a teammate's version, not one a hook or an agent "
                "stored here, and it waits for no verdict; nothing was changed: 'sealmem "
                "captured' lists what waits for review"
            )
        if memory.source not in REVIEWED:
            raise InputError(
                f"memory {memory.id} was written by source {memory.source!r}, not captured "
                "by a hook or stored by an agent (nor imported); nothing was changed: "
                "'sealmem captured' lists the ones waiting for review"
            )
        if memory.id not in {m.id for m in chosen}:
            chosen.append(memory)
    return chosen


def accept(store: MemoryStore, chosen: Sequence[Memory]) -> list[tuple[Memory, bool]]:
    """Share each of ``chosen`` with the team; (the shared version, was it already shared)."""
    for memory in chosen:
        if memory.record.deleted:
            raise InputError(
                f"memory {memory.id} was discarded ({memory.record.delete_reason}); "
                "nothing was changed: there is no text left to share"
            )
    return [(store.share(m.id), m.record.visibility == "team") for m in chosen]


def discard(store: MemoryStore, chosen: Sequence[Memory]) -> list[Memory]:
    """Forget each of ``chosen`` that was never shared; the ones forgotten now."""
    for memory in chosen:
        if memory.record.visibility == "team":
            raise InputError(
                f"memory {memory.id} was accepted and is shared with the team; nothing "
                f"was changed: forget it with 'sealmem forget {short_id(memory.id)} --reason WHY'"
            )
    done = []
    for memory in chosen:
        if not memory.record.deleted:
            store.forget(memory.id, reason=DISCARD_REASON)
            done.append(memory)
    return done


# -- teammates' memories and proposals waiting for a person -------------------------------


@dataclass(frozen=True)
class Waiting:
    """A teammate's version a person has not judged: a ``review`` writer's memory
    (``action`` ``memory``) or a proposal (``edit``, ``delete``, ``supersede``) to ``target``."""

    memory: Memory
    standing: Standing
    action: str
    writer_name: str
    target: Memory | None = None

    @property
    def flags(self) -> list[str]:
        from ..recall.instructions import flags

        return flags(self.memory.content)


def from_teammates(store: MemoryStore, project: str | None = None) -> list[Waiting]:
    """Teammates' versions waiting for a verdict, oldest first: memories of ``review``
    writers, and changes proposed to someone else's memory."""
    from ..store.rows import MEMORY_COLUMNS, memory_from_row

    where, params = "(transport != 'local' OR id IN (SELECT old_id FROM supersedes))", []
    if project is not None:
        where += " AND project = ?"
        params.append(project)
    rows = store.connection.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY updated_at, id", params
    ).fetchall()
    reader = store.reader()
    out: dict[VersionKey, Waiting] = {}

    def name(memory: Memory) -> str:
        return memory.authorship(reader.names, reader.me).writer_name

    for shown in reader.resolve_all(memory_from_row(row) for row in rows).values():
        if shown is None:
            continue
        if shown.standing.waiting and not shown.memory.deleted:
            key = version_key(shown.memory.record)
            out.setdefault(key, Waiting(shown.memory, shown.standing, "memory", name(shown.memory)))
        for p in shown.proposals:
            if p.standing.verdict is None and p.standing.reaches_agents:
                key = version_key(p.memory.record)
                out[key] = Waiting(p.memory, p.standing, p.action, name(p.memory), shown.memory)
    return list(out.values())


def judge(store: MemoryStore, chosen: Sequence[Waiting], verdict: str) -> None:
    """Record a person's ``accepted`` or ``dismissed`` on each of ``chosen``."""
    now = store.now()
    for item in chosen:
        save_verdict(store.connection, version_key(item.memory.record), verdict, now)


def ref(item: Waiting, short: bool = False) -> str:
    """The name of one waiting version: its memory id (short: as the CLI prints it), ``@``,
    and the start of its writer's id.  A proposal to edit or delete a memory has that
    memory's id, so the id alone may name two versions."""
    memory_id = short_id(item.memory.id) if short else item.memory.id
    return f"{memory_id}@{(item.standing.writer or '-')[:8]}"


def split(store: MemoryStore, ids: Sequence[str]) -> tuple[list[str], list[Waiting]]:
    """``ids`` parted into those that are not a teammate's waiting version (captures, or
    wrong: :func:`choose` says so) and the teammates' versions they name; an id that names
    two (a memory and a proposal to change it) is refused unless :func:`ref` picks one."""
    by_id: dict[str, list[Waiting]] = {}
    for item in from_teammates(store):
        by_id.setdefault(item.memory.id, []).append(item)
    rest, theirs = [], []
    for given in ids:
        head, at, writer = given.partition("@")
        full = store.resolve_id(head)
        found = [t for t in by_id.get(full, []) if not at or ref(t).endswith(at + writer)]
        if len(found) > 1:
            which = ", ".join(f"{ref(t, short=True)} ({t.writer_name}'s {t.action})" for t in found)
            raise InputError(
                f"{short_id(full)} names {len(found)} teammates' versions waiting for review: "
                f"{which}; nothing was changed: name the one you mean"
            )
        if found:
            theirs.append(found[0])
        elif at:
            raise InputError(
                f"no teammate's version of {short_id(full)} written by {writer!r} waits for "
                "review; nothing was changed: 'sealmem captured' lists them"
            )
        else:
            rest.append(given)
    return rest, theirs


# -- an agent's forget of a shared memory, waiting for a person -----------------------------


def forgets(store: MemoryStore) -> list[tuple[agentwrites.HeldForget, Memory]]:
    """Each forget an agent asked for, with the memory as it is now, oldest first."""
    from ...protocol.errors import SealmemError

    out = []
    for request in agentwrites.held_forgets(store.connection).values():
        try:
            out.append((request, store.get(request.id)))
        except SealmemError:  # purged here since: nothing left to forget
            continue
    return out


def take_forgets(
    store: MemoryStore, ids: Sequence[str]
) -> tuple[list[str], list[agentwrites.HeldForget]]:
    """``ids`` parted into the rest and the held forgets they name (a held forget is
    what an id names first: an agent's request is about that memory, whatever else)."""
    held = agentwrites.held_forgets(store.connection)
    rest, chosen = [], []
    for given in ids:
        head = given.partition("@")[0]
        full = store.resolve_id(head) if held else ""
        if full in held and "@" not in given:
            if held[full] not in chosen:
                chosen.append(held[full])
        else:
            rest.append(given)
    return rest, chosen


def check_forgets(store: MemoryStore, chosen: Sequence[agentwrites.HeldForget]) -> None:
    """Refuse (:class:`InputError`) accepting a forget whose memory has changed since the
    agent asked (a teammate's edit, a person's): the agent's reason was about the text it
    saw, so what came since is not forgotten on its word."""
    for request in chosen:
        memory = store.get(request.id)
        if not memory.deleted and version_key(memory.record)[4] != request.digest:
            raise InputError(
                f"memory {memory.id} changed since an agent asked to forget it; nothing was "
                f"changed: read it ('sealmem show {short_id(memory.id)}'), then forget it "
                f"yourself ('sealmem forget {short_id(memory.id)} --reason WHY') or drop the "
                f"request ('sealmem captured discard {short_id(memory.id)}')"
            )


def settle_forgets(
    store: MemoryStore, chosen: Sequence[agentwrites.HeldForget], accepted: bool
) -> list[Memory]:
    """Accepted: forget each memory (the person's forget, with the agent's reason);
    else keep it.  The requests are done either way; the memories as they are now.
    Accepting is refused, before any is changed, for a memory changed since the agent
    asked (:func:`check_forgets`)."""
    if accepted:
        check_forgets(store, chosen)
    done = []
    for request in chosen:
        memory = store.get(request.id)
        if accepted and not memory.deleted:
            memory = store.forget(request.id, reason=request.reason)
        agentwrites.drop_forget(store.connection, request.id)
        done.append(memory)
    return done
