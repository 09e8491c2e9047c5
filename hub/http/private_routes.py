"""The handlers of a member's private space (``/v1/teams/{team}/private/{member}/...``,
:mod:`sealmem.hub.private`): each serves only the member's unrevoked devices, and a
device writes only its own chains."""

from __future__ import annotations

from starlette.responses import Response

from ...crypto import SUITE
from ...protocol import hubapi
from ...protocol.manifest import MAX_CHUNK_BYTES
from ...protocol.snapshot import chunk_id
from ...protocol.state import TrustedState
from ..auth import Caller
from ..errors import Refusal
from ..limits import check_quota
from ..private import PrivateSpace, may_enter, own_chain
from ..slots import chain_slot
from .messages import Ctx, Json
from .routes import Handlers, envelope_list, stored_answer

__all__ = ["PrivateHandlers"]


class PrivateHandlers:
    def __init__(self, handlers: Handlers) -> None:
        self.h = handlers
        self.space = PrivateSpace(
            handlers.storage, handlers.teams.state_at, manifests_kept=handlers.teams.kept
        )

    def _enter(self, ctx: Ctx) -> tuple[str, TrustedState, Caller, str]:
        team, state, caller = self.h._caller(ctx)
        member = ctx.param("member")
        may_enter(state, caller, member)
        return team, state, caller, member

    def _quota(self, ctx: Ctx, team: str) -> None:
        check_quota(self.h.storage, team, len(ctx.data), self.h.config.team_quota_bytes)

    def get_keyrings(self, ctx: Ctx) -> Response:
        team, _, _, member = self._enter(ctx)
        return Json({"keyrings": envelope_list(self.space.keyrings(team, member))})

    def put_keyring(self, ctx: Ctx) -> Response:
        team, _, _, member = self._enter(ctx)
        self._quota(ctx, team)
        epoch = ctx.number("epoch")
        stored = self.space.put_keyring(team, member, epoch, ctx.data, self.h.clock())
        return stored_answer(ctx, team, stored)

    def get_trust(self, ctx: Ctx) -> Response:
        team, _, _, member = self._enter(ctx)
        found = self.space.trust(team, member, ctx.param("writer"))
        return Json({"trust": None if found is None else envelope_list([found])[0]})

    def put_trust(self, ctx: Ctx) -> Response:
        team, _, caller, member = self._enter(ctx)
        writer = ctx.param("writer")
        own_chain(caller, writer)
        self._quota(ctx, team)
        return stored_answer(
            ctx, team, self.space.put_trust(team, member, writer, ctx.data, self.h.clock())
        )

    def get_chains(self, ctx: Ctx) -> Response:
        team, _, _, member = self._enter(ctx)
        found = self.space.chains(team, member, ctx.param("writer"))
        return Json({"manifests": envelope_list(found)})

    def get_manifests(self, ctx: Ctx) -> Response:
        team, _, _, member = self._enter(ctx)
        found = self.space.manifests(team, member, ctx.param("writer"), ctx.param("project"))
        limit = ctx.int_query(hubapi.QUERY_LIMIT, 0) or None
        return Json({"manifests": envelope_list(found[:limit])})

    def put_manifest(self, ctx: Ctx) -> Response:
        team, _, caller, member = self._enter(ctx)
        writer, project, seq = ctx.param("writer"), ctx.param("project"), ctx.number("seq")
        own_chain(caller, writer)
        self._quota(ctx, team)
        put = self.space.put_manifest
        stored = put(team, member, writer, project, seq, ctx.data, self.h.clock())
        return stored_answer(ctx, team, stored, seq=seq)

    def get_chunk(self, ctx: Ctx) -> Response:
        team, _, _, member = self._enter(ctx)
        writer, cid = ctx.param("writer"), ctx.param("chunk")
        data = self.h.storage.chunk_read(
            team, chain_slot(member, ctx.param("project")), writer, cid
        )
        if not isinstance(data, bytes) or chunk_id(SUITE, data) != cid:
            raise Refusal(404, hubapi.NOT_FOUND, f"chunk {cid[:16]} of {writer} is not here")
        return Response(data, media_type="application/octet-stream")

    def put_chunk(self, ctx: Ctx) -> Response:
        team, _, caller, member = self._enter(ctx)
        writer, cid = ctx.param("writer"), ctx.param("chunk")
        own_chain(caller, writer)
        if not 0 < len(ctx.data) <= MAX_CHUNK_BYTES:
            raise Refusal(413, hubapi.TOO_LARGE, f"a chunk is 1..{MAX_CHUNK_BYTES} bytes")
        if chunk_id(SUITE, ctx.data) != cid:
            raise Refusal(422, hubapi.BAD_CHUNK_ID, f"the body does not hash to {cid[:16]}")
        self._quota(ctx, team)

        def still_allowed(generation: int | None) -> None:
            may_enter(self.h.teams.state_at(team, generation), caller, member)

        slot = chain_slot(member, ctx.param("project"))
        put = self.h.storage.put_chunk
        stored = put(team, slot, writer, cid, ctx.data, self.h.clock(), check=still_allowed)
        return Json({"stored": stored}, 201 if stored else 200)
