"""The freshness checkpoint: an admin's short, signed statement of the team's current state
(SPEC.md "Checkpoint"), in the spirit of TUF's timestamp role.

A transport can withhold objects without forging any: serve an old roster and keep
the one that revokes an attacker.  A checkpoint says which roster (version and
hash) and which epoch per project (with the keyring's ``key_id``) are current, when
an admin said so, and how old it may grow before members are told (``warn_after_ms``)
and before they stop publishing (``stop_after_ms``).  Members accept it with
:func:`accept_checkpoint` and judge it with :func:`judge`: a checkpoint (or any
verified teammate's manifest) citing a roster newer than the transport serves, or a
checkpoint past its stop age, stops publishing under the old epoch at once.

Pure: no I/O, no clock (``now_ms`` is passed in).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from . import reasons
from .encoding import HEX_HASH_RE, exact_keys, need_dict, need_int, need_str, object_hash
from .envelope import seal, unpack
from .errors import ProtocolError, Rejected
from .hlc import MAX_AHEAD_MS
from .record import PROJECT_RE
from .roster import TEAM_RE, Roster
from .state import TrustedState
from .suite import Signer, Suite

__all__ = [
    "CHECKPOINT_FORMAT",
    "CONTEXT",
    "DEFAULT_STOP_AFTER_MS",
    "DEFAULT_WARN_AFTER_MS",
    "MAX_CHECKPOINT_BYTES",
    "Checkpoint",
    "Verdict",
    "accept_checkpoint",
    "build_checkpoint",
    "judge",
    "needs_resign",
    "signed_seq",
]

CHECKPOINT_FORMAT = "sealmem/checkpoint/v1"
CONTEXT = "checkpoint"
MAX_CHECKPOINT_BYTES = 1024 * 1024
HOUR_MS = 60 * 60 * 1000
DEFAULT_WARN_AFTER_MS = 24 * HOUR_MS
DEFAULT_STOP_AFTER_MS = 7 * 24 * HOUR_MS
#: the shortest ages an admin may set (a checkpoint re-signed every few minutes is noise)
MIN_AGE_MS = 10 * 60 * 1000
_MAX_PROJECTS = 65_536
_KEYS = frozenset(
    {
        "format", "team", "seq", "roster_version", "roster_hash", "projects",
        "signed_at", "warn_after_ms", "stop_after_ms",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Checkpoint:
    team: str
    seq: int
    roster_version: int
    roster_hash: str
    #: per project: (epoch, key_id of that epoch's keyring)
    projects: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    signed_at: int = 0
    warn_after_ms: int = DEFAULT_WARN_AFTER_MS
    stop_after_ms: int = DEFAULT_STOP_AFTER_MS
    signer: str = ""

    def to_body(self) -> dict[str, Any]:
        return {
            "format": CHECKPOINT_FORMAT,
            "team": self.team,
            "seq": self.seq,
            "roster_version": self.roster_version,
            "roster_hash": self.roster_hash,
            "projects": {
                p: {"epoch": e, "key_id": k} for p, (e, k) in sorted(self.projects.items())
            },
            "signed_at": self.signed_at,
            "warn_after_ms": self.warn_after_ms,
            "stop_after_ms": self.stop_after_ms,
        }

    def hash(self, suite: Suite) -> str:
        return object_hash(suite, CONTEXT, self.to_body())

    def sign(self, signer: Signer) -> bytes:
        return seal(self.to_body(), CONTEXT, signer)

    @classmethod
    def from_body(cls, body: Mapping[str, Any], signer: str = "") -> Checkpoint:
        obj = exact_keys(body, _KEYS, "checkpoint")
        if obj["format"] != CHECKPOINT_FORMAT:
            raise Rejected(reasons.UNKNOWN_FORMAT, f"checkpoint format {obj['format']!r}")
        raw = need_dict(obj["projects"], "checkpoint.projects")
        if len(raw) > _MAX_PROJECTS:
            raise Rejected(reasons.TOO_LARGE, f"checkpoint lists {len(raw)} projects")
        projects: dict[str, tuple[int, str]] = {}
        for name, entry in raw.items():
            need_str(name, "checkpoint.projects", pattern=PROJECT_RE)
            item = exact_keys(entry, {"epoch", "key_id"}, f"checkpoint.projects.{name}")
            projects[name] = (
                need_int(item["epoch"], "epoch", minimum=1),
                need_str(item["key_id"], "key_id", pattern=HEX_HASH_RE),
            )
        warn = need_int(obj["warn_after_ms"], "checkpoint.warn_after_ms", minimum=MIN_AGE_MS)
        stop = need_int(obj["stop_after_ms"], "checkpoint.stop_after_ms", minimum=MIN_AGE_MS)
        if stop < warn:
            raise Rejected(reasons.MALFORMED, "checkpoint stop_after_ms is below warn_after_ms")
        return cls(
            team=need_str(obj["team"], "checkpoint.team", pattern=TEAM_RE),
            seq=need_int(obj["seq"], "checkpoint.seq", minimum=1),
            roster_version=need_int(obj["roster_version"], "checkpoint.roster_version", minimum=1),
            roster_hash=need_str(obj["roster_hash"], "checkpoint.roster_hash", pattern=HEX_HASH_RE),
            projects=MappingProxyType(projects),
            signed_at=need_int(obj["signed_at"], "checkpoint.signed_at"),
            warn_after_ms=warn,
            stop_after_ms=stop,
            signer=signer,
        )


def build_checkpoint(
    suite: Suite,
    state: TrustedState,
    *,
    seq: int,
    now_ms: int,
    warn_after_ms: int = DEFAULT_WARN_AFTER_MS,
    stop_after_ms: int = DEFAULT_STOP_AFTER_MS,
) -> Checkpoint:
    """The checkpoint of ``state``: its newest roster, each project's epoch and key_id."""
    roster = state.roster
    if roster is None:
        raise Rejected(reasons.ROSTER_UNKNOWN, "no trusted roster yet to sign a checkpoint of")
    projects = {}
    for project, epoch in roster.projects.items():
        keyring = state.keyring(project, epoch)
        if keyring is not None:
            projects[project] = (epoch, keyring.key_id)
    return Checkpoint(
        team=state.team, seq=seq, roster_version=roster.version, roster_hash=roster.hash(suite),
        projects=MappingProxyType(projects), signed_at=now_ms,
        warn_after_ms=warn_after_ms, stop_after_ms=stop_after_ms,
    )  # fmt: skip


