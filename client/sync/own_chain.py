"""Our own chain read back before a push: a restore adopted once, a copied key stopped
(SPEC.md "Restore and copied keys"; the table is :func:`sealmem.protocol.own_chain.decide`).

- :func:`own_heads` gathers what the store and the transport hold of ours in a project;
  :func:`read_own_chains` runs before anything of a sync is written, for every project;
- :func:`record_send` keeps each (seq, hash) of ours durably before the transport sees
  it, so a push interrupted after its manifest landed still reads as ours;
- :func:`decide_for` gathers the table's inputs (``own``, the sends, ``T``, ``W``) and decides;
- :func:`adopt` merges the transport's head back through the pull's merge
  (:func:`sealmem.client.sync.pull.merge_chunks`), every version as written here, and
  records it as our head, in one transaction: a sync stopped after it adopts nothing twice;
- the ``adopted`` flag lives in the home (:data:`ADOPTED_FILE`), beside the key, not in
  the store: a store restored again from a backup still finds it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ...crypto import SUITE
from ...protocol.errors import Rejected, SealmemError, StoreError
from ...protocol.hlc import Hlc
from ...protocol.own import Held, Ours, Recorded, bases_wanted, ours
from ...protocol.own_chain import ADOPT, BEHIND_WITNESS, KEY_IN_USE, Link, OwnChainStep, decide
from ...protocol.state import TrustedState
from ..fsutil import atomic_write
from ..store import scrub
from ..store.connection import describe, transaction
from ..store.memory import Provenance
from . import bases, replica
from .apply import ApplyResult
from .pull import merge_chunks
from .session import Team, trusted_roster
from .transport import Transport

__all__ = [
    "ADOPTED_FILE",
    "KEY_IN_USE_FIX",
    "Adopted",
    "KeyInUse",
    "adopt",
    "adopted_line",
    "decide_for",
    "drop_send",
    "is_adopted",
    "load_sends",
    "mark_adopted",
    "own_heads",
    "read_own_chains",
    "record_send",
    "withheld_line",
]

ADOPTED_FILE = "own-chain-adopted.json"
"""In the home: this device adopted its own chain once (SPEC "Restore and copied keys")."""

KEY_IN_USE_FIX = (
    "give that machine a device key of its own: here run 'sealmem device add NAME', "
    "there use a new SEALMEM_HOME and run 'sealmem device join' with the line it prints "
    "(an admin approves it); if no other machine holds this key (this home was restored "
    "from a backup again), run 'sealmem sync --adopt'"
)
"""How to get out of ``key-in-use`` in this version (the one place that says it)."""


class Sink(Protocol):
    warnings: list[str]


class KeyInUse(SealmemError):
    """Another machine writes with this member key: the sync stopped before writing."""

    def __init__(self, projects: Sequence[str]) -> None:
        names = ", ".join(repr(p) for p in projects)
        super().__init__(
            f"key-in-use: the transport holds manifests of this member's chain in {names} "
            "that this machine did not write: this key is in use on another machine (or "
            f"this home was copied there); the sync stopped before publishing; {KEY_IN_USE_FIX}"
        )
        self.projects = tuple(projects)


# -- the adopted flag and the recorded sends ---------------------------------------------


def is_adopted(home: Path) -> bool:
    return (Path(home) / ADOPTED_FILE).exists()


def mark_adopted(home: Path, now: int) -> None:
    atomic_write(Path(home) / ADOPTED_FILE, json.dumps({"adopted_at": now}).encode())


def record_send(conn: sqlite3.Connection, project: str, seq: int, hash_: str, now: int) -> None:
    """Record a manifest of ours before it is sent (commit before the transport sees it)."""
    conn.execute(
        "INSERT OR IGNORE INTO own_sends (project, seq, hash, sent_at) VALUES (?, ?, ?, ?)",
        (project, seq, hash_, now),
    )


def drop_send(conn: sqlite3.Connection, project: str, seq: int, hash_: str) -> None:
    """Forget a recorded send the transport refused (it did not take it)."""
    conn.execute(
        "DELETE FROM own_sends WHERE project = ? AND seq = ? AND hash = ?", (project, seq, hash_)
    )


def load_sends(conn: sqlite3.Connection, project: str) -> list[Link]:
    rows = conn.execute("SELECT seq, hash FROM own_sends WHERE project = ?", (project,))
    return [Link(int(seq), str(h)) for seq, h in rows]


# -- the decision and the adoption -------------------------------------------------------


def own_heads(team: Team, project: str, chain: replica.OwnChain | None) -> Ours:
    """Gather what the store and the transport hold of ours in ``project`` and decide which
    head is ours (:func:`~sealmem.protocol.own.ours`)."""
    kept = bases.load(team.conn, team.me, project)
    recorded = _recorded(chain)
    held = _held(team.transport, team.me, project, recorded, kept)
    return ours(
        SUITE, writer=team.me, project=project, sign_public=team.key.sign_public,
        recorded=recorded, kept=kept, held=held,
    )  # fmt: skip


def _recorded(chain: replica.OwnChain | None) -> Recorded | None:
    if chain is None:
        return None
    return Recorded(
        chain.manifest, chain.seq, chain.hash, chain.pushed_wall, chain.pushed_count,
        chain.reset_at,
    )  # fmt: skip


def _held(
    transport: Transport, me: str, project: str, recorded: Recorded | None, kept: bytes | None
) -> Held:
    """Our newest manifests in the transport (read only when it lists one above the
    recorded seq), and its copies of the bases our deltas name that are not ``kept``."""
    manifests = transport.manifests_above(project, me, 0 if recorded is None else recorded.seq)
    wanted = bases_wanted(SUITE, recorded, kept, manifests)
    copies = {seq: transport.base_manifests(project, me, seq) for seq in sorted(wanted)}
    return Held(manifests, copies)


def read_own_chains(
    team: Team, state: TrustedState, projects: Sequence[str], summary: Sink, now: int,
    *, confirm: bool = False,
) -> dict[str, Ours | None]:  # fmt: skip
    """Before anything is published: read our own chain back in every project of
    ``projects`` (SPEC "Restore and copied keys"), adopt the heads a restore left behind,
    and return the projects to push, each with the heads read (None: adopted, read them
    again).  Raises :class:`~.KeyInUse` (nothing
    written) when another machine writes with this key; ``confirm`` (``sync --adopt``)
    adopts once more although this device adopted before."""
    adopted = is_adopted(team.home) and not confirm
    found: list[tuple[str, replica.OwnChain | None, Ours, OwnChainStep]] = []
    for project in projects:
        chain = replica.load_own_chain(team.conn, project)
        heads = own_heads(team, project, chain)
        step = decide_for(team, state, project, chain, heads, adopted=adopted)
        found.append((project, chain, heads, step))
    stuck = [project for project, _, _, step in found if step.action == KEY_IN_USE]
    if stuck:
        raise KeyInUse(stuck)
    out: dict[str, Ours | None] = {}
    done = []
    for project, chain, heads, step in found:
        if step.action == BEHIND_WITNESS:
            seen = state.witnessed[(team.me, project)].seq
            summary.warnings.append(withheld_line(project, seen, team.transport.location))
            continue
        if step.action == ADOPT:
            back = adopt(team, state, project, chain, heads, summary.warnings, now)
            if back is None:
                continue
            done.append(back)
        out[project] = None if step.action == ADOPT else heads
    if done:
        mark_adopted(team.home, now)
        summary.warnings.append(adopted_line(done, team.transport.location))
    return out


def decide_for(
    team: Team,
    state: TrustedState,
    project: str,
    chain: replica.OwnChain | None,
    heads: Ours,
    *,
    adopted: bool,
) -> OwnChainStep:
    """The own-chain row for ``project``: ``T`` is the newest manifest of ours above the
    recorded head that our key signed (:func:`~sealmem.protocol.own.ours`), ``W`` what
    teammates witness for us (none while an admin's reset of our chain is unanswered: the
    Reset rules then retire the old chain's witnesses)."""
    landed = heads.landed
    seen = state.witnessed.get((team.me, project))
    reset = trusted_roster(state).latest_reset(team.me, project)
    resetting = reset is not None and reset.at_version > (chain.reset_at if chain else 0)
    return decide(
        own=None if chain is None else Link(chain.seq, chain.hash),
        sent=load_sends(team.conn, project),
        adopted=adopted,
        transport=None if landed is None else Link(landed.manifest.seq, landed.hash),
        witnessed=0 if seen is None or resetting else seen.seq,
    )


@dataclass(frozen=True, slots=True)
class Adopted:
    """What one adoption brought back: the project, the adopted seq, the versions merged."""

    project: str
    seq: int
    back: int
    lost: int = 0  # chunks of it the transport could not give back (holes)


def adopt(
    team: Team,
    state: TrustedState,
    project: str,
    chain: replica.OwnChain | None,
    heads: Ours,
    warnings: list[str],
    now: int,
) -> Adopted | None:
    """Merge ``heads.landed`` (our head on the transport, verified under our key) back as
    written here and record it as our head; None (said in ``warnings``) when it cannot be
    read (no key for its epoch yet, a snapshot refused): nothing is published for the
    project then, since a manifest without its versions would drop them.  Chunks the
    transport lost (holes) are lost to every reader already: the rest is adopted, and
    the line says how many."""
    landed, envelope = heads.landed, heads.landed_envelope
    if landed is None or envelope is None:
        return None
    m = landed.manifest
    where = f"our manifest {project!r} seq {m.seq}"
    key = team.content_key(state, project, m.epoch)
    if key is None:
        warnings.append(
            f"{where} uses epoch {m.epoch}, for which this member holds no key yet; "
            f"nothing is published for {project!r} until it can be read back"
        )
        return None
    result = ApplyResult()
    try:
        with transaction(team.conn):
            opener, newest = merge_chunks(team, m, key, Provenance.local(), now, {}, result)
            _save_head(team, state, chain, heads, envelope, newest, now)
    except Rejected as exc:
        warnings.append(
            f"{where} is ahead of this store but could not be read back ({exc}); nothing is "
            f"published for {project!r}, so that nothing it holds is dropped; sync again"
        )
        return None
    except sqlite3.Error as exc:
        raise StoreError(
            f"the local store failed while reading back {where}, and kept nothing of it: "
            f"{describe(team.store.path, exc)}"
        ) from exc
    if result.purged:
        scrub.settle(team.conn)
    return Adopted(project, m.seq, result.new + result.updated, len(opener.holes))


def _save_head(
    team: Team,
    state: TrustedState,
    chain: replica.OwnChain | None,
    heads: Ours,
    envelope: bytes,
    newest: Hlc,
    now: int,
) -> None:
    """Record the adopted manifest as our head: no digests (every bucket is built again),
    a count that never matches (the next push publishes above it)."""
    assert heads.landed is not None
    m = heads.landed.manifest
    reset = trusted_roster(state).latest_reset(team.me, m.project)
    answers = reset is not None and m.roster_version >= reset.at_version
    head = replica.OwnChain(
        m.project, m.seq, heads.landed.hash, envelope, {},
        max(newest, chain.pushed_wall) if chain else newest, -1,
        reset.at_version if answers and reset else (chain.reset_at if chain else 0),
    )  # fmt: skip
    if heads.keep is not None:  # the full manifest our adopted delta is listed against
        bases.save(team.conn, team.me, m.project, heads.keep, now)
    elif m.delta is None:
        bases.save(team.conn, team.me, m.project, envelope, now)
    replica.save_own_chain(team.conn, head, now)


def adopted_line(done: Sequence[Adopted], location: str) -> str:
    """The one line a sync that adopted says."""
    parts = ", ".join(
        f"{a.project!r} at seq {a.seq} ({a.back} versions back"
        + (f"; {a.lost} chunks of it the transport lost" if a.lost else "")
        + ")"
        for a in done
    )
    return (
        f"this store was behind its own chain on {location} (restored from a backup?): read "
        f"back {parts}, as written here; publishing continues above it. If another machine "
        "writes with this key, its next write stops this one as key-in-use"
    )


def withheld_line(project: str, witnessed: int, location: str) -> str:
    return (
        f"behind-witness: teammates witness our chain in {project!r} at seq {witnessed}, "
        f"which {location} does not serve (nor does this store hold it); nothing is published "
        f"for {project!r}, so that nothing of it is dropped, until the transport serves that "
        "manifest or an admin runs 'sealmem admin reset-writer' for this member"
    )
