"""The /v1 endpoints: who may do what, then the verified read or write.

Each handler is a plain blocking function over a :class:`Ctx` whose body was read
within its route's limit (:mod:`~sealmem.hub.http.edge`): authenticate the caller
against the team's trusted state, check its role and grants, then read or write
through :class:`~sealmem.hub.teams.Teams` and the storage.  SPEC.md "Hub API
(messages)" lists every message.
"""

from __future__ import annotations

import functools
import json
import secrets
from collections.abc import Callable
from typing import Any

from starlette.responses import Response

from ...crypto import SUITE
from ...protocol import hubapi
from ...protocol.encoding import b64d, b64e
from ...protocol.hlc import MAX_WALL_MS
from ...protocol.manifest import MAX_CHUNK_BYTES
from ...protocol.snapshot import chunk_id
from ...protocol.state import TrustedState
from ..auth import Authenticator, Caller, check_body, revoked
from ..checkpoints import publish_checkpoint
from ..config import HubConfig
from ..door import Door
from ..errors import Refusal
from ..limits import RateLimiter, check_quota
from ..slots import is_private_slot
from ..storage import BlobKey, Storage
from ..teams import Teams, genesis_signer
from .messages import Ctx, Json

__all__ = ["Handler", "Handlers", "envelope_list", "stored_answer"]

_MAX_KEYRINGS_PER_PUBLISH = 4096
#: a collect request's grace period: 0..2^47 ms, the range of an HLC wall clock
MAX_GRACE_MS = MAX_WALL_MS + 1


Handler = Callable[[Ctx], Response]


def envelope_list(items: list[bytes]) -> list[str]:
    """Stored envelopes as an answer lists them (base64)."""
    return [b64e(d) for d in items]


def _no_grant(kid: str, project: str, what: str) -> Refusal:
    return Refusal(
        403,
        hubapi.NO_GRANT,
        f"member {kid} may not {what} project {project!r}; an admin can grant it "
        "('sealmem admin grant')",
    )


def stored_answer(ctx: Ctx, team: str, stored: bool, **doc: int) -> Response:
    """201 and the team's change feed moved if ``stored``, else 200 (it was there)."""
    if stored:
        ctx.changed = team
    return Json({**doc, "stored": stored}, 201 if stored else 200)


