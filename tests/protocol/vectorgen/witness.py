"""Vectors for the witness encoding (SPEC.md "Witness encoding"): ``manifest-witness-*``.

A v3 delta lists its heads against its base; a ``manifest`` object (or setup step) with
``bases`` is accepted with those envelopes offered as its base.
"""

from __future__ import annotations

from dataclasses import replace

from sealmem.crypto import SUITE
from sealmem.protocol.encoding import b64e
from sealmem.protocol.manifest import DELTA_FORMAT, Head
from sealmem.protocol.snapshot import PreviousSnapshot, Snapshot

from . import generate as g

__all__ = ["DESCRIPTIONS", "witness_cases"]

DESCRIPTIONS = {
    "manifest-witness-accept": "a v3 delta whose heads, rebuilt from its base, hash to heads_root",
    "manifest-witness-missing-base": "a v3 delta offered without its base: its heads are unknown",
    "manifest-witness-wrong-root": "a v3 delta whose heads_root is not the rebuilt set's",
    "manifest-witness-removed-unlisted": "a v3 delta removing a head its base does not list",
    "manifest-witness-malformed": "a v3 delta naming one slot as both changed and removed",
    "manifest-witness-equivocation": (
        "a head the v3 delta left unchanged since its base conflicts with the accepted one"
    ),
    "manifest-witness-behind": (
        "a floor a v3 delta witnesses through its base (no head changed) is enforced"
    ),
}


def _chain(writer: g.MemberKey, heads1: list[Head], heads2: list[Head], n: int) -> list[Snapshot]:
    """A full manifest, then a v3 delta against it (one record changed)."""
    first = g.snap(writer, [g.record(writer, n)], heads=heads1)
    changed = replace(g.record(writer, n), content="changed", hlc=g.Hlc(g.NOW + 500, 0))
    second = g.snap(
        writer, [changed], seq=2, prev=first.hash, heads=heads2,
        listing=(first.manifest, first.hash or ""),
        previous=PreviousSnapshot(first.manifest, first.digests),
    )  # fmt: skip
    if second.manifest.to_body()["format"] != DELTA_FORMAT:
        raise SystemExit("the witness vector did not come out as a v3 delta")
    return [first, second]


def _bases(*envelopes: bytes) -> dict[str, list[str]]:
    return {"bases": [b64e(e) for e in envelopes]}


def witness_cases() -> list[g.Case]:
    g.DESCRIPTIONS.update(DESCRIPTIONS)
    b1, b2 = _chain(g.BOB, [], [], 40)
    a1, a2 = _chain(g.ALICE, [b1.manifest.head(SUITE)], [b2.manifest.head(SUITE)], 41)
    with_b1 = [*g.BASE, ("manifest", b1.envelope)]
    base = _bases(a1.envelope)
    carol = [{"writer": g.CAROL.kid, "project": g.PROJECT}]
    bob = [{"writer": g.BOB.kid, "project": g.PROJECT}]
    forged = Head(g.BOB.kid, g.PROJECT, 1, "ab" * 32)  # not the bob seq 1 the reader holds
    e1, e2 = _chain(g.ALICE, [forged], [forged], 42)
    x1, x2 = _chain(g.ALICE, [], [], 43)  # alice moved on to seq 2 ...
    y1, y2 = _chain(g.BOB, [x2.manifest.head(SUITE)], [x2.manifest.head(SUITE)], 44)  # bob saw it
    return [
        g.Case("manifest-witness-accept", with_b1, a2.envelope, "accept", base),
        g.Case("manifest-witness-missing-base", with_b1, a2.envelope, "missing-base"),
        g.Case(
            "manifest-witness-wrong-root",
            with_b1,
            g.resign(a2.envelope, g.ALICE, heads_root="00" * 32),
            "tampered",
            base,
        ),
        g.Case(
            "manifest-witness-removed-unlisted",
            with_b1,
            g.resign(a2.envelope, g.ALICE, heads_removed=carol),
            "tampered",
            base,
        ),
        g.Case(
            "manifest-witness-malformed",
            with_b1,
            g.resign(a2.envelope, g.ALICE, heads_removed=bob),
            "malformed",
            base,
        ),
        g.Case(
            "manifest-witness-equivocation",
            with_b1,
            e2.envelope,
            "equivocation",
            _bases(e1.envelope),
        ),
        g.Case(
            "manifest-witness-behind",
            [*g.BASE, ("manifest", y2.envelope, (y1.envelope,))],
            x1.envelope,
            "behind-witness",
        ),
    ]
