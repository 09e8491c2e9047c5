"""Vectors for the freshness rules (SPEC.md "Witnessed floors", "Checkpoint"):
``manifest-behind-witness*`` and ``checkpoint-*``.

A ``checkpoint`` case replays as: pin, accept the setup, then accept the object's
``data`` at the reader's clock ``now_ms``, after accepting ``previous`` (a checkpoint
envelope, when present) the same way.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sealmem.crypto import SUITE
from sealmem.protocol.checkpoint import Checkpoint
from sealmem.protocol.encoding import b64e
from sealmem.protocol.hlc import MAX_AHEAD_MS
from sealmem.protocol.roster import Reset, Revocation

from . import generate as g

__all__ = ["DESCRIPTIONS", "freshness_cases"]

DESCRIPTIONS = {
    "manifest-behind-witness": "a reader with no head refuses a seq below what bob witnessed",
    "manifest-behind-witness-older-head": "a reader at seq 1 refuses seq 2 below bob's seq 3",
    "manifest-behind-witness-at-floor": "the witnessed seq itself is accepted",
    "manifest-behind-witness-reset": "after an admin reset, old witnesses are not floors",
    "checkpoint-accept": "an admin's checkpoint of the trusted roster and epoch",
    "checkpoint-newer-roster": "a checkpoint citing a roster the reader lacks still verifies",
    "checkpoint-not-admin": "a checkpoint signed by a member who is no admin",
    "checkpoint-revoked": "a checkpoint signed by an admin revoked in the trusted roster",
    "checkpoint-wrong-context": "a manifest signature over a checkpoint body",
    "checkpoint-bad-signature": "one bit of the signature flipped",
    "checkpoint-fork-roster": "a checkpoint naming another body for the trusted roster version",
    "checkpoint-fork-key": "a checkpoint committing to another key for the trusted epoch",
    "checkpoint-epoch-unknown": "a checkpoint giving the project an epoch its roster does not",
    "checkpoint-rollback": "a lower seq than the accepted checkpoint",
    "checkpoint-fork": "the accepted seq with another body",
    "checkpoint-clock-ahead": "signed more than 2 days ahead of the reader's clock",
    "checkpoint-cross-team": "a checkpoint of another team",
    "checkpoint-malformed": "stop age below the warn age",
    "checkpoint-unknown-format": "a format this version does not speak",
}


def _cp(**changes: Any) -> Checkpoint:
    base = Checkpoint(
        team=g.TEAM,
        seq=2,
        roster_version=1,
        roster_hash=g.R1_ROSTER.hash(SUITE),
        projects={g.PROJECT: (1, g.KEY1.commitment())},
        signed_at=g.NOW,
    )
    return replace(base, **changes)


def _case(
    name: str, cp: bytes, expected: str, previous: bytes | None = None, setup: g.Setup | None = None
) -> g.Case:
    extra: dict[str, Any] = {"now_ms": g.READER_NOW}
    if previous is not None:
        extra["previous"] = b64e(previous)
    return g.Case(name, g.BASE if setup is None else setup, cp, expected, extra=extra)


def _witness_cases() -> list[g.Case]:
    a1 = g.snap(g.ALICE, [g.record(g.ALICE, 1)])
    a2 = g.snap(g.ALICE, [g.record(g.ALICE, 2)], seq=2, prev=a1.manifest.hash(SUITE))
    a3 = g.snap(g.ALICE, [g.record(g.ALICE, 3)], seq=3, prev=a2.manifest.hash(SUITE))
    bob_saw2 = g.snap(g.BOB, [g.record(g.BOB, 1)], heads=[a2.manifest.head(SUITE)]).envelope
    bob_saw3 = g.snap(g.BOB, [g.record(g.BOB, 1)], heads=[a3.manifest.head(SUITE)]).envelope
    reset = ("roster", g.nxt(g.R1_ROSTER, resets=(Reset(g.ALICE.kid, g.PROJECT, 2),)).sign(g.ROOT))
    return [
        g.Case(
            "manifest-behind-witness",
            [*g.BASE, ("manifest", bob_saw2)],
            a1.envelope,
            "behind-witness",
        ),
        g.Case(
            "manifest-behind-witness-older-head",
            [*g.BASE, ("manifest", a1.envelope), ("manifest", bob_saw3)],
            a2.envelope,
            "behind-witness",
        ),
        g.Case(
            "manifest-behind-witness-at-floor",
            [*g.BASE, ("manifest", bob_saw2)],
            a2.envelope,
            "accept",
        ),
        g.Case(
            "manifest-behind-witness-reset",
            [*g.BASE, ("manifest", bob_saw3), reset],
            g.snap(g.ALICE, [g.record(g.ALICE, 5)], roster_version=2).envelope,
            "accept",
        ),
    ]


def freshness_cases() -> list[g.Case]:
    g.DESCRIPTIONS.update(DESCRIPTIONS)  # (the generator may run as __main__, another copy)
    ok = _cp().sign(g.ROOT)
    revoked_root = g.nxt(
        g.ALICE_ADMIN, revocations=(Revocation(g.ROOT.kid, 3, {}),), admins=(g.ALICE.kid,)
    )
    alice_admin = [*g.BASE, ("roster", g.ALICE_ADMIN.sign(g.ROOT))]
    revoked = [*alice_admin, ("roster", revoked_root.sign(g.ALICE))]
    other = replace(g.R1_ROSTER, created_at=g.NOW + 99)
    return [
        *_witness_cases(),
        _case("checkpoint-accept", ok, "accept"),
        _case(
            "checkpoint-newer-roster",
            _cp(roster_version=7, roster_hash="ab" * 32, projects={}).sign(g.ROOT),
            "accept",
        ),
        _case("checkpoint-not-admin", _cp().sign(g.BOB), "not-admin"),
        _case(
            "checkpoint-revoked",
            _cp(roster_version=2, roster_hash=g.ALICE_ADMIN.hash(SUITE), projects={}).sign(g.ROOT),
            "revoked",
            setup=revoked,
        ),
        _case("checkpoint-wrong-context", g.resign(ok, g.ROOT, "manifest"), "wrong-context"),
        _case("checkpoint-bad-signature", g.flip_sig(ok), "bad-signature"),
        _case("checkpoint-fork-roster", _cp(roster_hash=other.hash(SUITE)).sign(g.ROOT), "fork"),
        _case(
            "checkpoint-fork-key", _cp(projects={g.PROJECT: (1, "ef" * 32)}).sign(g.ROOT), "fork"
        ),
        _case(
            "checkpoint-epoch-unknown",
            _cp(projects={g.PROJECT: (2, g.KEY2.commitment())}).sign(g.ROOT),
            "epoch-unknown",
        ),
        _case("checkpoint-rollback", _cp(seq=1).sign(g.ROOT), "rollback", previous=ok),
        _case("checkpoint-fork", _cp(signed_at=g.NOW + 5).sign(g.ROOT), "fork", previous=ok),
        _case(
            "checkpoint-clock-ahead",
            _cp(signed_at=g.READER_NOW + MAX_AHEAD_MS + 1).sign(g.ROOT),
            "clock-ahead",
        ),
        _case(
            "checkpoint-cross-team",
            g.resign(ok, g.ROOT, "checkpoint", team="other-team"),
            "cross-team",
        ),
        _case(
            "checkpoint-malformed",
            g.resign(ok, g.ROOT, "checkpoint", stop_after_ms=600_000),
            "malformed",
        ),
        _case(
            "checkpoint-unknown-format",
            g.resign(ok, g.ROOT, "checkpoint", format="sealmem/checkpoint/v9"),
            "unknown-format",
        ),
    ]