def accept_checkpoint(
    suite: Suite, state: TrustedState, data: bytes, previous: Checkpoint | None, *, now_ms: int
) -> Checkpoint:
    """Verify a checkpoint envelope against the trusted state and the last accepted one.

    The signer must be an admin of the cited roster when it is trusted, else of the
    newest trusted roster (a checkpoint citing a roster the reader lacks is the freeze
    signal: :func:`judge`), and not revoked there.  ``previous`` (already accepted)
    makes the sequence monotone."""
    env = unpack(data, what="checkpoint", max_bytes=MAX_CHECKPOINT_BYTES)
    team = env.body.get("team")
    if isinstance(team, str) and team != state.team:
        raise Rejected(reasons.CROSS_TEAM, f"checkpoint of team {team!r}, this is {state.team!r}")
    cp = Checkpoint.from_body(env.body, env.signer)
    where = f"checkpoint seq {cp.seq}"
    newest = state.roster
    if newest is None:
        raise Rejected(reasons.ROSTER_UNKNOWN, f"{where}: no trusted roster yet to check it")
    cited = state.rosters.get(cp.roster_version)
    env.check(suite, CONTEXT, (cited or newest).admin_key(cp.signer, where))
    if newest.revocation(cp.signer) is not None:
        raise Rejected(reasons.REVOKED, f"{where} is signed by revoked admin {cp.signer}")
    if cp.signed_at - now_ms > MAX_AHEAD_MS:
        signer = newest.member(cp.signer)
        who = f"{signer.name} ({cp.signer[:8]})" if signer else cp.signer[:8]
        raise Rejected(
            reasons.CLOCK_AHEAD,
            f"{where} is dated more than 2 days ahead of this member's clock: ask its "
            f"signer {who} to fix their clock (or fix yours), then to sync again",
        )
    if cited is not None:
        _check_cited(suite, state, cited, cp, where)
    if previous is not None:
        _check_monotone(suite, previous, cp, where)
    return cp


def signed_seq(suite: Suite, state: TrustedState, data: bytes) -> int | None:
    """The ``seq`` of a checkpoint envelope an admin signed who is one (and not revoked) in
    the trusted state, whatever else :func:`accept_checkpoint` refuses it for (dated
    ahead, say): the seq another admin takes only after it; None for any other bytes."""
    try:
        env = unpack(data, what="checkpoint", max_bytes=MAX_CHECKPOINT_BYTES)
        cp = Checkpoint.from_body(env.body, env.signer)
        newest = state.roster
        if newest is None or newest.revocation(cp.signer) is not None:
            return None
        roster = state.rosters.get(cp.roster_version) or newest
        env.check(suite, CONTEXT, roster.admin_key(cp.signer, "checkpoint"))
    except ProtocolError:
        return None
    return cp.seq


def _check_cited(
    suite: Suite, state: TrustedState, cited: Roster, cp: Checkpoint, where: str
) -> None:
    if cited.hash(suite) != cp.roster_hash:
        raise Rejected(
            reasons.FORK,
            f"{where} names another roster v{cp.roster_version} than the trusted one: "
            "someone is showing members different histories",
        )
    for project, (epoch, key_id) in cp.projects.items():
        if cited.projects.get(project) != epoch:
            raise Rejected(
                reasons.EPOCH_UNKNOWN,
                f"{where} gives {project!r} epoch {epoch}; roster v{cited.version} does not",
            )
        keyring = state.keyring(project, epoch)
        if keyring is not None and keyring.key_id != key_id:
            raise Rejected(
                reasons.FORK, f"{where} commits to another key for {project!r} epoch {epoch}"
            )


