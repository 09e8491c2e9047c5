"""Each team's trusted state on the hub, and the verified writes that change it.

The hub is a reader like any member: it keeps a :class:`TrustedState` per team
(pinned to the key that signed roster v1 when the operator let the team
register) and runs every roster, keyring and manifest through
``sealmem.protocol.verify`` before storing it.  Writes to one team are
serialized by a per-team lock, so compare-and-swap on a writer's ``seq`` is
exact.  The state is rebuilt from storage on first use after a restart.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from ..crypto import SUITE
from ..protocol import hubapi, reasons
from ..protocol.envelope import unpack
from ..protocol.errors import Rejected
from ..protocol.keyring import Keyring
from ..protocol.manifest import Manifest
from ..protocol.roster import Roster
from ..protocol.state import ChainHead, TrustedState
from ..protocol.verify import (
    MAX_KEYRING_BYTES,
    MAX_ROSTER_BYTES,
    accept_keyring,
    accept_manifest,
    accept_roster,
)
from .errors import Refusal, from_rejected
from .storage import KeyringBlob, StaleSeq, Storage, StorageError, StoredHead

__all__ = ["Teams", "genesis_signer"]

log = logging.getLogger("sealmem.hub")


def genesis_signer(team: str, data: bytes) -> tuple[str, bytes]:
    """(kid, sign_public) of the key that signed roster v1 ``data``, from its own body."""
    try:
        env = unpack(data, what="roster", max_bytes=MAX_ROSTER_BYTES)
        roster = Roster.from_body(env.body, SUITE)
    except Rejected as exc:
        raise from_rejected(exc, "roster v1") from exc
    if roster.team != team:
        raise Refusal(422, reasons.CROSS_TEAM, f"roster v1 is for team {roster.team!r}, not {team}")
    if roster.version != 1:
        raise Refusal(
            404,
            hubapi.UNKNOWN_TEAM,
            f"team {team} is not registered on this hub; publish its roster v1 first",
        )
    member = roster.member(env.signer)
    if member is None:
        raise Refusal(422, reasons.NOT_ADMIN, "roster v1 is signed by a key it does not list")
    return member.kid, member.sign_public


class Teams:
    """Trusted state per team, cached in memory, changed only through verification."""

    def __init__(self, storage: Storage, *, manifests_kept: int = 3) -> None:
        self._storage = storage
        self._kept = manifests_kept
        self._states: dict[str, TrustedState] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock(self, team: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(team, threading.Lock())

    def state(self, team: str) -> TrustedState:
        """The team's trusted state; 404 ``unknown-team`` if it never registered."""
        found = self._states.get(team)
        if found is not None:
            return found
        with self._lock(team):
            found = self._states.get(team) or self._load(team)
        if found is None:
            raise Refusal(
                404,
                hubapi.UNKNOWN_TEAM,
                f"team {team} is not registered on this hub; check the URL",
            )
        return found

    def known(self, team: str) -> bool:
        return team in self._states or self._storage.team_exists(team)

    def _load(self, team: str) -> TrustedState | None:
        rosters = self._storage.rosters(team, 0)
        if not rosters:
            return None
        _, root = genesis_signer(team, rosters[0])
        state = TrustedState.pin(SUITE, team, root)
        try:
            for data in rosters:
                state, _ = accept_roster(SUITE, state, data)
        except Rejected as exc:
            raise StorageError(f"stored rosters of team {team} no longer verify: {exc}") from exc
        for blob in self._storage.keyrings(team):
            try:
                state, _ = accept_keyring(SUITE, state, blob.data)
            except Rejected as exc:  # e.g. signed by an admin revoked since: readers still judge
                log.warning("team %s: stored keyring %s/%s skipped: %s", team, blob.project,
                            blob.epoch, exc.reason)  # fmt: skip
        heads = {
            (h.writer, h.project): ChainHead(h.seq, h.hash, h.reset_at)
            for h in self._storage.heads(team)
        }
        state = state.evolve(heads=heads)
        self._states[team] = state
        return state

    # -- verified writes -------------------------------------------------------------

    def publish_roster(
        self, team: str, data: bytes, keyrings: Sequence[bytes], now_ms: int
    ) -> tuple[Roster, bool]:
        """Accept a roster version (v1 registers the team) and the keyrings that cite it,
        all or nothing; return it and whether anything was stored."""
        with self._lock(team):
            state = self._states.get(team) or self._load(team)
            if state is None:
                _, root = genesis_signer(team, data)
                state = TrustedState.pin(SUITE, team, root)
            try:
                new_state, roster = accept_roster(SUITE, state, data)
                blobs: list[KeyringBlob] = []
                for item in keyrings:
                    after, keyring = accept_keyring(SUITE, new_state, item)
                    if after is not new_state:
                        blobs.append(KeyringBlob(keyring.project, keyring.epoch, item))
                    new_state = after
            except Rejected as exc:
                raise from_rejected(exc, "roster publication") from exc
            if new_state is state:
                return roster, False
            members = [(m.kid, m.sign_public) for m in roster.members]
            if state.roster is not None and roster.version == state.roster.version:
                for blob in blobs:
                    self._storage.put_keyring(team, blob, now_ms)
            else:
                self._storage.put_roster(team, roster.version, data, members, blobs, now_ms)
            self._states[team] = new_state
            return roster, True

    def put_keyring(self, team: str, project: str, epoch: int, data: bytes, now_ms: int) -> bool:
        with self._lock(team):
            state = self.state(team)
            try:
                cited = Keyring.from_body(
                    unpack(data, what="keyring", max_bytes=MAX_KEYRING_BYTES).body
                ).roster_version
                current = state.roster.version if state.roster is not None else 0
                if cited > current:  # a keyring goes out before the roster that names it
                    raise Rejected(reasons.ROSTER_UNKNOWN, f"names roster v{cited}")
                new_state, keyring = accept_keyring(SUITE, state, data)
            except Rejected as exc:
                if exc.reason == reasons.ROSTER_UNKNOWN:
                    raise Refusal(
                        409,
                        hubapi.ROSTER_UNKNOWN,
                        f"keyring {project}/{epoch} names a roster this hub does not hold yet; "
                        "publish it together with that roster",
                    ) from exc
                raise from_rejected(exc, f"keyring {project}/{epoch}") from exc
            if (keyring.project, keyring.epoch) != (project, epoch):
                raise Refusal(
                    400,
                    hubapi.BAD_REQUEST,
                    f"the keyring is for {keyring.project}/{keyring.epoch}, "
                    f"sent as {project}/{epoch}",
                )
            if new_state is state:
                return False
            self._storage.put_keyring(team, KeyringBlob(project, epoch, data), now_ms)
            self._states[team] = new_state
            return True

    def put_manifest(
        self, team: str, project: str, writer: str, seq: int, data: bytes, now_ms: int
    ) -> bool:
        """Verify and store a writer's manifest (compare-and-swap on ``seq``)."""
        with self._lock(team):
            state = self.state(team)
            try:
                new_state, manifest = accept_manifest(
                    SUITE, state, data, project=project, writer=writer
                )
            except Rejected as exc:
                raise from_rejected(exc, f"manifest {writer}/{project} seq {seq}") from exc
            if manifest.seq != seq:
                raise Refusal(
                    400,
                    hubapi.BAD_REQUEST,
                    f"the manifest has seq {manifest.seq}, sent as seq {seq}",
                )
            if new_state is state:
                return False
            self._check_chunks(team, manifest)
            head = new_state.head(writer, project)
            if head is None:  # accept_manifest always sets it for a new manifest
                raise Refusal(500, hubapi.INTERNAL, "the verified manifest left no chain head")
            stored = StoredHead(project, writer, head.seq, head.hash, head.reset_at)
            try:
                self._storage.put_manifest(team, stored, data, self._kept, now_ms)
            except StaleSeq as exc:
                raise Refusal(
                    409,
                    hubapi.STALE_SEQ,
                    f"{writer}/{project} already holds seq {exc.current}; pull and retry",
                ) from exc
            self._states[team] = new_state.evolve(witnessed={})
            return True

    def _check_chunks(self, team: str, manifest: Manifest) -> None:
        ids = [c.id for c in manifest.chunks]
        missing = self._storage.missing_chunks(team, manifest.project, manifest.writer, ids)
        if missing:
            raise Refusal(
                422,
                reasons.MISSING_CHUNK,
                f"the manifest names {len(missing)} chunk(s) this hub does not hold "
                f"(first {missing[0][:16]}); upload the chunks before the manifest",
            )

    def kept_chunks(self, team: str, project: str, writer: str) -> set[str]:
        """Chunk ids named by the writer's kept manifests (never collected)."""
        out: set[str] = set()
        for data in self._storage.manifests(team, project, writer).get(writer, []):
            try:
                body = unpack(data, what="manifest", max_bytes=len(data)).body
                out.update(c.id for c in Manifest.from_body(body).chunks)
            except Rejected:
                continue
        return out
