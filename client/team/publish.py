"""Publishing a roster change with its keyrings (the I/O around ``protocol.admin``).

Every admin operation ends here: one new roster version (the pure edits of
``protocol.admin``), signed by this member's admin key, published with the
keyrings it needs.  A change that only adds readers re-publishes the project's
current keyring with wraps for the new readers (same epoch, same key); one that
removes a reader, or ``admin rotate``, starts a new epoch with a fresh content
key.  An admin that cannot unwrap the current key falls back to a new epoch.  A
new reader is also wrapped every older epoch of its projects this admin holds
(the older keyrings are re-published citing the new roster), so it reads what
the team already wrote; ``from_now`` wraps only the current epoch, and
:func:`missing_history` names the older epochs this admin cannot unwrap.
Keyrings are published before the roster that names their epoch, so a reader
who sees the roster finds its keyrings.  Before changing anything the admin
refreshes its roster from the transport (:func:`admin_state`), so it always
extends the newest version.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from ...crypto import SUITE, ContentKey
from ...protocol import admin as edits
from ...protocol.errors import InputError, Rejected
from ...protocol.keyring import Keyring, build_keyring, extend_keyring
from ...protocol.roster import Roster
from ...protocol.state import TrustedState
from ...protocol.verify import accept_keyring, accept_roster
from ..store.connection import transaction
from ..sync import replica
from ..sync.session import Team, trusted_roster

__all__ = ["admin_state", "change", "missing_history", "publish"]


def publish(
    team: Team,
    state: TrustedState,
    roster: Roster,
    rekey: Iterable[str],
    now: int,
    *,
    extend: Iterable[str] = (),
    history: Mapping[str, Collection[str]] | None = None,
) -> Roster:
    """Sign and publish ``roster`` with new keyrings for ``rekey``, the current key
    re-wrapped to the readers of ``roster`` for ``extend``, and every older epoch this
    admin holds re-wrapped to the kids ``history`` names per project; trust them
    locally (the store then holds the new state: :meth:`Team.trusted` reads it back)."""
    roster = roster.check(SUITE)
    keys = {p: ContentKey.generate() for p in set(rekey)}
    for project in set(extend) - keys.keys():
        key = _current_key(team, state, roster, project)
        if key is None:
            raise InputError(
                f"cannot re-wrap the key of {project!r}: this admin holds none; "
                "rotate the project instead ('sealmem admin rotate')"
            )
        keys[project] = key
    keyrings = []
    for project in sorted(keys):
        keyring = build_keyring(keys[project], roster, project)
        keyrings.append((project, keyring.epoch, keyring.sign(team.key)))
    for project, kids in sorted((history or {}).items()):
        for keyring in _older_keyrings(team, state, roster, project, kids):
            keyrings.append((project, keyring.epoch, keyring.sign(team.key)))
    roster_bytes = roster.sign(team.key)
    for project, epoch, data in keyrings:
        team.transport.put_keyring(project, epoch, data)
    team.transport.put_roster(roster.version, roster_bytes)
    state, _ = accept_roster(SUITE, state, roster_bytes)
    with transaction(team.conn):
        replica.save_roster(team.conn, roster.version, roster_bytes, now)
        for project, epoch, data in keyrings:
            if roster.can_read(team.me, project):
                state, _ = accept_keyring(SUITE, state, data)
                replica.save_keyring(team.conn, project, epoch, data, now)
    return roster


def admin_state(team: Team, now: int) -> tuple[TrustedState, Roster]:
    """The refreshed trusted state and its roster, which must name this member an admin."""
    state, _ = team.refresh(team.trusted(), now)
    roster = trusted_roster(state)
    if not roster.is_admin(team.me):
        raise InputError(
            f"member {team.me} is not an admin of team {team.config.team} "
            f"(roster v{roster.version}); ask an admin to run this command"
        )
    return state, roster


def _current_key(
    team: Team, state: TrustedState, roster: Roster, project: str
) -> ContentKey | None:
    """This admin's key for ``project``'s epoch in ``roster``, if it holds a valid one."""
    epoch = roster.projects.get(project)
    return None if epoch is None else _key(team, state, project, epoch)


def _older_epochs(state: TrustedState, roster: Roster, project: str) -> list[int]:
    """The epochs ``project`` had before its epoch in ``roster``, oldest first."""
    current = roster.projects.get(project)
    if current is None:
        return []
    seen = {r.projects[project] for r in state.rosters.values() if project in r.projects}
    seen |= {epoch for (p, epoch) in state.keyrings if p == project}
    return sorted(e for e in seen if e < current)


def _key(team: Team, state: TrustedState, project: str, epoch: int) -> ContentKey | None:
    try:
        return team.content_key(state, project, epoch)
    except Rejected:  # a wrap that does not match key_id: never re-wrap it
        return None


def _older_keyrings(
    team: Team, state: TrustedState, roster: Roster, project: str, kids: Collection[str]
) -> list[Keyring]:
    """Each older epoch of ``project`` this admin holds, re-published citing ``roster``
    and wrapped to ``kids`` too (an epoch where they all hold a wrap already is left
    as it is); epochs this admin cannot unwrap are skipped (:func:`missing_history`)."""
    out: list[Keyring] = []
    for epoch in _older_epochs(state, roster, project):
        known = state.keyring(project, epoch)
        key = _key(team, state, project, epoch)
        if known is None or key is None or set(kids) <= set(known.wraps):
            continue
        out.append(extend_keyring(known, key, roster, sorted(kids)))
    return out


def missing_history(team: Team, projects: Iterable[str] | None = None) -> dict[str, list[int]]:
    """Per project, the older epochs this admin cannot wrap to a new reader (it holds
    no valid key for them): members it adds do not read what was written under them.

    ``projects`` defaults to every project of the trusted roster.
    """
    state = team.trusted()
    roster = trusted_roster(state)
    gaps: dict[str, list[int]] = {}
    for project in sorted(roster.projects if projects is None else set(projects)):
        if project not in roster.projects:
            continue
        epochs = _older_epochs(state, roster, project)
        lost = [e for e in epochs if _key(team, state, project, e) is None]
        if lost:
            gaps[project] = lost
    return gaps


def _added_readers(
    team: Team, state: TrustedState, roster: Roster, projects: Iterable[str]
) -> tuple[list[str], list[str]]:
    """Split projects that gain readers into (extend the current epoch, rotate): a
    project whose current key this admin cannot unwrap gets a new epoch."""
    extend: list[str] = []
    rotate: list[str] = []
    for project in sorted(set(projects)):
        has_key = _current_key(team, state, roster, project) is not None
        (extend if has_key else rotate).append(project)
    return extend, rotate


def change(
    team: Team,
    state: TrustedState,
    changes: Sequence[edits.Edit],
    now: int,
    *,
    new: Iterable[str] = (),
    readers_added: Iterable[str] = (),
    from_now: bool = False,
) -> Roster:
    """One new roster version with ``changes`` (``protocol.admin``), published with keyrings
    (see the module docstring): ``new`` projects get a fresh key; projects in
    ``readers_added`` are wrapped to their new readers."""
    roster = trusted_roster(state)
    extend, rekey = _added_readers(team, state, roster, set(readers_added) - set(new))
    changes = [*changes, *(edits.rotating(p) for p in rekey)]
    nxt = edits.next_roster(SUITE, roster, *changes, created_at=now)
    history: dict[str, Collection[str]] = {}
    if not from_now:
        for project in set(readers_added):
            before = {m.kid for m in roster.readers(project)}
            added = {m.kid for m in nxt.readers(project)} - before
            if added:
                history[project] = added
    return publish(team, state, nxt, [*new, *rekey], now, extend=extend, history=history)
