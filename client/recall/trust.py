"""What a teammate's memory may do in the reader's agent contexts: the rules, pure.

Every surface that shows memories (session-start context, prompt hook, MCP tools,
CLI, viewer) asks these functions; :mod:`.standing` reads the store's state for them.

Trust is per member and set by the reader (DESIGN §7a):

==========  ==============================  =====================  ==============
state       explicit recall (MCP, CLI)      automatic contexts     review queue
==========  ==============================  =====================  ==============
own         yes                             yes, first             no
trusted     yes, labelled                   yes, within its share  no
review      yes, labelled                   once a person accepts  yes
muted       no agent surface at all         no                     no
==========  ==============================  =====================  ==============

A member in the roster that first named the reader starts ``trusted`` (so does one the
reader approved itself, as an admin); one approved later starts ``review`` for
the review period from when this store first saw it (the team's ``review_days``, or
the person's own on this machine, else :data:`REVIEW_DAYS`), then becomes ``trusted``.
A person's own setting wins.  A version whose writer is not established (an
unverified arrival) is treated as ``review``; an import a person ran here is theirs
to vouch for (``trusted``).

Budgets (:func:`plan`): the reader's own memories take up to :data:`OWN_SHARE` of an
automatic context first, whatever teammates publish; then every other writer, in turn,
gets at most its share of lines and characters, whatever importance it claims.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...protocol.settings import DEFAULTS

__all__ = [
    "MUTED",
    "OWN",
    "OWN_SHARE",
    "REVIEW",
    "REVIEW_DAYS",
    "STATES",
    "TRUSTED",
    "Budget",
    "Item",
    "Standing",
    "default_state",
    "plan",
]

TRUSTED, REVIEW, MUTED = "trusted", "review", "muted"
STATES = (TRUSTED, REVIEW, MUTED)
"""What a person may set for a member."""
OWN = "own"
REVIEW_DAYS = DEFAULTS["review_days"]
DAY_MS = 24 * 60 * 60 * 1000
OWN_SHARE = 0.75
"""The part of an automatic context the reader's own memories may fill first."""


def default_state(
    *, first_version: int, my_first_version: int | None, first_seen_at: int, now: int,
    approved_by_me: bool = False, review_ms: int = REVIEW_DAYS * DAY_MS,
) -> str:  # fmt: skip
    """A member's state when no person set one.

    ``first_version`` is the first roster version (accepted here) naming the member,
    ``my_first_version`` the first naming the reader (None: the reader is in no roster),
    ``first_seen_at`` when this store accepted the member's first roster;
    ``approved_by_me``: the reader (an admin) signed that roster, so it vetted the member."""
    if my_first_version is None or first_version <= my_first_version or approved_by_me:
        return TRUSTED
    return REVIEW if now < first_seen_at + review_ms else TRUSTED


@dataclass(frozen=True)
class Standing:
    """Where one version stands for the reader: whose it is and what it may reach."""

    writer: str | None
    """The member id that wrote the version (verified), None when unknown."""
    state: str
    """:data:`OWN`, :data:`TRUSTED`, :data:`REVIEW` or :data:`MUTED`."""
    verdict: str | None = None
    """A person's verdict on this version: ``accepted``, ``dismissed`` or None."""

    @property
    def own(self) -> bool:
        return self.state == OWN

    @property
    def reaches_agents(self) -> bool:
        """Explicit recall, ``get``, ``recent``: everything but a muted writer's."""
        return self.state != MUTED

    @property
    def automatic(self) -> bool:
        """May enter the session-start context and the prompt hook on its own."""
        if self.state in (OWN, TRUSTED):
            return self.verdict != "dismissed"
        return self.state == REVIEW and self.verdict == "accepted"

    @property
    def waiting(self) -> bool:
        """Waits in the review queue for a person's verdict."""
        return self.state == REVIEW and self.verdict is None

    @property
    def label(self) -> str:
        """The trust mark a line shows; "" for the reader's own."""
        if self.state == REVIEW and self.verdict == "accepted":
            return "review, accepted"
        return "" if self.own else self.state


@dataclass(frozen=True)
class Item:
    """One candidate line of an automatic context, in its writer's order of preference."""

    key: str
    writer: str
    """:data:`OWN` for the reader's own lines, else the writer's id (or a stand-in)."""
    chars: int
    parent: str | None = None
    """The line this one is shown under (a proposal): only chosen once that line is."""


@dataclass(frozen=True)
class Budget:
    """The size of an automatic context and each other writer's share of it."""

    chars: int
    max_lines: int = 10_000
    writer_lines: int = 8
    writer_share: float = 0.2


def plan(items: Sequence[Item], budget: Budget) -> list[str]:
    """The keys of ``items`` that enter the context, in order: own lines first (up to
    :data:`OWN_SHARE` of the room), then each other writer in turn within its share, then
    own lines again in whatever room is left.  ``items`` come best first per writer."""
    chosen: list[str] = []
    taken: set[str] = set()
    used = 0

    def fits(item: Item, room: float) -> bool:
        return (
            item.key not in taken
            and (item.parent is None or item.parent in taken)
            and used + item.chars <= room
            and len(chosen) < budget.max_lines
        )

    def take(item: Item) -> None:
        nonlocal used
        chosen.append(item.key)
        taken.add(item.key)
        used += item.chars

    own = [i for i in items if i.writer == OWN]
    for item in own:
        if fits(item, budget.chars * OWN_SHARE):
            take(item)
    queues: dict[str, list[Item]] = {}
    for item in items:
        if item.writer != OWN:
            queues.setdefault(item.writer, []).append(item)
    spent = dict.fromkeys(queues, 0)
    lines = dict.fromkeys(queues, 0)
    share = budget.chars * budget.writer_share
    progress = True
    while progress:
        progress = False
        for writer, queue in queues.items():
            while queue:
                item = queue.pop(0)
                if lines[writer] >= budget.writer_lines:
                    queue.clear()
                    break
                if spent[writer] + item.chars <= share and fits(item, budget.chars):
                    take(item)
                    spent[writer] += item.chars
                    lines[writer] += 1
                    progress = True
                    break
    for item in own:
        if fits(item, budget.chars):
            take(item)
    order = {item.key: n for n, item in enumerate(items)}
    mine = sorted((k for k in chosen if k in {i.key for i in own}), key=order.__getitem__)
    return mine + [k for k in chosen if k not in set(mine)]