def _json_body(body: bytes) -> Any:
    """A JSON request body parsed, or None: bad JSON, bad UTF-8, an integer of more than
    4300 digits, or arrays nested deeper than the decoder recurses (a RecursionError)."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _collect_body(body: bytes) -> tuple[set[str], int]:
    """``{"keep": [chunk ids], "grace_ms": n}``, n an integer in 0..2^47; else 400."""
    doc = _json_body(body)
    keep = doc.get("keep") if isinstance(doc, dict) else None
    grace = doc.get("grace_ms") if isinstance(doc, dict) else None
    if (
        not isinstance(keep, list)
        or not all(isinstance(k, str) for k in keep)
        or type(grace) is not int
        or not 0 <= grace <= MAX_GRACE_MS
    ):
        raise Refusal(
            400,
            hubapi.BAD_REQUEST,
            'the body must be {"keep": [chunk ids], "grace_ms": n} with n an integer '
            f"from 0 to {MAX_GRACE_MS} (ms)",
        )
    return set(keep), grace


class Handlers:
    def __init__(
        self,
        config: HubConfig,
        storage: Storage,
        teams: Teams,
        auth: Authenticator,
        clock: Callable[[], int],
    ) -> None:
        self.config = config
        self.storage = storage
        self.teams = teams
        self.auth = auth
        self.clock = clock
        self.member_rate = RateLimiter(storage, config.member_rate, config.member_burst, "member")
        self.door = Door(config, storage, teams, clock)

    # -- shared steps ----------------------------------------------------------------

    def gate(self, ctx: Ctx, registering: bool = False) -> None:
        """Before a signed body is read: the headers alone must prove the request.

        The team exists (else 404), the signature headers are well formed and in
        the window, and the signature over the digest header verifies under the key
        the team holds for the kid (:meth:`Authenticator.prove`); a team that is not
        registered yet takes ``PUT /rosters/1`` with the operator's token or
        allow-list only (its key is in the body: checked after it, in the handler)."""
        team = ctx.param("team")
        if registering and not self.teams.known(team):
            self._may_register(ctx, team)
            self.auth.signed(ctx.headers)
            return
        state = self.teams.state(team)
        ctx.proven = self.auth.prove(team, state, ctx.method, ctx.target, ctx.headers)
        ctx.kid = ctx.proven.signed.kid

    def _caller(
        self, ctx: Ctx, *, pending: bool = False, revoked: bool = False
    ) -> tuple[str, TrustedState, Caller]:
        team = ctx.param("team")
        # read again after the body: a revocation committed meanwhile is honoured
        state = self.teams.state(team)
        caller = self.auth.caller(
            team, state, ctx.method, ctx.target, ctx.headers, ctx.data,
            allow_pending=pending, allow_revoked=revoked, proven=ctx.proven,
        )  # fmt: skip
        ctx.kid = caller.kid
        self.member_rate.take(caller.kid, self.clock())
        return team, state, caller

    @staticmethod
    def _admin(team: str, caller: Caller) -> None:
        if not caller.admin:
            raise Refusal(403, hubapi.NOT_ADMIN, f"only an admin of team {team} may do this")

    @staticmethod
    def _reader(state: TrustedState, caller: Caller, project: str, writer: str | None) -> None:
        roster = state.roster
        if roster is None or project not in roster.projects or is_private_slot(project):
            raise Refusal(404, hubapi.NOT_FOUND, f"project {project!r} is not in the team's roster")
        if writer == caller.kid or roster.can_read(caller.kid, project):
            return
        raise _no_grant(caller.kid, project, "read")

    @staticmethod
    def _own_slot(state: TrustedState, caller: Caller, project: str, writer: str) -> None:
        if writer != caller.kid:
            raise Refusal(
                403, hubapi.NOT_YOUR_SLOT, f"member {caller.kid} may write only its own snapshot"
            )
        roster = state.roster
        if roster is None or not roster.can_write(caller.kid, project) or is_private_slot(project):
            raise _no_grant(caller.kid, project, "write")

    # -- rosters and keyrings --------------------------------------------------------

    def get_rosters(self, ctx: Ctx) -> Response:
        team, _, caller = self._caller(ctx, pending=True, revoked=True)
        after = ctx.int_query(hubapi.QUERY_AFTER, 0)
        found = self.storage.rosters(team, after)
        if caller.pending:  # the root of trust only: no members, grants or history
            found = found[:1] if after == 0 else []
        return Json({"rosters": envelope_list(found)})

    def put_roster(self, ctx: Ctx) -> Response:
        team = ctx.param("team")
        version = ctx.number("version")
        try:
            doc = _json_body(ctx.data)
            roster = b64d(doc["roster"])
            keyrings = [b64d(k) for k in doc.get("keyrings", [])]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise Refusal(
                400, hubapi.BAD_REQUEST, 'the body must be {"roster": b64url, "keyrings": [b64url]}'
            ) from None
        if len(keyrings) > _MAX_KEYRINGS_PER_PUBLISH:
            raise Refusal(413, hubapi.TOO_LARGE, f"{len(keyrings)} keyrings in one publication")
        if self.teams.known(team):
            _, _, caller = self._caller(ctx)
            self._admin(team, caller)
        else:
            self._may_register(ctx, team)
            self._register(ctx, team, roster)
        check_quota(self.storage, team, len(ctx.data), self.config.team_quota_bytes)
        publish = self.teams.publish_roster
        accepted, stored = publish(team, roster, keyrings, self.clock(), version=version)
        return stored_answer(ctx, team, stored, version=accepted.version)

    def _may_register(self, ctx: Ctx, team: str) -> None:
        """A new team: the operator's token or allow-list (headers only)."""
        token = ctx.headers.get(hubapi.HEADER_OPERATOR_TOKEN)
        if team not in self.config.allow_teams:
            expected = self.config.operator_token
            if expected is None:
                raise Refusal(
                    403,
                    hubapi.REGISTRATION_CLOSED,
                    f"this hub does not accept team {team}; its operator must allow it "
                    "('sealmem hub serve --allow-team ID') or hand out an operator token",
                )
            if token is None:
                raise Refusal(
                    403,
                    hubapi.REGISTRATION_CLOSED,
                    "registering a team on this hub needs the operator token "
                    "(set SEALMEM_HUB_OPERATOR_TOKEN)",
                )
            if not secrets.compare_digest(token.encode(), expected.encode()):
                raise Refusal(401, hubapi.BAD_OPERATOR_TOKEN, "the operator token is wrong")

    def _register(self, ctx: Ctx, team: str, roster: bytes) -> None:
        """A new team's roster v1, in a request signed by its root key."""
        kid, sign_public = genesis_signer(team, roster)
        signed = self.auth.signed(ctx.headers)
        if signed.kid != kid:
            raise Refusal(403, hubapi.NOT_ADMIN, f"roster v1 must be published by its signer {kid}")
        self.auth.verify(signed, sign_public, ctx.method, ctx.target)
        check_body(signed, ctx.data)
        ctx.kid = kid

    def get_checkpoint(self, ctx: Ctx) -> Response:
        team, _, _ = self._caller(ctx)
        data = self.storage.checkpoint(team)
        return Json({"checkpoint": None if data is None else b64e(data)})

    def put_checkpoint(self, ctx: Ctx) -> Response:
        team, state, caller = self._caller(ctx)
        self._admin(team, caller)
        seq = ctx.number("seq")
        publish_checkpoint(self.storage, team, state, seq, ctx.data, self.clock())
        return Json({"seq": seq, "stored": True}, 201)

    def get_keyrings(self, ctx: Ctx) -> Response:
        team, state, caller = self._caller(ctx)
        project = ctx.param("project")
        if not caller.admin or is_private_slot(project):  # member keyrings: hub/private.py
            self._reader(state, caller, project, None)
        blobs = self.storage.keyrings(team, project)
        return Json({"keyrings": envelope_list([b.data for b in blobs])})

    def put_keyring(self, ctx: Ctx) -> Response:
        team, _, caller = self._caller(ctx)
        self._admin(team, caller)
        project = ctx.param("project")
        epoch = ctx.number("epoch")
        check_quota(self.storage, team, len(ctx.data), self.config.team_quota_bytes)
        stored = self.teams.put_keyring(team, project, epoch, ctx.data, self.clock())
        return stored_answer(ctx, team, stored)

    # -- snapshots -------------------------------------------------------------------

    def get_seqs(self, ctx: Ctx) -> Response:
        team, state, caller = self._caller(ctx)
        project = ctx.param("project")
        self._reader(state, caller, project, None)
        seqs = self.storage.newest_seqs(team, project)
        if caller.kid not in seqs:
            return Json({"seqs": seqs})
        lost = self.storage.lost_chunks(team, project, caller.kid, hubapi.MAX_MISSING_LISTED)
        return Json({"seqs": seqs, hubapi.FIELD_LOST: lost})

    def get_manifests(self, ctx: Ctx) -> Response:
        team, state, caller = self._caller(ctx)
        project = ctx.param("project")
        writer = ctx.param("writer") if "writer" in ctx.path_params else None
        self._reader(state, caller, project, writer)
        found = self.storage.manifests(team, project, writer)
        if writer is not None:
            limit = ctx.int_query(hubapi.QUERY_LIMIT, 0) or None
            return Json({"manifests": envelope_list(found.get(writer, [])[:limit])})
        return Json({"writers": {w: envelope_list(d) for w, d in found.items()}})

    def put_manifest(self, ctx: Ctx) -> Response:
        team, state, caller = self._caller(ctx)
        project = ctx.param("project")
        writer = ctx.param("writer")
        self._own_slot(state, caller, project, writer)
        check_quota(self.storage, team, len(ctx.data), self.config.team_quota_bytes)
        seq = ctx.number("seq")
        stored = self.teams.put_manifest(team, project, writer, seq, ctx.data, self.clock())
        return stored_answer(ctx, team, stored, seq=seq)

    def get_chunk(self, ctx: Ctx) -> Response:
        team, state, caller = self._caller(ctx)
        project = ctx.param("project")
        writer = ctx.param("writer")
        cid = ctx.param("chunk")
        self._reader(state, caller, project, writer)
        seen_at = self.clock()
        data = self.storage.chunk_read(team, project, writer, cid)
        if isinstance(data, bytes) and chunk_id(SUITE, data) != cid:  # the blob rotted
            data = BlobKey(team, project, writer, cid)
        if not isinstance(data, bytes):
            if data is not None:  # a row without its blob: dropped before the answer
                ctx.later = functools.partial(self.storage.drop_blobless, data, seen_at)
            raise Refusal(
                404, hubapi.NOT_FOUND, f"chunk {cid[:16]} of {writer}/{project} is not here"
            )
        return Response(data, media_type="application/octet-stream")

    def put_chunk(self, ctx: Ctx) -> Response:
        team, state, caller = self._caller(ctx)
        project = ctx.param("project")
        writer = ctx.param("writer")
        cid = ctx.param("chunk")
        self._own_slot(state, caller, project, writer)
        if not 0 < len(ctx.data) <= MAX_CHUNK_BYTES:
            raise Refusal(413, hubapi.TOO_LARGE, f"a chunk is 1..{MAX_CHUNK_BYTES} bytes")
        if chunk_id(SUITE, ctx.data) != cid:
            raise Refusal(
                422, hubapi.BAD_CHUNK_ID, f"the body does not hash to chunk id {cid[:16]}"
            )
        check_quota(self.storage, team, len(ctx.data), self.config.team_quota_bytes)

        def still_allowed(generation: int | None) -> None:
            # in the row's transaction: a roster committed since the checks is seen here
            now = self.teams.state_at(team, generation)
            if now is not state:
                if now.roster is not None and now.roster.revocation(caller.kid) is not None:
                    raise revoked(team, caller.kid)
                self._own_slot(now, caller, project, writer)

        put = self.storage.put_chunk
        stored = put(team, project, writer, cid, ctx.data, self.clock(), check=still_allowed)
        return Json({"stored": stored}, 201 if stored else 200)

    def collect(self, ctx: Ctx) -> Response:
        team, _, caller = self._caller(ctx)
        project = ctx.param("project")
        writer = ctx.param("writer")
        if writer != caller.kid:
            raise Refusal(403, hubapi.NOT_YOUR_SLOT, "a member collects only its own chunks")
        keep, grace_ms = _collect_body(ctx.data)
        keep |= self.teams.kept_chunks(team, project, writer)
        older = self.clock() - grace_ms
        removed = self.storage.collect(team, project, writer, keep, older)
        return Json({"removed": removed})

    # -- join requests ---------------------------------------------------------------

    def post_request(self, ctx: Ctx) -> Response:
        team = ctx.param("team")
        kid = ctx.param("kid")
        self.door.admit(team, kid, ctx.data, ctx.address)
        ctx.kid = kid
        return Json({"stored": True}, 201)

    def get_request(self, ctx: Ctx) -> Response:
        """A join request's state, for its own key (or an admin): pending, approved, revoked.

        Only a caller whose signature verifies learns anything: a key the hub holds
        neither in the roster nor in a live request gets the 401 ``unknown-key`` of every
        route (its signature cannot be checked), never a 404 that a member's key with a
        bad signature would not get."""
        kid = ctx.param("kid")
        team, state, caller = self._caller(ctx, pending=True, revoked=True)
        if caller.kid != kid and not caller.admin:
            raise Refusal(403, hubapi.NOT_ADMIN, "only the requester or an admin may read this")
        roster = state.roster
        if roster is not None and roster.member(kid) is not None:
            revoked = roster.revocation(kid) is not None
            status = hubapi.REQUEST_REVOKED if revoked else hubapi.REQUEST_APPROVED
            return Json({"status": status, "roster_version": roster.version})
        if self.storage.request(team, kid, self.door.live_after()) is None:
            raise Refusal(404, hubapi.NO_REQUEST, f"team {team} holds no join request from {kid}")
        return Json({"status": hubapi.REQUEST_PENDING})

    def get_requests(self, ctx: Ctx) -> Response:
        team, _, caller = self._caller(ctx)
        self._admin(team, caller)
        found = self.storage.requests(team, self.door.live_after())
        oldest = min((r.posted_at for r in found), default=None)
        return Json(
            {
                "requests": {r.kid: b64e(r.data) for r in found},
                "posted_at": {r.kid: r.posted_at for r in found},
                "door": self.door.report(team, len(found), oldest),
            }
        )

    def delete_request(self, ctx: Ctx) -> Response:
        team, _, caller = self._caller(ctx)
        self._admin(team, caller)
        kid = ctx.param("kid")
        return Json({"removed": self.storage.remove_request(team, kid)})

    # -- change feed (the waiting part is in the app) ---------------------------------

    def changes_caller(self, ctx: Ctx) -> tuple[str, Caller, int]:
        """Authenticate a change-feed read once; return (team, caller, since)."""
        team, _, caller = self._caller(ctx)
        return team, caller, ctx.int_query(hubapi.QUERY_SINCE, 0)

    def changes(self, team: str, caller: Caller, since: int) -> dict[str, Any]:
        """The changes after ``since`` the caller may see, and the cursor to ask from next."""
        found = self.storage.changes(team, since)
        cursor = found[-1].cursor if found else since
        roster = self.teams.state(team).roster
        visible = [
            c.to_wire()
            for c in found
            if c.project is None
            or c.writer == caller.kid
            or (roster is not None and roster.can_read(caller.kid, c.project))
        ]
        return {"cursor": cursor, "changes": visible}
