"""The team session of one sealmem home: config, trusted state, roster refresh, status.

The config (``<home>/team.json``) names the team, the pinned root key and where
the team's objects live.  What this member trusts (rosters, keyrings, chain
heads) lives in the store (:mod:`sealmem.client.sync.replica`), re-verified on load.
:class:`Team` bundles the store, the member key, the config and the transport
for the sync engine (:mod:`sealmem.client.sync.engine`) and the admin operations
(:mod:`sealmem.client.team.admin`); joining is :mod:`sealmem.client.team.join`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...crypto import SUITE, ContentKey, MemberKey, PublicIdentity
from ...protocol import hubapi, reasons
from ...protocol.encoding import b64d, b64e
from ...protocol.errors import InputError, Rejected, SealmemError, StoreError
from ...protocol.names import select
from ...protocol.roster import Member, Roster
from ...protocol.state import TrustedState
from ...protocol.verify import accept_keyring, accept_roster
from ..clock import now_ms
from ..fsutil import atomic_write
from ..store.connection import transaction
from . import clockhealth, replica
from .hub import is_hub_location, open_transport
from .local_only import local_only
from .transport import Transport

if TYPE_CHECKING:  # avoids importing the store API at module load
    from ..recall.api import MemoryStore

__all__ = [
    "CONFIG_FILE",
    "DEFAULT_GC_GRACE_MS",
    "SERIOUS",
    "Refusal",
    "Team",
    "TeamConfig",
    "find_member",
    "sync_health",
    "transport_for",
    "trusted_roster",
]

CONFIG_FILE = "team.json"
DEFAULT_GC_GRACE_MS = 24 * 60 * 60 * 1000
"""Unreferenced chunks stay this long so that readers a little behind still find them."""


@dataclass(frozen=True)
class Refusal:
    """One object a sync refused: the named reason, what it was, and why."""

    reason: str
    object: str
    detail: str


@dataclass(frozen=True)
class TeamConfig:
    team: str
    root_public: bytes
    root_box_public: bytes
    location: str
    name: str
    transport: str = "folder"
    gc_grace_ms: int = DEFAULT_GC_GRACE_MS

    @property
    def root_fingerprint(self) -> str:
        return PublicIdentity.from_public_keys(self.root_public, self.root_box_public).fingerprint()

    def save(self, home_dir: Path) -> None:
        doc = {**asdict(self), "root_public": b64e(self.root_public)}
        doc["root_box_public"] = b64e(self.root_box_public)
        text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
        atomic_write(Path(home_dir) / CONFIG_FILE, text.encode("utf-8"), mode=0o600)

    @classmethod
    def load(cls, home_dir: Path) -> TeamConfig:
        path = Path(home_dir) / CONFIG_FILE
        if not path.exists():
            raise InputError(
                f"this sealmem home ({home_dir}) is not in a team yet; run "
                "'sealmem team create NAME --folder PATH' or 'sealmem team join INVITE'"
            )
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                team=str(doc["team"]),
                root_public=b64d(doc["root_public"]),
                root_box_public=b64d(doc["root_box_public"]),
                location=str(doc["location"]),
                name=str(doc["name"]),
                transport=str(doc.get("transport", "folder")),
                gc_grace_ms=int(doc.get("gc_grace_ms", DEFAULT_GC_GRACE_MS)),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise StoreError(
                f"the team config {path} is unreadable ({exc}); restore it or join again"
            ) from exc


SERIOUS: frozenset[str] = frozenset(
    {reasons.FORK, reasons.EQUIVOCATION, reasons.ROLLBACK, reasons.BAD_SIGNATURE}
)
"""Refusal reasons that point at an attack or a broken writer, not a slow folder."""


def sync_health(home_dir: Path, conn: Any) -> dict[str, Any]:
    """Sync state for status displays (CLI, MCP): team, last sync, refusals, alarms.

    Needs no key: it reads the team config and the store's sync tables only.
    """
    try:
        config = TeamConfig.load(home_dir)
    except InputError:
        return {"configured": False, "detail": "not in a team (local only)"}
    from .freshness import alarm  # (freshness reads the team session: imported late)

    refusals = replica.recent_refusals(conn, limit=10)
    skew = clockhealth.load(conn)
    clock_off = None if skew is None else skew.warning()
    stale = alarm(conn, now_ms())
    return {
        "configured": True,
        "team": config.team,
        "transport": config.transport,
        "location": config.location,
        "last_sync": replica.last_run(conn),
        "clock": None if skew is None else skew.to_dict(),
        "recent_refusals": refusals,
        "alarms": _serious(refusals)
        + ([] if clock_off is None else [clock_off])
        + ([] if stale is None else [stale]),
    }


def _serious(refusals: list[dict[str, Any]]) -> list[str]:
    """One alarm line per refusal that points at an attack or a broken writer."""
    return [
        f"{r['reason']}: {r['object']}: {r['detail']}" for r in refusals if r["reason"] in SERIOUS
    ]


def transport_for(
    config: TeamConfig, key: MemberKey, *, operator_token: str | None = None
) -> Transport:
    """The folder or hub the team config points at (the hub signs requests with ``key``)."""
    if config.transport not in ("folder", "hub"):
        raise InputError(
            f"transport {config.transport!r} is not supported by this sealmem; "
            "the team config names an unknown transport"
        )
    if (config.transport == "hub") != is_hub_location(config.location):
        raise InputError(
            f"the team config says transport {config.transport!r} but its location "
            f"{config.location!r} is not one; fix team.json or join again"
        )
    return open_transport(config.location, config.team, key, operator_token=operator_token)


def trusted_roster(state: TrustedState) -> Roster:
    """The newest trusted roster; an error saying what to do when there is none yet."""
    if state.roster is None:
        raise InputError(
            "no roster is trusted yet; run 'sealmem sync' (an admin may still have to "
            "approve your join request)"
        )
    return state.roster


def find_member(roster: Roster, who: str) -> Member:
    """A member by kid, kid prefix (8+ characters) or a name unique by its skeleton; a
    selector that is one member's name and the start of another's id is refused
    (``protocol.names.select``, the precedence ``admin approve`` uses too)."""
    members = {m.kid: m for m in roster.members}
    by_id, by_name = select(who, [(m.kid, m.name) for m in roster.members])
    found = {*by_id, *by_name}
    if len(found) == 1:
        return members[found.pop()]
    names = ", ".join(f"{m.name!r} ({m.kid[:8]})" for m in roster.members)
    if by_id and by_name:
        both = ", ".join(f"{members[k].name!r} ({k})" for k in sorted(found))
        raise InputError(
            f"{who!r} is both a member's name and the start of another member's id ({both}); "
            "give the member's full id"
        )
    why = "matches several members" if found else "is not a member"
    raise InputError(f"{who!r} {why} of roster v{roster.version}; members: {names}")


@dataclass(frozen=True)
class Team:
    """One member's team session: store, key, config and transport, and nothing mutable.

    What the member trusts (:class:`TrustedState`) is not held here: it is read
    back from the store, re-verified (:meth:`trusted`), then passed to every step
    and returned by every step that changes it (:meth:`refresh`, the pull, the
    admin operations), which commit the change to the store in the same breath.
    """

    home: Path
    store: MemoryStore
    key: MemberKey
    config: TeamConfig
    transport: Transport

    @classmethod
    def open(cls, home_dir: Path, store: MemoryStore, key: MemberKey) -> Team:
        config = TeamConfig.load(home_dir)
        return cls(Path(home_dir), store, key, config, transport_for(config, key))

    @property
    def me(self) -> str:
        return self.key.kid

    @property
    def conn(self) -> Any:
        return self.store.connection

    def trusted(self) -> TrustedState:
        """The trusted state of this store, re-verified from the accepted envelopes."""
        try:
            return replica.load_state(self.conn, SUITE, self.config.team, self.config.root_public)
        except Rejected as exc:
            raise StoreError(
                f"the trusted team state in {self.store.path} no longer verifies ({exc}); "
                "the store was altered: restore it or join the team again"
            ) from exc

    def roster(self) -> Roster:
        """The newest roster this store trusts (read back from the store)."""
        return trusted_roster(self.trusted())

    def content_key(self, state: TrustedState, project: str, epoch: int) -> ContentKey | None:
        """This member's content key for a project epoch in ``state``, or None if it holds
        none.  ``Rejected`` (``tampered``) if its wrap does not open with this member's
        key, or the unwrapped key is not the one the keyring's ``key_id`` commits to."""
        keyring = state.keyring(project, epoch)
        if keyring is None or self.me not in keyring.wraps:
            return None
        return keyring.open_key(self.me, lambda wrap: ContentKey.unwrap(wrap, self.key))

    def _holds_key(self, state: TrustedState, project: str, epoch: int) -> bool:
        """Whether this member holds a valid key for the epoch (a refused one is none)."""
        try:
            return self.content_key(state, project, epoch) is not None
        except Rejected:
            return False

    def join_status(self, state: TrustedState) -> str | None:
        """While this member is not in the trusted roster, what the transport says of its
        join request (a hub: ``pending``, ``unknown``, ...); None for a member, or when the
        transport cannot tell (a folder)."""
        if state.roster is not None and state.roster.member(self.me) is not None:
            return None
        return self.transport.join_status(self.me)

    def waiting_for_approval(self, state: TrustedState) -> bool:
        """True while a hub holds this member's join request unanswered (or holds none):
        nothing of the team is read until an admin approves it."""
        return self.join_status(state) in (hubapi.REQUEST_PENDING, hubapi.REQUEST_UNKNOWN)

    def refresh(self, state: TrustedState, now: int) -> tuple[TrustedState, list[Refusal]]:
        """Pull and verify new roster versions, then keyrings of readable projects (every
        epoch: an approval may re-publish older ones with our wrap); store what was
        accepted and return the new state with what was refused."""
        refusals: list[Refusal] = []
        if self.waiting_for_approval(state):
            return state, refusals  # a hub shows a pending joiner its request, not rosters
        current = state.roster.version if state.roster is not None else 0
        accepted_rosters: list[tuple[int, bytes]] = []
        for data in self.transport.rosters(current):
            try:
                state, accepted = accept_roster(SUITE, state, data)
            except Rejected as exc:
                refusals.append(Refusal(exc.reason, "roster", exc.detail))
                break  # the chain is broken here; later versions cannot extend it
            accepted_rosters.append((accepted.version, data))
        accepted_keyrings: list[tuple[str, int, bytes]] = []
        roster = state.roster
        projects = [] if roster is None else sorted(roster.projects)
        for project in projects:
            if roster is None or not roster.can_read(self.me, project):
                continue
            known = state.keyring(project, roster.projects[project])
            held = [k for (p, _), k in state.keyrings.items() if p == project]
            complete = known is not None and all(self.me in k.wraps for k in held)
            if not accepted_rosters and complete:
                continue  # keyrings only change with a new roster version
            # (a keyring without our wrap, of the current epoch or an older one, may be
            # one an approval re-publishes with it, seen before the update reached this
            # transport: look again)
            for data in self.transport.keyrings(project):
                try:
                    new_state, keyring = accept_keyring(SUITE, state, data)
                except Rejected as exc:
                    if exc.reason != reasons.ROSTER_UNKNOWN:  # not yet: roster comes later
                        refusals.append(Refusal(exc.reason, f"keyring {project}", exc.detail))
                    continue
                if new_state is not state:
                    accepted_keyrings.append((keyring.project, keyring.epoch, data))
                    state = new_state
        if accepted_rosters or accepted_keyrings:
            with transaction(self.conn):
                for version, data in accepted_rosters:
                    replica.save_roster(self.conn, version, data, now)
                for project, epoch, data in accepted_keyrings:
                    replica.save_keyring(self.conn, project, epoch, data, now)
        return state, refusals

    # -- status --------------------------------------------------------------

    def status(self, state: TrustedState | None = None) -> dict[str, Any]:
        """Roster, members, grants, my access, my team memories that stay local (per
        project: how many, why, the fix), last sync per member, alarms."""
        state = self.trusted() if state is None else state
        roster = state.roster
        doc: dict[str, Any] = {
            "team": self.config.team,
            "me": {"kid": self.me, "name": _my_name(self.config, roster, self.me)},
            "my_fingerprint": self.key.public().fingerprint(),
            "root_fingerprint": self.config.root_fingerprint,
            "location": self.config.location,
            "transport": self.config.transport,
            "roster_version": None if roster is None else roster.version,
            "members": [],
            "grants": [],
            "my_access": {},
            "alarms": [],
            "last_sync": replica.last_run(self.conn),
            "local_only": [x.to_dict() for x in local_only(self.conn, roster, self.me)],
        }
        if roster is None:
            doc["alarms"].append("no trusted roster yet: waiting for an admin to approve")
            return doc
        last_seen = {
            (str(r[0]), str(r[1])): (int(r[2]), int(r[3]), int(r[4]))
            for r in self.conn.execute(
                "SELECT writer, project, seq, accepted_at, created_at FROM chain_heads"
            )
        }
        for m in roster.members:
            seen = [v for (w, _), v in last_seen.items() if w == m.kid]
            doc["members"].append(
                {
                    "kid": m.kid,
                    "name": m.name,
                    "role": m.role,
                    "fingerprint": PublicIdentity.from_public_keys(
                        m.sign_public, m.box_public
                    ).fingerprint(),
                    "revoked": roster.revocation(m.kid) is not None,
                    "issued_by_admin": m.issued_by_admin,
                    "last_received_at": max((v[1] for v in seen), default=None),
                    "last_published_at": max((v[2] for v in seen), default=None),
                }
            )
        doc["grants"] = [g.to_wire() for g in roster.grants]
        for project, epoch in sorted(roster.projects.items()):
            doc["my_access"][project] = {
                "read": roster.can_read(self.me, project),
                "write": roster.can_write(self.me, project) and roster.revocation(self.me) is None,
                "epoch": epoch,
                "key": self._holds_key(state, project, epoch),
            }
        doc["alarms"] = self.alarms(roster)
        return doc

    def alarms(self, roster: Roster) -> list[str]:
        out: list[str] = []
        if roster.member(self.me) is None:
            out.append("you are not in the roster yet: an admin must approve your join request")
        if roster.revocation(self.me) is not None:
            out.append("your membership was revoked: your new writes are refused by the team")
        out += _serious(replica.recent_refusals(self.conn, limit=50))
        from .freshness import alarm

        if (stale := alarm(self.conn, now_ms())) is not None:
            out.append(stale)
        if roster.is_admin(self.me):
            try:
                pending = self.transport.requests()
            except SealmemError:
                pending = {}
            waiting = [k for k in pending if roster.member(k) is None]
            if waiting:
                out.append(f"{len(waiting)} join request(s) wait: 'sealmem admin approve KID'")
            out += self.transport.take_warnings()  # e.g. a flooded join inbox on a hub
        return out


def _my_name(config: TeamConfig, roster: Roster | None, kid: str) -> str:
    """This member's name in the roster (the admin's choice), else the one it joined with."""
    member = None if roster is None else roster.member(kid)
    return config.name if member is None else member.name
