"""Ed25519 edge cases (SPEC.md "Signature verification"): vectors that a lax verifier accepts.

A small-order public key with the signature ``R = identity, S = 0`` passes the equation
of a verifier that does not refuse small-order keys, for any message; a signature whose
``S`` is not reduced below the group order passes one that reduces ``S`` first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sealmem.crypto import SUITE
from sealmem.protocol import canonical
from sealmem.protocol.encoding import b64d, b64e
from sealmem.protocol.roster import Member

if TYPE_CHECKING:
    from .generate import Case

IDENTITY = bytes([1]) + bytes(31)  # the neutral point, canonically encoded: order 1
GROUP_ORDER = 2**252 + 27742317777372353535851937790883648493

DESCRIPTIONS = {
    "roster-small-order-key": (
        "v2 signed by an admin whose sign_public is the neutral point (order 1), with the "
        "signature R = neutral point, S = 0: the equation holds for any message, the key "
        "MUST be refused"
    ),
    "roster-signature-s-not-reduced": (
        "v1 whose signature has S + L in place of S (L the group order): the same point, "
        "not the canonical scalar; MUST be refused"
    ),
}


def signature_cases() -> list[Case]:
    from dataclasses import replace

    from .generate import R1, R1_ROSTER, ROOT, Case, nxt

    weak = Member(SUITE.kid_from_public(IDENTITY), "weak", IDENTITY, bytes(32), "admin", False)
    r1 = replace(R1_ROSTER, admins=(*R1_ROSTER.admins, weak.kid),
                 members=(*R1_ROSTER.members, weak)).check(SUITE)  # fmt: skip
    body = nxt(r1).to_body()
    forged = IDENTITY + bytes(32)
    small = canonical.encode({"body": body, "signer": weak.kid, "sig": b64e(forged)})
    envelope = canonical.decode(R1)
    sig = b64d(envelope["sig"])
    s = int.from_bytes(sig[32:], "little") + GROUP_ORDER
    unreduced = canonical.encode({**envelope, "sig": b64e(sig[:32] + s.to_bytes(32, "little"))})
    return [
        Case("roster-small-order-key", [("roster", r1.sign(ROOT))], small, "bad-signature"),
        Case("roster-signature-s-not-reduced", [], unreduced, "bad-signature"),
    ]
