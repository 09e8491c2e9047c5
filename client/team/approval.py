"""Join requests, as an admin sees them: list and show them, approve or reject them.

A request is checked against this admin's invites (SPEC "Admission") and shown
with its fingerprint; ``admin approve`` approves what ``admin requests`` showed,
as it was shown (:mod:`.inbox` keeps that record and the rejected ones).
Approving publishes one roster version adding the members (:mod:`.publish`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ...protocol import admin as edits
from ...protocol.admission import (
    InviteRecord,
    RequestView,
    check_request_against_invite,
    mark_invite_used,
)
from ...protocol.devices import Introduced
from ...protocol.errors import InputError, Rejected
from ...protocol.names import name_problem
from ...protocol.roster import Member
from ...protocol.state import TrustedState
from ..sync.session import Team
from .inbox import (
    Inbox,
    RejectedLog,
    Shown,
    check_name_free,
    forget_shown,
    load_rejected,
    record_rejected,
    resolve,
    save_shown,
    waiting_requests,
)
from .invite import classify_requests
from .publish import admin_state, change
from .registry import load_registry, update_registry

__all__ = [
    "Approved",
    "ShownPlan",
    "approve",
    "chosen_requests",
    "plan_shown",
    "reject",
    "show_requests",
]


@dataclass(frozen=True)
class Approved:
    kid: str
    name: str
    fingerprint: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _inbox(team: Team, now: int) -> Inbox:
    """The waiting requests, checked against this admin's invites at ``now``."""
    waiting = team.transport.requests()
    roster = team.trusted().roster
    views = classify_requests(waiting, load_registry(team.home), roster, team.config.team, now)
    return Inbox.of(waiting, views, roster)


def _chosen(
    views: Sequence[RequestView], selectors: Sequence[str], *, admissible: bool
) -> list[RequestView]:
    """The requests ``selectors`` name, each once, in the order named."""
    chosen: list[RequestView] = []
    for selector in selectors:
        view = resolve(views, selector, admissible=admissible)
        if view not in chosen:
            chosen.append(view)
    return chosen


def show_requests(team: Team, now: int) -> tuple[list[dict[str, Any]], Shown]:
    """Join requests waiting, checked, with fingerprints (refused ones say why), age,
    name clashes and when this admin rejected that key before; and record the admissible
    ones as shown at ``now``: what ``admin approve`` approves (:mod:`.inbox`)."""
    inbox = _inbox(team, now)
    rejected = load_rejected(team.home, team=team.config.team)
    shown = Shown(
        team.config.team, now, {v.kid: inbox.hashes[v.kid] for v in waiting_requests(inbox.views)}
    )
    save_shown(team.home, shown)
    return inbox.to_dicts(now, rejected), shown


@dataclass(frozen=True)
class ShownPlan:
    """What approving the shown set does now: who is approved, who is left waiting (arrived
    or changed since, rejected since, or refused now) and which shown requests are gone."""

    approve: list[RequestView]
    left: list[RequestView]
    gone: list[str]
    rejected: frozenset[str] = frozenset()
    """Kids of ``left`` that this admin rejected after they were shown."""


def plan_shown(team: Team, shown: Shown, now: int) -> ShownPlan:
    """Match the waiting requests against ``shown`` (:func:`~.inbox.load_shown`)."""
    inbox = _inbox(team, now)
    rejected = load_rejected(team.home, team=team.config.team)
    chosen: list[RequestView] = []
    left: list[RequestView] = []
    again = set()
    for view in inbox.views:
        if view.member:
            continue
        same = shown.requests.get(view.kid) == inbox.hashes.get(view.kid)
        if rejected.after(view.kid, shown.shown_at):
            again.add(view.kid)
            same = False
        (chosen if same and view.refused is None else left).append(view)
    gone = sorted(set(shown.requests) - {v.kid for v in inbox.views})
    return ShownPlan(chosen, left, gone, frozenset(again))


def chosen_requests(team: Team, selectors: Sequence[str], now: int) -> list[RequestView]:
    """The waiting requests ``selectors`` name, as :func:`approve` resolves them (to show
    their fingerprints before approving)."""
    return _chosen(_inbox(team, now).views, selectors, admissible=True)