def _check_monotone(suite: Suite, previous: Checkpoint, cp: Checkpoint, where: str) -> None:
    if cp.seq < previous.seq or cp.roster_version < previous.roster_version:
        raise Rejected(
            reasons.ROLLBACK,
            f"{where} (roster v{cp.roster_version}) is older than the trusted checkpoint "
            f"seq {previous.seq} (roster v{previous.roster_version}); the transport is "
            "serving stale data",
        )
    if cp.seq == previous.seq and cp.hash(suite) != previous.hash(suite):
        raise Rejected(reasons.FORK, f"{where}: a different checkpoint with this seq is trusted")


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a member may do: ``ok``, ``warn`` (say so) or ``stop`` (publish nothing under
    the old epoch); ``cause`` and ``fix`` are one line each for people."""

    level: str
    cause: str = ""
    fix: str = ""

    def line(self) -> str:
        return f"{self.cause}; {self.fix}" if self.level != "ok" else ""


def _age(ms: int) -> str:
    hours = ms // HOUR_MS
    return f"{hours // 24} days" if hours >= 48 else f"{hours} hours"


def judge(
    state: TrustedState,
    checkpoint: Checkpoint | None,
    cited_roster: int = 0,
    *,
    now_ms: int,
    me: str,
    cited_by: str = "",
) -> Verdict:
    """The freshness of ``state`` for member ``me``: ``cited_roster`` is the highest roster
    version a verified teammate's manifest cited (0: none), ``cited_by`` that teammate."""
    trusted = state.roster.version if state.roster is not None else 0
    by_checkpoint = checkpoint.roster_version if checkpoint else 0
    newest = max(cited_roster, by_checkpoint)
    if newest > trusted:
        by_member = cited_roster >= by_checkpoint and cited_by
        member = state.roster.member(cited_by) if by_member and state.roster else None
        name = f"{member.name} ({cited_by[:8]})" if member else cited_by[:8]
        who = f"the manifest of {name}" if by_member else "the admins' checkpoint"
        return Verdict(
            "stop",
            f"frozen: {who} cites roster v{newest}, but the transport "
            f"serves only up to v{trusted} (not arrived yet, or held back: maybe a "
            "revocation); nothing is published under the old epoch",
            "sync again later; if it stays, check the folder or hub with an admin "
            + (
                f"(a member can cite a roster that does not exist: an admin can revoke {name}; "
                if by_member
                else "("
            )
            + "local memories and reading still work)",
        )
    if checkpoint is None:
        return Verdict("ok")
    age = now_ms - checkpoint.signed_at
    roster = state.roster
    missing = [
        p
        for p, (e, _) in checkpoint.projects.items()
        if state.keyring(p, e) is None and roster is not None and roster.can_read(me, p)
    ]
    if missing and checkpoint.roster_version == trusted:
        return Verdict(
            "stop",
            f"frozen: the admins' checkpoint cites keyrings the transport does not serve "
            f"({', '.join(sorted(missing)[:3])}); nothing is published under the old epoch",
            "check the folder or hub, then sync again",
        )
    fix = (
        "ask an admin to sync or run 'sealmem admin checkpoint' (a team with one admin "
        "stalls while that admin is away: add a second admin)"
    )
    if age > checkpoint.stop_after_ms:
        return Verdict(
            "stop",
            f"stale: the newest admin checkpoint is {_age(age)} old (over the team's stop age "
            f"of {_age(checkpoint.stop_after_ms)}); nothing is published until a fresh one",
            fix,
        )
    if age > checkpoint.warn_after_ms:
        return Verdict(
            "warn",
            f"the newest admin checkpoint is {_age(age)} old (the team warns after "
            f"{_age(checkpoint.warn_after_ms)}; publishing stops after "
            f"{_age(checkpoint.stop_after_ms)})",
            fix,
        )
    return Verdict("ok")


def needs_resign(
    suite: Suite, state: TrustedState, current: Checkpoint | None, *, now_ms: int
) -> bool:
    """Whether an admin's sync should sign a new checkpoint: none yet, the state moved
    (roster or epochs), or the current one is past half its warn age."""
    if current is None:
        return True
    fresh = build_checkpoint(suite, state, seq=current.seq, now_ms=now_ms)
    if (fresh.roster_version, fresh.roster_hash, dict(fresh.projects)) != (
        current.roster_version,
        current.roster_hash,
        dict(current.projects),
    ):
        return True
    return now_ms - current.signed_at > current.warn_after_ms // 2
