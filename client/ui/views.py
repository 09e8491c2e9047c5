"""What each page shows, read from the store: plain data for the templates.

Nothing here renders or escapes (the templates do); nothing here writes.
Authorship is :meth:`Memory.authorship` (the one rule every renderer follows):
the writer is the local member or the verified signer, never the claimed author.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...protocol.errors import SealmemError
from ..recall import dupes
from ..recall.dupes import group, stands_alone
from ..recall.matching import nothing_close
from ..recall.names import member_names
from ..store.ids import short_id
from ..store.rows import MEMORY_COLUMNS, memory_from_row
from .charts import stacked_bars

if TYPE_CHECKING:
    from ..recall.api import MemoryStore
    from ..store.memory import Authorship, Memory
    from ..sync.local_only import LocalOnly

__all__ = [
    "Card",
    "captured_page",
    "day",
    "memory_page",
    "review_page",
    "search_page",
    "store_page",
    "team_page",
    "timeline_columns",
    "timeline_page",
]

TIMELINE_LIMIT = 500
REVIEW_LIMIT = 200
#: A search shows this many results (groups of near-duplicates), then its related ones.
SHOWN = 30


def _utc(ms: int | None, form: str) -> str:
    return "-" if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC).strftime(form)


DAY, WEEK = "%Y-%m-%d", "%G-W%V"
#: A time chart shows at least this many columns: one bar alone says nothing of a trend.
MIN_COLUMNS = 8


def timeline_columns(
    counts: Mapping[str, Mapping[str, int]], form: str, most: int
) -> list[tuple[str, dict[str, int]]]:
    """``counts`` by day (``DAY``) or ISO week (``WEEK``) as chart columns: every day or
    week from the first to the last, empty ones included, at least :data:`MIN_COLUMNS`
    (ending at the last), at most ``most`` (the latest)."""
    if not counts:
        return []
    step = timedelta(days=7 if form == WEEK else 1)

    def parse(label: str) -> datetime:  # a week is read as its Monday
        return (
            datetime.strptime(f"{label}-1", f"{WEEK}-%u")
            if form == WEEK
            else (datetime.strptime(label, DAY))
        )

    first, last = parse(min(counts)), parse(max(counts))
    start = min(first, last - step * (MIN_COLUMNS - 1))
    start = max(start, last - step * (most - 1))
    labels = []
    while start <= last:
        labels.append(start.strftime(form))
        start += step
    return [(label, dict(counts.get(label, {}))) for label in labels]


def day(ms: int | None) -> str:
    return _utc(ms, "%Y-%m-%d")


def when(ms: int | None) -> str:
    return _utc(ms, "%Y-%m-%d %H:%M UTC")


@dataclass(frozen=True)
class Card:
    """One memory as a list shows it."""

    memory: Memory
    by: Authorship
    short: str
    replaced_by: list[Memory]
    proposal: str = ""
    """A teammate's proposal to delete or change it ("NAME proposes to delete it")."""

    @property
    def first_line(self) -> str:
        text = self.memory.content or f"(forgotten: {self.memory.record.delete_reason})"
        line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        return line if len(line) <= 160 else line[:157] + "..."


def _cards(store: MemoryStore, memories: list[Memory], *, standing: bool = True) -> list[Card]:
    """Cards of ``memories``: with ``standing``, of the versions that stand (the author's
    beside a teammate's proposal, marked); else of the versions given (the review queue)."""
    names, me = member_names(store.connection), store.author
    reader = store.reader()
    replaced = reader.replacements(memories)  # not a teammate's proposal
    shown = reader.for_people(memories) if standing else [(m, "") for m in memories]
    return [
        Card(m, m.authorship(names, me), short_id(m.id), replaced.get(m.id, []), note)
        for m, note in shown
    ]


