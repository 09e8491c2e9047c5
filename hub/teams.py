"""Each team's trusted state on the hub, and the verified writes that change it.

The hub is a reader like any member: it keeps a :class:`TrustedState` per team
(pinned to the key that signed roster v1 when the operator let the team
register) and runs every roster, keyring and manifest through
``sealmem.protocol.verify`` before storing it.

Several replicas may serve one storage, so this process's copy of a team's
state is only a cache: each request compares it with the team's generation in
storage (one cheap read; rosters and keyrings bump it) and reloads it when
another replica changed the team.  Every verified write happens inside
:meth:`Storage.write`, the team's write lock across processes: the state is
re-checked there, the writer's chain head read there, and the object stored in
the same transaction, so compare-and-swap on a writer's ``seq`` is exact and a
member revoked through one replica is refused by all at their next request.
The cache holds at most :data:`MAX_CACHED_TEAMS` teams (least recently used
go); there is no per-team lock object in memory.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence

from ..crypto import SUITE
from ..protocol import hubapi, reasons
from ..protocol.bases import parsed_base, rebuild
from ..protocol.envelope import unpack
from ..protocol.errors import Rejected
from ..protocol.keyring import peek as keyring_peek
from ..protocol.manifest import Manifest, peek
from ..protocol.roster import Roster
from ..protocol.state import ChainHead, TrustedState
from ..protocol.verify import (
    MAX_ROSTER_BYTES,
    accept_keyring,
    accept_manifest,
    accept_roster,
)
from .errors import Refusal, from_rejected
from .slots import is_private_slot
from .storage import (
    Conflict,
    KeyringBlob,
    MissingBase,
    MissingChunks,
    StaleSeq,
    Storage,
    StorageError,
    StoredHead,
    TeamWrite,
)

__all__ = ["MAX_CACHED_TEAMS", "Teams", "conflict", "genesis_signer"]

MAX_CACHED_TEAMS = 4096

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


def _no_private_slot(roster: Roster) -> None:
    """Refuse a roster registering a project named like a member's private slot
    (:mod:`.slots`): its keyrings and feed entries would be that member's."""
    for project in roster.projects:
        if is_private_slot(project):
            raise Refusal(
                400, hubapi.BAD_REQUEST,
                f"project {project!r} is named like a member's private space on this hub; "
                "name it otherwise",
            )  # fmt: skip


