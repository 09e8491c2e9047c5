"""A member's private space on the hub (SPEC.md "Private memories and trust follow the
member"): member keyrings and each device's private chains, served only to that
member's devices.

The hub checks what it can without a key: the caller is an unrevoked device of the
member (else ``no-grant``), a device writes only its own chains (``not-your-slot``), a
member keyring passes the member keyring rules against the team's trusted state, a
private manifest is one (its format), for the slot it is sent to, signed by the device,
compare-and-swapped on ``seq``.  Readers verify everything again.  Storage: the team
chains' tables and blobs, under the slot names of :mod:`.slots`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..crypto import SUITE
from ..protocol import hubapi, reasons
from ..protocol.envelope import unpack
from ..protocol.errors import Rejected
from ..protocol.manifest import MAX_MANIFEST_BYTES, Manifest
from ..protocol.private import PrivateState, accept_member_keyring, member_devices
from ..protocol.private_trust import accept_trust
from ..protocol.state import TrustedState
from .auth import Caller
from .errors import Refusal, from_rejected
from .slots import chain_slot, keyring_slot, slot_prefix, trust_slot
from .storage import Conflict, KeyringBlob, MissingChunks, StaleSeq, Storage, StoredHead
from .teams import conflict

__all__ = ["PrivateSpace"]


def may_enter(state: TrustedState, caller: Caller, member: str) -> None:
    """Refuse (403 ``no-grant``) a caller that is not an unrevoked device of ``member``."""
    roster = state.roster
    if roster is None or caller.kid not in {d.kid for d in member_devices(roster, member)}:
        raise Refusal(
            403, hubapi.NO_GRANT, f"{caller.kid} is no device of {member}: its space is private"
        )


def own_chain(caller: Caller, writer: str) -> None:
    if writer != caller.kid:
        raise Refusal(403, hubapi.NOT_YOUR_SLOT, f"{caller.kid} writes only its own chains")


class PrivateSpace:
    def __init__(
        self,
        storage: Storage,
        state_at: Callable[[str, int | None], TrustedState],
        *,
        manifests_kept: int = 3,
    ) -> None:
        self._storage = storage
        self._state_at = state_at
        self._kept = manifests_kept

    def keyrings(self, team: str, member: str) -> list[bytes]:
        return [b.data for b in self._storage.keyrings(team, keyring_slot(member))]

    def put_keyring(self, team: str, member: str, epoch: int, data: bytes, now_ms: int) -> bool:
        slot = keyring_slot(member)
        with self._storage.write(team) as tx:
            state = self._state_at(team, tx.generation)
            private = before = self._rings(team, member, state)
            try:
                private, ring = accept_member_keyring(SUITE, state, private, data)
            except Rejected as exc:
                raise from_rejected(exc, f"member keyring {member}/{epoch}") from exc
            if (ring.member, ring.epoch) != (member, epoch):
                raise Refusal(400, hubapi.BAD_REQUEST, "the member keyring is not the one sent")
            if private is before:
                return False
            try:
                tx.put_keyring(KeyringBlob(slot, epoch, data, ring.roster_version), now_ms)
            except Conflict as exc:
                raise conflict(f"member keyring {member}/{epoch}", exc) from exc
            return True

    def _rings(self, team: str, member: str, state: TrustedState) -> PrivateState:
        private = PrivateState()
        for blob in self._storage.keyrings(team, keyring_slot(member)):
            try:
                private, _ = accept_member_keyring(SUITE, state, private, blob.data)
            except Rejected:  # e.g. signed by a device revoked since
                continue
        return private

    def trust(self, team: str, member: str, writer: str) -> bytes | None:
        found = self._storage.keyrings(team, trust_slot(member, writer))
        return found[-1].data if found else None

    def put_trust(self, team: str, member: str, writer: str, data: bytes, now_ms: int) -> bool:
        with self._storage.write(team) as tx:
            state = self._state_at(team, tx.generation)
            try:
                ts = accept_trust(
                    SUITE, state, self._rings(team, member, state), data, member=member,
                    writer=writer,
                )  # fmt: skip
            except Rejected as exc:
                raise from_rejected(exc, f"trust decisions of {writer}") from exc
            try:
                tx.put_keyring(KeyringBlob(trust_slot(member, writer), 1, data, ts.seq), now_ms)
            except Conflict as exc:
                raise conflict(f"trust decisions of {writer}", exc) from exc
            return True

    def chains(self, team: str, member: str, writer: str) -> list[bytes]:
        """The newest manifest of each of ``writer``'s private chains."""
        return self._storage.slot_manifests(team, slot_prefix(member), writer)

    def manifests(self, team: str, member: str, writer: str, project: str) -> list[bytes]:
        slot = chain_slot(member, project)
        return self._storage.manifests(team, slot, writer).get(writer, [])

    def put_manifest(
        self, team: str, member: str, writer: str, project: str, seq: int, data: bytes, now: int
    ) -> bool:
        where = f"private manifest {writer}/{project} seq {seq}"
        with self._storage.push(team) as tx:
            state = self._state_at(team, tx.generation)
            try:
                env = unpack(data, what="manifest", max_bytes=MAX_MANIFEST_BYTES)
                m = Manifest.from_body(env.body)
                if not m.private or (m.team, m.writer, m.project, m.seq, env.signer) != (
                    team, writer, project, seq, writer
                ):  # fmt: skip
                    raise Rejected(reasons.MALFORMED, "not a private manifest of this slot")
                device = state.roster.member(writer) if state.roster is not None else None
                if device is None:
                    raise Rejected(reasons.UNKNOWN_WRITER, "no device of the roster")
                env.check(SUITE, "manifest", device.sign_public)
            except Rejected as exc:
                raise from_rejected(exc, where) from exc
            slot = chain_slot(member, project)
            head = StoredHead(slot, writer, seq, m.hash(SUITE), 0)
            base = None if m.delta is None else (m.delta.base_seq, m.delta.base_hash)
            try:
                tx.put_manifest(head, data, [c.id for c in m.listed], self._kept, now, base)
            except StaleSeq as exc:
                raise Refusal(409, hubapi.STALE_SEQ, f"{where}: seq {exc.current} held") from exc
            except MissingChunks as exc:
                raise Refusal(
                    422, reasons.MISSING_CHUNK, f"{where}: {len(exc.ids)} chunk(s) missing"
                ) from exc
            return True