def search_page(
    store: MemoryStore, query: str, project: str | None, kind: str | None
) -> dict[str, Any]:
    """Recall (the same ranking as the CLI and MCP, with its "why"), or the most recent;
    near-duplicates in one entry (``others``: the rest of its group, every writer), a
    recalled memory no one confirmed within the review period marked ``stale``; ``due``:
    the ids a search shows whose recall is not noted today (the page notes them after
    it is sent, :mod:`..store.freshness`)."""
    kinds = [kind] if kind else None
    results: list[dict[str, Any]] = []
    if query.strip():
        hits = store.recall(  # twice what it shows: room for what near-duplicates leave
            query, k=2 * SHOWN, project=project, all_projects=project is None, kinds=kinds,
            related_within=SHOWN,
        )  # fmt: skip
        by_id = {h.memory.id: h for h in hits}  # a card per hit whose version stands
        pairs = [(c, by_id[c.memory.id]) for c in _cards(store, [h.memory for h in hits])]
        groups = group(
            pairs,
            lambda p: p[0].memory.content,
            alone=lambda p: stands_alone(p[0].memory, _replaced(p[0])),
        )
        for found in dupes.shown(groups, SHOWN, lambda p: p[1].related):
            c, h = found.leader
            results.append(
                {
                    "card": c,
                    "score": h.score,
                    "why": sorted(h.why.items(), key=lambda kv: -kv[1]),
                    "related": h.related,
                    "stale": h.stale,
                    "others": [card for card, _ in found.others],
                    "stale_others": [h.stale for _, h in found.others],
                    "related_others": [h.related for _, h in found.others],
                }
            )
    else:
        recent = store.recent(limit=50, project=project, all_projects=project is None)
        if kind:
            recent = [m for m in recent if m.kind == kind]
        for one in group(
            _cards(store, recent), lambda c: c.memory.content,
            alone=lambda c: stands_alone(c.memory, _replaced(c)),
        ):  # fmt: skip
            results.append(
                {
                    "card": one.leader,
                    "score": None,
                    "why": [],
                    "related": False,
                    "others": one.others,
                }
            )
    nothing = nothing_close(query) if query.strip() and not results else ""
    shown = [
        x.memory.id for r in results if r["score"] is not None for x in [r["card"], *r["others"]]
    ]
    return {
        "query": query, "project": project or "", "kind": kind or "", "results": results,
        "nothing": nothing, "due": store.recall_due(shown) if shown else [],
    }  # fmt: skip


def review_page(store: MemoryStore, project: str | None) -> dict[str, Any]:
    """What ``sealmem review`` lists: the memories no one confirmed within the review
    period, oldest first, each with when it last was; the page offers keep, correct
    and forget for each of the oldest :data:`REVIEW_LIMIT` (``total``: how many are
    stale; a store of years holds thousands, a page of all of them would not load)."""
    found = store.stale(project=project, all_projects=project is None)
    confirmed = {m.id: at for m, at in found}
    items = [
        {"card": c, "confirmed": confirmed.get(c.memory.id)}
        for c in _cards(store, [m for m, _ in found[:REVIEW_LIMIT]])
    ]
    return {
        "project": project or "", "days": store.review_period(), "items": items,
        "total": len(found), "limit": REVIEW_LIMIT,
    }  # fmt: skip


def _replaced(card: Card) -> bool:
    return bool(card.replaced_by)


def memory_page(store: MemoryStore, given: str) -> dict[str, Any]:
    """One memory: full text, fields, authorship, history, what it replaced and what replaced it."""
    memory = store.get(given)
    names, me = member_names(store.connection), store.author
    replaced: list[dict[str, Any]] = []
    for old_id in memory.record.supersedes:
        try:
            old = store.get(old_id)
        except SealmemError:
            replaced.append({"id": old_id, "short": short_id(old_id), "memory": None})
            continue
        replaced.append({"id": old.id, "short": short_id(old.id), "memory": old})
    successors = store.reader().replacements([memory]).get(memory.id, [])
    history = store.history(memory.id)
    by = memory.authorship(names, me)
    return {
        "memory": memory,
        "stays_local": _stays_local(store, memory) if by.mine else None,
        "short": short_id(memory.id),
        "by": by,
        "supersedes": replaced,
        "superseded_by": [
            {"memory": m, "short": short_id(m.id), "by": m.authorship(names, me)}
            for m in successors
        ],
        "history": [
            {"memory": m, "by": m.authorship(names, me)}
            for m in history
            if (m.record.hlc, m.content) != (memory.record.hlc, memory.content)
        ],
    }


def _stays_local(store: MemoryStore, memory: Memory) -> LocalOnly | None:
    """Why this member's team memory would stay on this machine (None: it is pushed, or
    the store is in no team): "visibility team" must not read as "shared"."""
    if memory.deleted or memory.record.visibility != "team":
        return None
    from ..sync.local_only import stays_local

    return stays_local(store.connection, store.author, memory.project)