def approve(
    team: Team,
    kids: Sequence[str],
    *,
    projects: Sequence[str] | None,
    read: bool,
    write: bool,
    now: int,
    from_now: bool = False,
    rename: str | None = None,
    expect: Shown | None = None,
) -> list[Approved]:
    """Add the members of the join requests ``kids`` names (kids, kid prefixes of 8+
    characters, or names unique among the waiting requests).

    All or nothing.  A request that is refused (SPEC "Admission": an unknown,
    expired, used or mismatched invite, or an invalid request) is never
    approved, nor one whose name looks like a member's or another waiting
    request's, unless ``rename`` gives the one request chosen a new name.  With
    ``expect`` (what ``admin requests`` showed: kid -> request hash, and when), a
    request that was not shown, whose bytes differ, or that this admin rejected
    since is refused; without, a request this admin ever rejected is refused.
    ``from_now``: see :mod:`.publish`.
    """
    if not kids:
        raise InputError(
            "name the join requests to approve (names or ids); 'sealmem admin requests' lists them"
        )
    if rename is not None and len(kids) != 1:
        raise InputError("--as renames one request: approve that one alone")
    if rename is not None and (problem := name_problem(rename)):
        raise InputError(f"the member name {rename!r} {problem}")
    state, roster = admin_state(team, now)
    inbox = _inbox(team, now)
    rejected = load_rejected(team.home, team=team.config.team)
    chosen = _chosen(inbox.views, kids, admissible=True)
    granted = sorted(set(projects) if projects else set(roster.projects))
    changes: list[edits.Edit] = []
    done: list[tuple[Approved, str]] = []
    registry = load_registry(team.home)
    readable: set[str] = set(granted) if read else set()
    if any(v.device is not None for v in chosen):
        changes.append(edits.upgrading(team.me, first_listed(state)))
    for view in chosen:
        if view.device is not None:
            _check_shown(str(view.name), view.kid, inbox.hashes.get(view.kid), expect, rejected)
            changes.append(_adding_device(view, team.me))
            owner = view.device.member
            readable |= {p for p in roster.projects if roster.can_read(owner, p)}
            done.append((Approved(view.kid, str(view.name), str(view.fingerprint)), ""))
            continue
        req = view.request
        if view.refused is not None or req is None:
            reason, detail = view.refused or ("malformed", "unreadable")
            raise InputError(f"join request {view.kid} is refused ({reason}): {detail}")
        if roster.member(req.kid) is not None:
            raise InputError(f"{req.name} ({req.kid}) is already a member")
        _check_shown(req.name, req.kid, inbox.hashes.get(req.kid), expect, rejected)
        name = rename or req.name
        taken = [a.name for a, _ in done]
        check_name_free(name, req.kid, roster, inbox.views, taken, renamed=rename is not None)
        try:  # two requests in one approval may race for one single-use invite
            check_request_against_invite(req, registry.get(req.invite_id), now)
        except Rejected as exc:
            raise InputError(
                f"join request {view.kid} is refused ({exc.reason}): {exc.detail}"
            ) from exc
        registry = mark_invite_used(registry, req.invite_id, req.kid)
        member = Member(req.kid, name, req.sign_public, req.box_public)
        add = edits.adding_member(
            member, projects=granted, read=read, write=write, approved_by=team.me
        )
        changes.append(add)
        done.append((Approved(req.kid, name, str(view.fingerprint)), req.invite_id))
    update_registry(team.home, lambda reg: _mark_all(reg, done))
    change(team, state, changes, now, readers_added=sorted(readable), from_now=from_now)
    for item, _ in done:
        team.transport.remove_request(item.kid)
    return [item for item, _ in done]


def first_listed(state: TrustedState) -> dict[str, int]:
    """Each kid of the trusted rosters -> the first version that listed it (the upgrade
    to roster v2 records it as the first device's ``added_at``)."""
    out: dict[str, int] = {}
    for version in sorted(state.rosters):
        for m in state.rosters[version].members:
            out.setdefault(m.kid, version)
    return out


def _adding_device(view: RequestView, me: str) -> edits.Edit:
    """The edit that appends the device of a checked device join request."""
    if view.refused is not None or view.device is None:
        reason, detail = view.refused or ("malformed", "unreadable")
        raise InputError(f"device join request {view.kid} is refused ({reason}): {detail}")
    join = view.device
    return edits.adding_device(
        join.member, kid=join.kid, name=join.name, sign_public=join.sign_public,
        box_public=join.box_public, approved_by=me,
        introduced_by=Introduced(join.invite_signer, join.invite_id),
    )  # fmt: skip


def _check_shown(
    name: str, kid: str, digest: str | None, expect: Shown | None, rejected: RejectedLog
) -> None:
    """Refuse a request ``expect`` did not show as it is now, or rejected since."""
    again = "run 'sealmem admin requests' again, compare its fingerprint, then approve"
    if rejected.after(kid, None if expect is None else expect.shown_at):
        raise InputError(
            f"you rejected the join request of {name!r} ({kid}) after it was shown; if it "
            f"was posted again and you mean to let it in: {again}"
        )
    if expect is None:
        return
    if kid not in expect.requests:
        raise InputError(
            f"the join request of {name!r} ({kid}) is not one the last 'sealmem admin "
            f"requests' showed (it arrived since, or another key took that name): {again}"
        )
    if expect.requests[kid] != digest:
        raise InputError(
            f"the join request of {name!r} ({kid}) changed since it was shown: {again}"
        )


def reject(
    team: Team, kids: Sequence[str], *, all_refused: bool = False, now: int
) -> list[RequestView]:
    """Remove the join requests ``kids`` names (as :func:`approve` resolves them) and, with
    ``all_refused``, every refused one and every one of a key that is already a member.

    The rejected requests leave the record of what ``admin requests`` showed, and
    are noted (kid, request hash) so the same request posted again is not approved
    before ``admin requests`` shows it again, flagged (:mod:`.inbox`)."""
    if not kids and not all_refused:
        raise InputError("name the join requests to reject (names or ids), or give --all-refused")
    inbox = _inbox(team, now)
    chosen = _chosen(inbox.views, kids, admissible=False)
    if all_refused:
        chosen += [
            v for v in inbox.views if (v.refused is not None or v.member) and v not in chosen
        ]
    noted = {v.kid: inbox.hashes[v.kid] for v in chosen if v.kid in inbox.hashes}
    record_rejected(team.home, team=team.config.team, requests=noted, now=now)
    forget_shown(team.home, noted)
    for view in chosen:
        team.transport.remove_request(view.kid)
    return chosen


def _mark_all(
    registry: dict[str, InviteRecord], done: Sequence[tuple[Approved, str]]
) -> dict[str, InviteRecord]:
    for item, invite_id in done:
        registry = mark_invite_used(registry, invite_id, item.kid)
    return registry
