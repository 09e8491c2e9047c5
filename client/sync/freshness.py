"""Freshness of what this member trusts: witnessed floors, checkpoints, and the gate on
publishing (SPEC.md "Checkpoint", "Witnessed floors").

In one sync:

1. before a project's manifests are accepted, :func:`newest_manifests` reads the newest
   manifest of every writer that moved and :func:`learn_floors` takes what the verified
   ones witness as floors (:mod:`sealmem.protocol.witness`) and notes the newest roster
   they cite;
2. after the pull, :func:`check` reads the team's checkpoint from the transport, accepts
   it (:func:`~sealmem.protocol.checkpoint.accept_checkpoint`), re-signs it when this
   member is an admin and the state moved or it aged (:func:`publish`), and judges
   (:func:`~sealmem.protocol.checkpoint.judge`): past the team's warn age members are
   told; past its stop age, or at once when a verified manifest or checkpoint cites a
   roster the transport does not serve, nothing is published.

The accepted checkpoint and the verdict live in the store's ``meta`` table, so
``status``, the MCP ``status`` tool and the viewer say the same line
(:func:`alarm`) without a key or a transport.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Protocol

from ...crypto import SUITE
from ...protocol import reasons, witness
from ...protocol.checkpoint import (
    DEFAULT_STOP_AFTER_MS,
    DEFAULT_WARN_AFTER_MS,
    Checkpoint,
    Verdict,
    accept_checkpoint,
    build_checkpoint,
    judge,
    needs_resign,
    signed_seq,
)
from ...protocol.errors import Rejected, TransportError
from ...protocol.manifest import Manifest
from ...protocol.state import TrustedState
from ..store.connection import get_meta, set_meta, transaction
from .bases import Finder
from .session import Refusal, Team
from .transport import ConflictError, Unreachable

__all__ = [
    "CHECKPOINT_KEY",
    "VERDICT_KEY",
    "alarm",
    "check",
    "learn_floors",
    "newest",
    "newest_manifests",
    "publish",
    "resign",
]

CHECKPOINT_KEY = "checkpoint"
VERDICT_KEY = "freshness"


class Sink(Protocol):
    cited: witness.Citation
    refused: list[Refusal]
    warnings: list[str]


def newest_manifests(team: Team, project: str, writers: Sequence[str]) -> dict[str, bytes | None]:
    """Each writer's newest manifest envelope; a writer whose fetch fails is left out (the
    pull fetches it again and reports the failure there)."""
    out: dict[str, bytes | None] = {}
    for writer in writers:
        try:
            out[writer] = team.transport.newest_manifest(project, writer)
        except (Unreachable, ConflictError):
            raise
        except TransportError:
            continue
    return out


def learn_floors(
    state: TrustedState,
    project: str,
    newest: dict[str, bytes | None],
    summary: Sink,
    finder: Finder | None = None,
) -> TrustedState:
    """``state`` with the floors the verified manifests in ``newest`` witness (a v3 delta's
    rebuilt from its base by ``finder``; one whose base cannot be read teaches nothing)."""

    def rebuild(m: Manifest) -> Manifest:
        if finder is None:
            raise Rejected(reasons.MISSING_BASE, "no base looked for")
        try:
            return finder.rebuild(m)
        except (Unreachable, ConflictError):
            raise
        except TransportError as exc:  # (the pull reads it again and reports it there)
            raise Rejected(reasons.MISSING_BASE, "its base could not be read") from exc

    found = [(w, d) for w, d in newest.items() if d is not None]
    state, cited = witness.learn(SUITE, state, project, found, rebuild)
    if cited.version > summary.cited.version:
        summary.cited = cited
    return state


def _load(conn: sqlite3.Connection, state: TrustedState, now: int) -> Checkpoint | None:
    """The checkpoint this store accepted before (verified again), or None."""
    text = get_meta(conn, CHECKPOINT_KEY)
    if text is None:
        return None
    try:
        return accept_checkpoint(SUITE, state, text.encode(), None, now_ms=now)
    except Rejected:
        return None  # a roster since made its signer no admin: wait for a new one


def _fetch(team: Team, summary: Sink) -> bytes | None:
    try:
        return team.transport.checkpoint()
    except (Unreachable, ConflictError):
        raise
    except TransportError:  # (a hub's words are not repeated to people or agents)
        summary.warnings.append(
            f"the team checkpoint could not be read from {team.transport.location}; sync again"
        )
        return None


def publish(
    team: Team,
    state: TrustedState,
    current: Checkpoint | None,
    now: int,
    *,
    warn_after_ms: int | None = None,
    stop_after_ms: int | None = None,
    after: int = 0,
) -> Checkpoint:
    """Sign the next checkpoint of ``state`` (this member an admin), publish it, keep it.

    Its seq follows ``current`` (and ``after``, a seq another admin took).  The ages
    default to the current checkpoint's (the team's setting), else the defaults.
    Raises :class:`~sealmem.client.sync.transport.ConflictError` when another admin's
    checkpoint with that seq landed first."""
    warn = warn_after_ms or (current.warn_after_ms if current else DEFAULT_WARN_AFTER_MS)
    stop = stop_after_ms or (current.stop_after_ms if current else DEFAULT_STOP_AFTER_MS)
    stop = max(stop, warn)
    cp = build_checkpoint(
        SUITE, state, seq=max(current.seq if current else 0, after) + 1, now_ms=now,
        warn_after_ms=warn, stop_after_ms=stop,
    )  # fmt: skip
    data = cp.sign(team.key)
    accepted = accept_checkpoint(SUITE, state, data, current, now_ms=now)
    team.transport.put_checkpoint(accepted.seq, data)
    with transaction(team.conn):
        set_meta(team.conn, CHECKPOINT_KEY, data.decode())
    return accepted


def _is_admin(team: Team, state: TrustedState) -> bool:
    roster = state.roster
    return roster is not None and roster.is_admin(team.me) and roster.revocation(team.me) is None


def newest(team: Team, state: TrustedState, summary: Sink, now: int) -> Checkpoint | None:
    """The newest checkpoint this member trusts: the one it kept, or a newer one the
    transport holds (accepted and kept); refusals go to ``summary``."""
    current = _load(team.conn, state, now)
    data = _fetch(team, summary)
    if data is None:
        return current
    try:
        fetched = accept_checkpoint(SUITE, state, data, current, now_ms=now)
    except Rejected as exc:
        if exc.reason != reasons.ROLLBACK or current is None:
            summary.refused.append(Refusal(exc.reason, "checkpoint", exc.detail))
        return current
    if current is None or fetched.seq > current.seq:
        with transaction(team.conn):
            set_meta(team.conn, CHECKPOINT_KEY, data.decode())
        return fetched
    return current


def check(team: Team, state: TrustedState, summary: Sink, now: int) -> tuple[Verdict, TrustedState]:
    """Accept the transport's checkpoint, re-sign it if this admin should, judge, keep the
    verdict; a ``stop`` verdict means: publish nothing in this sync.  When a newer roster
    is cited, the rosters are read once more first (an admin may have published one
    since this sync began): the state returned is the one to publish with."""
    roster = state.roster
    if roster is None or roster.revocation(team.me) is not None:
        return Verdict("ok"), state  # a revoked member publishes nothing anyway
    current = newest(team, state, summary, now)
    cited = max(summary.cited.version, current.roster_version if current else 0)
    if cited > roster.version:
        state, refused = team.refresh(state, now)
        summary.refused += refused
    if _is_admin(team, state) and needs_resign(SUITE, state, current, now_ms=now):
        try:
            current = resign(team, state, current, now)
        except ConflictError:
            summary.warnings.append("another admin signed a checkpoint at the same time")
        except TransportError:
            summary.warnings.append(
                f"the team checkpoint was not published to {team.transport.location}; "
                "the next sync tries again"
            )
    by = summary.cited
    verdict = judge(state, current, by.version, now_ms=now, me=team.me, cited_by=by.by)
    _keep(team.conn, verdict, current)
    return verdict, state


def resign(
    team: Team,
    state: TrustedState,
    current: Checkpoint | None,
    now: int,
    *,
    warn_after_ms: int | None = None,
    stop_after_ms: int | None = None,
) -> Checkpoint:
    """:func:`publish` the next checkpoint; when its seq is taken by another admin's (one
    this member refused, dated ahead by a clock that runs fast, say), publish above that
    one, once: else that admin's clock would keep every other admin's checkpoint out."""
    try:
        return publish(
            team, state, current, now, warn_after_ms=warn_after_ms, stop_after_ms=stop_after_ms
        )
    except ConflictError:
        held = team.transport.checkpoint()
        taken = None if held is None else signed_seq(SUITE, state, held)
        if taken is None or taken <= (current.seq if current else 0):
            raise
        return publish(
            team, state, current, now, warn_after_ms=warn_after_ms, stop_after_ms=stop_after_ms,
            after=taken,
        )  # fmt: skip


def _keep(conn: sqlite3.Connection, verdict: Verdict, current: Checkpoint | None) -> None:
    doc = {
        "level": verdict.level,
        "line": verdict.line(),
        "signed_at": None if current is None else current.signed_at,
        "warn_after_ms": None if current is None else current.warn_after_ms,
        "stop_after_ms": None if current is None else current.stop_after_ms,
    }
    with transaction(conn):
        set_meta(conn, VERDICT_KEY, json.dumps(doc, sort_keys=True))


def alarm(conn: sqlite3.Connection, now: int) -> str | None:
    """The freshness line for status displays: the last sync's verdict, or the checkpoint's
    age judged again now (time passes between syncs)."""
    text = get_meta(conn, VERDICT_KEY)
    if text is None:
        return None
    try:
        doc = json.loads(text)
        if doc["level"] != "ok":
            return str(doc["line"])
        signed_at, warn, stop = doc["signed_at"], doc["warn_after_ms"], doc["stop_after_ms"]
    except (ValueError, KeyError, TypeError):
        return None
    if not all(isinstance(v, int) for v in (signed_at, warn, stop)):
        return None
    age_h = (now - signed_at) // 3_600_000
    if now - signed_at > stop:
        return (
            f"stale: the newest admin checkpoint is {age_h} hours old, over the team's stop "
            "age; the next sync publishes nothing until an admin signs a fresh one"
        )
    if now - signed_at > warn:
        return (
            f"the newest admin checkpoint is {age_h} hours old; ask an admin to sync or run "
            "'sealmem admin checkpoint'"
        )
    return None
