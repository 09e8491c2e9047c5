"""What a reader learns from teammates' manifests before it accepts any of them
(SPEC.md "Witnessed floors").

A reader that has no head for a writer would accept whatever seq the transport shows
it first; a replayed old snapshot then resurrects what that writer has since forgotten.
Other writers' verified manifests say which seq they accepted for it: :func:`learn`
reads the newest manifest of every writer that moved, adds what each verified one
witnesses to the state's ``witnessed`` map (the floors
:func:`~sealmem.protocol.verify.accept_manifest` enforces as ``behind-witness``), and
returns the highest roster version a verified manifest cites (a roster newer than
the transport serves is the freeze signal of :func:`~sealmem.protocol.checkpoint.judge`).

Pure: the caller fetched the envelopes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from . import reasons
from .envelope import unpack
from .errors import ProtocolError, Rejected
from .manifest import MAX_MANIFEST_BYTES, Manifest
from .state import TrustedState, Witness
from .suite import Suite
from .verify import accept_manifest

__all__ = ["Citation", "cited_roster", "learn"]

#: what one hostile envelope may raise while it is read; it then teaches nothing
_BAD = (ProtocolError, ValueError, TypeError, KeyError, UnicodeError, OverflowError, RecursionError)


@dataclass(frozen=True, slots=True)
class Citation:
    """The newest roster version a verified manifest cited, and whose manifest it was."""

    version: int = 0
    by: str = ""


def cited_roster(suite: Suite, state: TrustedState, data: bytes, writer: str) -> Citation:
    """The roster version a manifest of ``writer`` cites, once its signature verifies under
    the writer's key in the trusted roster (nothing, ``Citation()``, otherwise)."""
    roster = state.roster
    try:
        env = unpack(data, what="manifest", max_bytes=MAX_MANIFEST_BYTES)
        m = Manifest.from_body(env.body)
        member = None if roster is None else roster.member(m.writer)
        if member is None or m.writer != env.signer or m.writer != writer:
            return Citation()
        if m.team != state.team:
            return Citation()
        env.check(suite, "manifest", member.sign_public)
    except _BAD:
        return Citation()
    return Citation(m.roster_version, m.writer)


def learn(
    suite: Suite,
    state: TrustedState,
    project: str,
    newest: Iterable[tuple[str, bytes]],
    rebuild: Callable[[Manifest], Manifest] | None = None,
) -> tuple[TrustedState, Citation]:
    """Add the heads that verified manifests in ``newest`` (writer, envelope) witness to
    ``state.witnessed`` (higher seqs win), and the newest roster they cite.  A v3 delta
    teaches the heads rebuilt from its base (``rebuild``, as for
    :func:`~sealmem.protocol.verify.accept_manifest`); one whose base is missing teaches
    the heads it lists itself (:func:`_listed_only`)."""

    def whole(m: Manifest) -> Manifest:
        if rebuild is not None:
            try:
                return rebuild(m)
            except Rejected as exc:
                if exc.reason != reasons.MISSING_BASE:
                    raise
        return _listed_only(m)

    learned: dict[tuple[str, str], Witness] = {}
    citation = Citation()
    for writer, data in newest:
        try:
            accepted, _ = accept_manifest(
                suite, state, data, project=project, writer=writer, rebuild=whole
            )
        except Rejected as exc:
            if exc.reason == reasons.ROSTER_UNKNOWN:  # after the signature, or no roster
                cited = cited_roster(suite, state, data, writer)
                citation = cited if cited.version > citation.version else citation
            continue
        except _BAD:
            continue
        for slot, seen in accepted.witnessed.items():  # (it raised only what it may)
            if seen.by != writer or seen == state.witnessed.get(slot):
                continue
            known = learned.get(slot)
            if known is None or seen.seq > known.seq:
                learned[slot] = Witness(seen.seq, seen.hash, seen.by)
    if not learned:
        return state, citation
    return state.evolve(witnessed={**state.witnessed, **learned}), citation


def _listed_only(m: Manifest) -> Manifest:
    """The v3 delta ``m``, its base out of reach, with the heads it lists itself
    (``heads_changed``): each is signed by its writer, so each is a floor, checked for
    equivocation as any head.  Only for learning (its chunks are not rebuilt: the state
    :func:`learn` gets back is read for ``witnessed`` alone)."""
    listed = () if m.delta is None or m.delta.heads is None else m.delta.heads.changed
    return replace(m, heads=listed, complete=True)
