"""A device's trust decisions in its member's private space (SPEC.md "Private memories
and trust follow the member"): ``sealmem/private-trust/v1``, context ``private-trust``.

One object per device, replaced as its decisions change (``seq`` grows): the per-teammate
states the device set, sealed under the member key of ``epoch`` (associated data binds
it to its team, member, writer, epoch and seq), signed by the device.  A sibling keeps,
per teammate, the decision with the highest ``(wall, counter, device kid)``: last
writer wins.  Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import canonical, reasons
from .encoding import b64e, exact_keys, need_b64, need_int, need_kid, need_list, need_str
from .envelope import seal, unpack
from .errors import DecryptionError, ProtocolError, Rejected
from .roster import MAX_MEMBERS
from .suite import ContentKeyLike, RandomSource, Signer, Suite

if TYPE_CHECKING:
    from .private import PrivateState
    from .state import TrustedState

__all__ = [
    "MAX_TRUST_BYTES",
    "TRUST_FORMAT",
    "TRUST_STATES",
    "TrustEntry",
    "TrustSet",
    "accept_trust",
    "open_trust",
    "replaces",
    "seal_trust",
]

TRUST_FORMAT = "sealmem/private-trust/v1"
TRUST_STATES = ("trusted", "review", "muted")
MAX_TRUST_BYTES = 1024 * 1024
_NONCE = 24
_BODY_KEYS = frozenset({"format", "team", "member", "writer", "seq", "epoch", "sealed"})


@dataclass(frozen=True, slots=True, order=True)
class TrustEntry:
    """One decision: ``member`` (the teammate judged) is ``state`` since ``(wall, counter)``."""

    member: str
    state: str
    wall: int
    counter: int = 0

    def to_wire(self) -> dict[str, Any]:
        return {"member": self.member, "state": self.state, "hlc": [self.wall, self.counter]}

    @classmethod
    def from_wire(cls, value: object, path: str) -> TrustEntry:
        obj = exact_keys(value, {"member", "state", "hlc"}, path)
        state = need_str(obj["state"], f"{path}.state")
        if state not in TRUST_STATES:
            raise Rejected(
                reasons.MALFORMED, f"{path}.state {state!r} is not one of {TRUST_STATES}"
            )
        hlc = need_list(obj["hlc"], f"{path}.hlc", max_len=2)
        if len(hlc) != 2:
            raise Rejected(reasons.MALFORMED, f"{path}.hlc is not [wall, counter]")
        wall, counter = need_int(hlc[0], f"{path}.hlc[0]"), need_int(hlc[1], f"{path}.hlc[1]")
        if wall >= 1 << 47 or counter >= 1 << 16:
            raise Rejected(reasons.MALFORMED, f"{path}.hlc is out of range")
        return cls(need_kid(obj["member"], f"{path}.member"), state, wall, counter)


@dataclass(frozen=True, slots=True)
class TrustSet:
    team: str
    member: str
    writer: str
    seq: int
    epoch: int
    sealed: bytes


def _ad(team: str, member: str, writer: str, epoch: int, seq: int) -> bytes:
    return canonical.encode(
        {"format": TRUST_FORMAT, "team": team, "member": member, "writer": writer,
         "epoch": epoch, "seq": seq}
    )  # fmt: skip


def seal_trust(
    key: ContentKeyLike,
    signer: Signer,
    *,
    team: str,
    member: str,
    epoch: int,
    seq: int,
    entries: Iterable[TrustEntry],
    random: RandomSource,
) -> bytes:
    """The signed object carrying ``entries`` (one per teammate), sealed under ``key``."""
    plain = canonical.encode([e.to_wire() for e in sorted(entries)])
    ad = _ad(team, member, signer.kid, epoch, seq)
    sealed = key.encrypt(plain, ad, nonce=random(_NONCE))
    body = {
        "format": TRUST_FORMAT, "team": team, "member": member, "writer": signer.kid,
        "seq": seq, "epoch": epoch, "sealed": b64e(sealed),
    }  # fmt: skip
    return seal(body, "private-trust", signer)


def accept_trust(
    suite: Suite,
    state: TrustedState,
    private: PrivateState,
    data: bytes,
    *,
    member: str,
    writer: str,
    held_seq: int = 0,
) -> TrustSet:
    """Accept ``writer``'s trust decisions filed in ``member``'s private space: signed by
    that unrevoked device of ``member`` (``signer-mismatch``, ``revoked``), under an
    accepted member keyring epoch (``epoch-unknown``), newer than ``held_seq``
    (``rollback``; the same seq is the one already read)."""
    env = unpack(data, what="trust decisions", max_bytes=MAX_TRUST_BYTES)
    body = env.body
    if body.get("format") != TRUST_FORMAT:
        raise Rejected(reasons.UNKNOWN_FORMAT, f"trust format {body.get('format')!r}")
    obj = exact_keys(body, _BODY_KEYS, "trust")
    if obj["team"] != state.team:
        raise Rejected(reasons.CROSS_TEAM, f"trust decisions of team {obj['team']!r}")
    ts = TrustSet(
        team=state.team,
        member=need_kid(obj["member"], "trust.member"),
        writer=need_kid(obj["writer"], "trust.writer"),
        seq=need_int(obj["seq"], "trust.seq", minimum=1),
        epoch=need_int(obj["epoch"], "trust.epoch", minimum=1),
        sealed=need_b64(obj["sealed"], "trust.sealed"),
    )
    where = f"trust decisions of {ts.writer} seq {ts.seq}"
    roster = state.roster
    device = None if roster is None else roster.member(env.signer)
    if device is None or roster is None:
        raise Rejected(reasons.UNKNOWN_WRITER, f"{where}: signer is not in the trusted roster")
    if (ts.member, ts.writer, device.id) != (member, env.signer, member) or writer != env.signer:
        raise Rejected(reasons.SIGNER_MISMATCH, f"{where} is signed by {env.signer}")
    env.check(suite, "private-trust", device.sign_public)
    if roster.revocation(env.signer) is not None:
        raise Rejected(reasons.REVOKED, f"{where}: its device is revoked")
    if (member, ts.epoch) not in private.rings:
        raise Rejected(reasons.EPOCH_UNKNOWN, f"{where}: no trusted member keyring {ts.epoch}")
    if ts.seq < held_seq:
        raise Rejected(reasons.ROLLBACK, f"{where} is older than seq {held_seq} already read")
    return ts


def open_trust(ts: TrustSet, key: ContentKeyLike) -> list[TrustEntry]:
    """The decisions of an accepted :class:`TrustSet` (``tampered``: they do not open
    under the member key; ``malformed``: not one entry per teammate)."""
    where = f"trust decisions of {ts.writer} seq {ts.seq}"
    try:
        plain = key.decrypt(ts.sealed, _ad(ts.team, ts.member, ts.writer, ts.epoch, ts.seq))
    except DecryptionError as exc:
        raise Rejected(reasons.TAMPERED, f"{where} do not open under epoch {ts.epoch}") from exc
    try:
        items = need_list(canonical.decode(plain), "trust entries", max_len=MAX_MEMBERS)
        entries = [TrustEntry.from_wire(v, f"trust[{i}]") for i, v in enumerate(items)]
    except (ProtocolError, canonical.NonCanonical) as exc:
        raise Rejected(reasons.MALFORMED, f"{where}: {exc}") from exc
    if len({e.member for e in entries}) != len(entries):
        raise Rejected(reasons.MALFORMED, f"{where}: a teammate is judged twice")
    return entries


def replaces(new: tuple[int, int, str], held: tuple[int, int, str] | None) -> bool:
    """Whether a decision stamped ``new`` (wall, counter, device kid) replaces the one held
    for the same teammate: the highest stamp wins (last writer wins)."""
    return held is None or new > held
