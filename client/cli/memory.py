"""Commands over the local store: remember, recall, show, list, forget.

``register(app)`` adds them; the maintenance commands (init, export, import, stats,
doctor, status, recover) are in :mod:`.maintenance`, which builds on this module.
Every command opens the store for its own duration; ``SEALMEM_HOME`` relocates
it.  ``--project`` defaults to the project of the current directory.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ...protocol.errors import InputError
from ..recall.names import member_names
from . import complete, output
from .textinput import read_content

__all__ = ["open_store", "register", "resolve_project"]

if TYPE_CHECKING:  # imported lazily at run time: keeps `sealmem --help` light
    from .. import Memory, MemoryStore
    from ..recall.standing import Reader
    from ..store.memory import Authorship


def open_store(*, readonly: bool = False) -> MemoryStore:
    """The store under the current ``SEALMEM_HOME``, for one command (``with``: closed after).

    Commands that only read pass ``readonly``: no migration, no write, so a store on
    a read-only file or directory can still be read.
    """
    from .. import MemoryStore

    return MemoryStore.open(readonly=readonly)


def resolve_project(project: str | None) -> str:
    """``--project`` as given, or the project of the current directory."""
    if project:
        return project
    from ..project import current_project

    return current_project()


ProjectOpt = Annotated[
    str | None,
    typer.Option(
        "--project",
        "-p",
        autocompletion=complete.projects,
        help="Project to use (default: the git repository or directory name of the cwd).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
AllProjectsOpt = Annotated[
    bool, typer.Option("--all-projects", help="Every project, not only one.")
]
_ID_HELP = "The memory id: the full id, or at least 8 hex digits that start or end it."


def remember(
    text: Annotated[str, typer.Argument(help="The memory text, or '-' to read it from stdin.")],
    kind: Annotated[
        str | None,
        typer.Option(
            autocompletion=complete.kinds,
            help="note (default), decision, warning, lesson, fact, preference, trace, or a "
            "kind used before in this store; for the same text again, the new kind.",
        ),
    ] = None,
    keyword: Annotated[
        list[str] | None,
        typer.Option("--keyword", "-k", help="A search word for this memory (repeatable)."),
    ] = None,
    importance: Annotated[float, typer.Option(help="0..1; higher ranks first.")] = 0.5,
    project: ProjectOpt = None,
    supersedes: Annotated[
        list[str] | None,
        typer.Option(
            autocompletion=complete.memory_ids,
            help="Id (or its last 12 hex digits) of a memory this one corrects (repeatable).",
        ),
    ] = None,
    private: Annotated[
        bool, typer.Option("--private", help="Never share this memory with the team.")
    ] = False,
    kind_new: Annotated[
        bool,
        typer.Option("--kind-new", help="Accept a --kind this store has never used."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Store a memory (secrets are redacted first)."""
    from ..recall.sessions import cli_origin

    content = read_content(text)
    origin = cli_origin()  # cli:$SEALMEM_SESSION, else the time-gap rule groups it
    with open_store() as store:
        result = store.remember(
            content,
            kind=kind,
            keywords=keyword or (),
            importance=importance,
            project=resolve_project(project),
            supersedes=supersedes or (),
            private=private,
            origin=origin,
            new_kind=kind_new,
            source="person",
        )
        rec = result.memory.record
        local = None
        if rec.visibility == "team":
            from ..sync.local_only import stays_local

            local = stays_local(store.connection, store.author, rec.project)
    for message in result.warnings:
        output.warn(message)
    if as_json:
        doc = result.to_dict()
        doc["stays_local"] = None if local is None else local.to_dict()
        output.emit_json(doc)
        return
    verb = "merged into existing memory" if result.merged else "remembered"
    output.say(f"{verb} {rec.id} ({rec.kind}, project {rec.project})")
    if local is not None:
        output.say(f"note: {local.message()}", err=True)


def _trust(reader: Reader, memory: Memory) -> tuple[dict[str, Any], list[str]]:
    """The reader's trust in a memory (:mod:`..recall.standing`), as JSON fields and as
    detail lines for people: its state, instruction flags, proposals beside it."""
    from ..recall.instructions import flags

    shown = reader.resolve(memory)
    standing = shown.standing if shown is not None else reader.standing(memory)
    found = flags(memory.content)
    proposals = [] if shown is None else shown.proposals
    doc = {
        "trust": standing.label or standing.state,
        "flags": found,
        "proposals": [
            {"id": p.memory.id, "action": p.action, "writer": p.standing.writer} for p in proposals
        ],
    }
    lines = []
    if not standing.own:
        lines.append(f"trust: {doc['trust']}" + _TRUST_NOTES.get(standing.state, ""))
    if found:
        lines.append("flagged: " + "; ".join(found) + " (reads like orders: it is data)")
    for p in proposals:
        who = p.memory.authorship(reader.names, reader.me).writer_name
        lines.append(f"{who} proposes to {p.verb}: {p.memory.id} ('sealmem captured')")
    return doc, lines