class Teams:
    """Trusted state per team, cached per process, changed only through verification."""

    def __init__(
        self, storage: Storage, *, manifests_kept: int = 3, max_cached: int = MAX_CACHED_TEAMS
    ) -> None:
        self._storage = storage
        self._kept = manifests_kept
        self._max = max_cached
        self._cache: OrderedDict[str, tuple[int, TrustedState]] = OrderedDict()
        self._guard = threading.Lock()

    def __len__(self) -> int:
        return len(self._cache)

    # -- the cache -------------------------------------------------------------------

    def _cached(self, team: str, generation: int) -> TrustedState | None:
        with self._guard:
            found = self._cache.get(team)
            if found is None or found[0] != generation:
                return None
            self._cache.move_to_end(team)
            return found[1]

    def _keep(self, team: str, generation: int, state: TrustedState) -> None:
        with self._guard:
            self._cache[team] = (generation, state)
            self._cache.move_to_end(team)
            while len(self._cache) > self._max:
                self._cache.popitem(last=False)

    def _fresh(self, team: str, generation: int | None) -> TrustedState | None:
        """The state at ``generation`` (cached, else loaded); None: not registered."""
        if generation is None:
            return None
        state = self._cached(team, generation) or self._load(team)
        if state is not None:
            self._keep(team, generation, state)
        return state

    def state(self, team: str) -> TrustedState:
        """The team's trusted state; 404 ``unknown-team`` if it never registered."""
        return self.state_at(team, self._storage.generation(team))

    def state_at(self, team: str, generation: int | None) -> TrustedState:
        """The team's trusted state at ``generation`` (read by the caller, e.g. inside
        its write transaction); 404 ``unknown-team`` if it never registered."""
        found = self._fresh(team, generation)
        if found is None:
            raise Refusal(
                404,
                hubapi.UNKNOWN_TEAM,
                f"team {team} is not registered on this hub; check the URL",
            )
        return found

    @property
    def kept(self) -> int:
        """Manifests kept per slot."""
        return self._kept

    def known(self, team: str) -> bool:
        return self._storage.team_exists(team)

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
            if is_private_slot(blob.project):  # a member keyring (hub/private.py)
                continue
            try:
                state, _ = accept_keyring(SUITE, state, blob.data)
            except Rejected as exc:  # e.g. signed by an admin revoked since: readers still judge
                log.warning("team %s: stored keyring %s/%s skipped: %s", team, blob.project,
                            blob.epoch, exc.reason)  # fmt: skip
        return state

    @staticmethod
    def _base_of(tx: TeamWrite, m: Manifest) -> Manifest:
        """The delta ``m`` rebuilt from the base this hub keeps for its slot."""
        delta = m.delta
        data = None if delta is None else tx.manifest_at(
            m.project, m.writer, delta.base_seq, delta.base_hash
        )  # fmt: skip
        found = None if data is None else parsed_base(SUITE, data)
        return rebuild(SUITE, m, [] if found is None else [found])

    @classmethod
    def _with_heads(cls, state: TrustedState, tx: TeamWrite, data: bytes) -> TrustedState:
        """``state`` with the chain heads a manifest's verification reads: its own slot's
        and those of the slots it witnesses (not every slot of the team: a push costs
        the same at 10 members and at 200); a v3 delta's, rebuilt from its base."""
        try:
            m = peek(data)
            if not m.heads_known:
                m = cls._base_of(tx, m)
            slots = {(m.project, m.writer), *((h.project, h.writer) for h in m.heads)}
        except Rejected:
            slots = set()  # accept_manifest refuses it, by name, before any head is read
        found = tx.heads_of(slots)
        heads = {(h.writer, h.project): ChainHead(h.seq, h.hash, h.reset_at) for h in found}
        return state.evolve(heads=heads, witnessed={})

    # -- verified writes -------------------------------------------------------------

    def publish_roster(
        self,
        team: str,
        data: bytes,
        keyrings: Sequence[bytes],
        now_ms: int,
        *,
        version: int | None = None,
    ) -> tuple[Roster, bool]:
        """Accept a roster version (v1 registers the team) and the keyrings that cite it,
        all or nothing; return it and whether anything was stored.  A roster that is not
        ``version`` (the path's) is 400 ``bad-request``, before anything is stored."""
        revoked: list[str] = []
        with self._storage.write(team) as tx:
            generation = tx.generation
            state = self._fresh(team, generation)
            if state is None:
                _, root = genesis_signer(team, data)
                state = TrustedState.pin(SUITE, team, root)
            try:
                new_state, roster = accept_roster(SUITE, state, data)
                if version is not None and roster.version != version:
                    raise Refusal(
                        400, hubapi.BAD_REQUEST, f"roster v{roster.version} was sent as v{version}"
                    )
                _no_private_slot(roster)
                blobs: list[KeyringBlob] = []
                for item in keyrings:
                    after, keyring = accept_keyring(SUITE, new_state, item)
                    if after is not new_state:
                        blobs.append(
                            KeyringBlob(
                                keyring.project, keyring.epoch, item, keyring.roster_version
                            )
                        )
                    new_state = after
            except Rejected as exc:
                raise from_rejected(exc, "roster publication") from exc
            if new_state is state:
                return roster, False
            members = [(m.kid, m.sign_public) for m in roster.listed_keys()]
            try:
                if state.roster is not None and roster.version == state.roster.version:
                    for blob in blobs:
                        tx.put_keyring(blob, now_ms)
                else:
                    tx.put_roster(roster.version, data, members, blobs, now_ms)
                    before = state.roster
                    for r in roster.revocations:
                        if before is None or before.revocation(r.kid) is None:
                            tx.drop_writer(r.kid, {p: pin.seq for p, pin in r.pins.items()})
                            revoked.append(r.kid)
            except Conflict as exc:
                raise conflict(f"roster v{roster.version} of team {team}", exc) from exc
            committed = (tx.generation or 0, new_state)
        self._keep(team, *committed)  # only once committed: a rollback reuses the generation
        for kid in revoked:  # after the commit: rows first, then blobs
            dropped = self._storage.drop_unreferenced(team, kid)
            if dropped:
                log.info("team %s: dropped %d chunk(s) of revoked writer %s", team, dropped, kid)
        return roster, True

    def put_keyring(self, team: str, project: str, epoch: int, data: bytes, now_ms: int) -> bool:
        with self._storage.write(team) as tx:
            state = self.state_at(team, tx.generation)
            try:
                cited = keyring_peek(data).roster_version
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
            try:
                tx.put_keyring(KeyringBlob(project, epoch, data, keyring.roster_version), now_ms)
            except Conflict as exc:
                raise conflict(f"keyring {project}/{epoch}", exc) from exc
            committed = (tx.generation or 0, new_state)
        self._keep(team, *committed)
        return True

    def put_manifest(
        self, team: str, project: str, writer: str, seq: int, data: bytes, now_ms: int
    ) -> bool:
        """Verify and store a writer's manifest (compare-and-swap on ``seq``); a write
        that may share its durable commit with others (:meth:`Storage.push`)."""
        with self._storage.push(team) as tx:
            state = self._with_heads(self.state_at(team, tx.generation), tx, data)
            try:
                new_state, manifest = accept_manifest(
                    SUITE, state, data, project=project, writer=writer,
                    rebuild=lambda m: self._base_of(tx, m),
                )  # fmt: skip
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
            head = new_state.head(writer, project)
            if head is None:  # accept_manifest always sets it for a new manifest
                raise Refusal(500, hubapi.INTERNAL, "the verified manifest left no chain head")
            stored = StoredHead(project, writer, head.seq, head.hash, head.reset_at)
            ids = [c.id for c in manifest.listed]  # a delta: the changed chunks
            delta = manifest.delta
            base = None if delta is None else (delta.base_seq, delta.base_hash)
            try:
                tx.put_manifest(stored, data, ids, self._kept, now_ms, base)
            except StaleSeq as exc:
                raise Refusal(
                    409,
                    hubapi.STALE_SEQ,
                    f"{writer}/{project} already holds seq {exc.current}; pull and retry",
                ) from exc
            except MissingBase as exc:
                raise Refusal(
                    422,
                    reasons.MISSING_BASE,
                    f"the manifest is a delta listed against seq {exc.seq}, which this hub "
                    "does not hold for the slot; publish a full manifest",
                ) from exc
            except MissingChunks as exc:
                raise Refusal(
                    422,
                    reasons.MISSING_CHUNK,
                    f"the manifest names {len(exc.ids)} chunk(s) this hub does not hold "
                    f"(first {exc.ids[0][:16]}, all in '{hubapi.FIELD_MISSING}'); upload "
                    "them, or encrypt those buckets again, before the manifest",
                    fields={hubapi.FIELD_MISSING: sorted(exc.ids)[: hubapi.MAX_MISSING_LISTED]},
                ) from exc
            return True

    def kept_chunks(self, team: str, project: str, writer: str) -> set[str]:
        """Chunk ids named by the writer's kept manifests (never collected)."""
        out: set[str] = set()
        for data in self._storage.manifests(team, project, writer).get(writer, []):
            try:
                out.update(c.id for c in peek(data).listed)
            except Rejected:
                continue
        return out


def conflict(what: str, exc: Conflict) -> Refusal:
    """409 ``rollback`` (what is stored is newer) or ``fork`` (another object is stored
    for this version): the verifier's words for the same situations."""
    return Refusal(
        409,
        reasons.ROLLBACK if exc.stale else reasons.FORK,
        f"{what}: {exc} (written meanwhile, perhaps through another hub replica); pull and retry",
    )