def timeline_page(store: MemoryStore, project: str | None, kind: str | None) -> dict[str, Any]:
    """Memories by day (newest first), and a chart of memories per week per writer."""
    where, params = ["deleted = 0"], []
    if project:
        where.append("project = ?")
        params.append(project)
    if kind:
        where.append("kind = ?")
        params.append(kind)
    rows = store.connection.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {' AND '.join(where)} "
        "ORDER BY created_at DESC, id LIMIT ?",
        (*params, TIMELINE_LIMIT),
    ).fetchall()
    cards = _cards(store, [memory_from_row(r) for r in rows])
    days: dict[str, list[Card]] = defaultdict(list)
    weeks: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for card in cards:
        days[day(card.memory.record.created_at)].append(card)
        weeks[_utc(card.memory.record.created_at, "%G-W%V")][card.by.writer_name] += 1
    columns = timeline_columns(weeks, WEEK, 26)
    projects = [r[0] for r in store.connection.execute("SELECT DISTINCT project FROM memories")]
    kinds = [r[0] for r in store.connection.execute("SELECT DISTINCT kind FROM memories")]
    return {
        "project": project or "",
        "kind": kind or "",
        "projects": sorted(projects),
        "kinds": sorted(kinds),
        "days": list(days.items()),
        "limit": TIMELINE_LIMIT,
        "truncated": len(cards) == TIMELINE_LIMIT,
        "chart": stacked_bars("memories per week, by writer", columns),
    }


def team_page(home: Path, store: MemoryStore) -> dict[str, Any]:
    """Roster, members, grants, last sync, alarms, refusals; sync and refusal charts."""
    from ..sync import replica
    from ..sync.session import sync_health

    conn = store.connection
    health = sync_health(home, conn)
    doc: dict[str, Any] = {
        "health": health,
        "status": None,
        "problem": None,
        "names": member_names(conn),
        "periods": store.applied_periods(),
    }
    if health.get("configured"):
        doc["status"], doc["problem"] = _team_status(home, store)
    refusals = replica.recent_refusals(conn, limit=200)
    doc["refusals"] = refusals[:50]
    by_day: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in refusals:
        by_day[day(r["at"])][r["reason"]] += 1
    doc["refusal_chart"] = stacked_bars(
        "refusals per day, by reason", timeline_columns(by_day, DAY, 30)
    )
    runs: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for (finished,) in conn.execute("SELECT finished_at FROM sync_runs ORDER BY seq"):
        runs[day(int(finished))]["syncs"] += 1
    doc["sync_chart"] = stacked_bars("syncs per day", timeline_columns(runs, DAY, 30))
    return doc


def _team_status(home: Path, store: MemoryStore) -> tuple[dict[str, Any] | None, str | None]:
    """The team's status from the trusted state in the store (no network)."""
    from ..identity import load_member_key
    from ..sync.session import Team

    try:
        team = Team.open(home, store, load_member_key(home, create=False))
        try:
            return team.status(), None
        finally:
            team.transport.close()
    except SealmemError as exc:
        return None, str(exc)


def store_page(store: MemoryStore) -> dict[str, Any]:
    """Counts, sizes and the doctor's checks."""
    return {"stats": store.stats(), "checks": store.doctor(), "db_path": str(store.path)}


def captured_page(store: MemoryStore) -> dict[str, Any]:
    """Captured memories waiting for review (private until accepted)."""
    from ..hosts.review import forgets, from_teammates, ref, waiting

    theirs = from_teammates(store)
    cards = _cards(store, [t.memory for t in theirs], standing=False)
    teammates = [
        {
            "card": card,
            "ref": ref(t),
            "action": t.action,
            "trust": t.standing.state,
            "flags": t.flags,
            "target": None if t.target is None else short_id(t.target.id),
        }
        for card, t in zip(cards, theirs, strict=True)
    ]
    asked = forgets(store)
    forgetting = [
        {"card": card, "reason": f.reason}
        for card, (f, _) in zip(_cards(store, [m for _, m in asked]), asked, strict=True)
    ]
    return {
        "cards": _cards(store, waiting(store), standing=False),
        "teammates": teammates,
        "forgets": forgetting,
    }