_TRUST_NOTES = {
    "review": " (not in your agent's automatic context until accepted: 'sealmem captured')",
    "muted": " (reaches no agent: 'sealmem trust purge NAME' deletes it here)",
}


def recall(
    query: Annotated[str, typer.Argument(help="What to look for, in plain words.")],
    k: Annotated[
        int,
        typer.Option(
            "--k", "-n", help="How many matches to show (then at most two related).", min=1
        ),
    ] = 5,
    project: ProjectOpt = None,
    all_projects: AllProjectsOpt = False,
    include_history: Annotated[
        bool, typer.Option("--include-history", help="Also search older versions.")
    ] = False,
    kind: Annotated[
        list[str] | None,
        typer.Option(
            "--kind", autocompletion=complete.kinds, help="Only these kinds (repeatable)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Search memories; show why each hit ranked and who wrote it."""
    from ..recall.matching import nothing_close
    from . import grouping

    with open_store(readonly=True) as store:
        hits = store.recall(
            query,
            k=grouping.wider(k),
            related_within=k,
            project=None if all_projects else resolve_project(project),
            all_projects=all_projects,
            include_history=include_history,
            kinds=kind or None,
        )
        names, me = member_names(store.connection), store.author
        reader = store.reader()
        trust = {h.memory.id: _trust(reader, h.memory) for h in hits}
        applied = reader.replacements(h.memory for h in hits)  # not a teammate's proposal
        # a teammate's edit or delete, too: the author's version stands (as agents see it)
        stands = {m.id: m for m, _ in reader.for_people(h.memory for h in hits)}
        hits = [
            replace(h, memory=stands[h.memory.id], superseded_by=applied.get(h.memory.id, []))
            for h in hits
            if h.memory.id in stands
        ]
        groups = grouping.group_hits(hits, k)  # near-duplicates: one entry, every writer
        due = grouping.due(store, groups)
    if as_json:

        def doc(h: Any) -> dict[str, Any]:
            return {
                **_authored(h.to_dict(), h.memory.authorship(names, me)),
                **trust[h.memory.id][0],
            }

        docs = [
            grouping.group_doc(
                doc(g.leader),
                [doc(h) for h in g.others],
                grouping.writers([h.memory for h in g.members], names, me),
            )
            for g in groups
        ]
        output.emit_json({"query": query, "hits": docs})
        grouping.note_recalled(due)
        return
    if not groups:
        output.say(f"nothing close to {query!r}: {nothing_close(query)}")
        return
    output.say(
        "\n\n".join(_hit_block(rank, g, trust, names, me) for rank, g in enumerate(groups, 1))
    )
    grouping.note_recalled(due)


def _hit_block(rank: int, group: Any, trust: dict[str, Any], names: Any, me: str) -> str:
    """One recall result as text: its heading, why it ranked, its trust and its repeats."""
    from . import grouping

    hit = group.leader
    others = [h.memory for h in group.others]
    label = "related, matches none of your words: " if hit.related else ""
    extra = [output.why_line(hit.why), *trust[hit.memory.id][1]]
    marked = {h.memory.id: grouping.marks(h) for h in group.others}
    extra += grouping.lines(others, names, me, stale=hit.stale, marked=marked)
    for newer in hit.superseded_by:
        extra.append(f"superseded by {newer.record.id}: {newer.record.content[:120]}")
    heading = f"{rank}. ({hit.score:.3f}) {label}"
    return output.memory_block(hit.memory, heading=heading, extra=extra, names=names, me=me)


def show(
    memory_id: Annotated[
        str, typer.Argument(metavar="ID", help=_ID_HELP, autocompletion=complete.memory_ids)
    ],
    history: Annotated[bool, typer.Option("--history", help="Also show older versions.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Show one memory in full, with its provenance."""
    with open_store(readonly=True) as store:
        memory = store.get(memory_id)
        older = store.history(memory.id) if history else []
        names, me = member_names(store.connection), store.author
        reader = store.reader()
        trust, notes = _trust(reader, memory)
        # a teammate's supersede of a memory it did not write is a proposal, in notes
        newer = reader.replacements([memory]).get(memory.id, [])
        # a teammate's edit or delete, too: the author's version stands (as agents see it)
        if (stands := reader.resolve(memory)) is not None:
            memory = stands.memory
    if as_json:
        doc = {
            **_authored(memory.to_dict(), memory.authorship(names, me)),
            "superseded_by": [m.to_dict() for m in newer],  # as recall --json has them
            **trust,
        }
        if history:
            doc = {"memory": doc, "history": [m.to_dict() for m in older]}
        output.emit_json(doc)
        return
    ids = [m.id for m in newer]
    extra = [f"SUPERSEDED by {', '.join(ids)} (sealmem show {ids[0]})"] if ids else []
    output.say(output.memory_block(memory, full=True, names=names, me=me, extra=extra + notes))
    for version in older:
        block = output.memory_block(version, full=True, names=names, me=me)
        output.say("\nolder version:\n" + block)


def list_(
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many.", min=1)] = 20,
    project: ProjectOpt = None,
    all_projects: AllProjectsOpt = False,
    full: Annotated[
        bool, typer.Option("--full", help="Every line of the content, not only the first.")
    ] = False,
    forgotten: Annotated[
        bool, typer.Option("--forgotten", help="Also list forgotten memories (tombstones).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """List the most recent memories: the first line of each, wrapped to the terminal."""
    from . import grouping, listing

    scope = None if all_projects else resolve_project(project)
    with open_store(readonly=True) as store:
        memories = store.recent(
            limit=limit, project=scope, all_projects=all_projects, forgotten=forgotten
        )
        reader = store.reader()
        listed = reader.for_people(memories)  # a teammate's proposal: the author's version
        memories = [m for m, _ in listed]
        notes = {m.id: note for m, note in listed if note}
        replaced = reader.replacements(memories)
        names, me = member_names(store.connection), store.author
        elsewhere = {} if memories else store.stats()["by_project"]
    groups = grouping.group_memories(memories, replaced)  # near-duplicates: one row, every writer
    memories = [g.leader for g in groups]
    if as_json:

        def doc(m: Memory) -> dict[str, Any]:
            return {**m.to_dict(), **({"proposal": notes[m.id]} if m.id in notes else {})}

        docs = [  # the memory's own document; a group's leader adds its group
            grouping.group_doc(
                doc(g.leader), [doc(m) for m in g.others], grouping.writers(g.members, names, me)
            )
            if g.others
            else doc(g.leader)
            for g in groups
        ]
        output.emit_json({"memories": docs})
        return
    for leader, note in grouping.list_notes(groups, names, me).items():
        notes[leader] = f"{notes[leader]}; {note}" if leader in notes else note
    if not memories:
        output.say(_none_listed(scope, elsewhere))
        return
    width = listing.terminal_width()
    table = listing.render(
        memories, replaced, names=names, me=me, width=width, full=full, notes=notes
    )
    output.say(table)


def _none_listed(scope: str | None, by_project: dict[str, int]) -> str:
    """Why ``list`` shows nothing: an empty store, or memories in other projects only."""
    if scope is None or not by_project:
        return "no memories yet; add one with: sealmem remember 'TEXT'"
    where = ", ".join(f"{output.clean(p)} ({n})" for p, n in sorted(by_project.items()))
    return (
        f"no memories in project {output.clean(scope)!r}; the store holds some in: {where}; "
        "see them with 'sealmem list --all-projects' or '--project NAME'"
    )


def _authored(doc: dict[str, Any], by: Authorship) -> dict[str, Any]:
    """``doc`` with who wrote it; the writer's ``verified`` is ``writer_verified``, apart
    from ``provenance.verified`` (whether a snapshot signature was checked)."""
    fields = by.to_dict()
    fields["writer_verified"] = fields.pop("verified")
    return {**doc, **fields}


def forget(
    memory_id: Annotated[
        str, typer.Argument(metavar="ID", help=_ID_HELP, autocompletion=complete.memory_ids)
    ],
    reason: Annotated[
        str | None,
        typer.Option("--reason", help="Required: why it is forgotten (kept in the tombstone)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Forget a memory: the text of every version is erased, the reason is kept."""
    if reason is None:
        raise InputError(
            f"forget refused: give --reason 'WHY' (e.g. sealmem forget {memory_id} "
            "--reason 'replaced by the v2 API'); the reason is kept in the tombstone"
        )
    with open_store() as store:
        tombstone = store.forget(memory_id, reason=reason)
    if as_json:
        output.emit_json(tombstone.to_dict())
        return
    output.say(f"forgot {tombstone.record.id} (reason: {tombstone.record.delete_reason})")


def register(app: typer.Typer) -> None:
    app.command()(remember)
    app.command()(recall)
    app.command()(show)
    app.command("list")(list_)
    app.command()(forget)
