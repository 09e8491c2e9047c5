"""A malicious hub: the hub's /v1 read API served over HTTP from a folder an attacker controls.

It checks nothing and serves whatever the folder holds (tampered chunks, stale,
forked, cross-team, cross-project or garbage manifests), so a client syncing
through it with :class:`HubTransport` must refuse every bad object by itself.
"""

from __future__ import annotations

from collections.abc import Collection

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sealmem.client.sync.folder import FolderTransport
from sealmem.protocol.encoding import b64e


def evil_app(folder: FolderTransport, *, failing: Collection[str] = ()) -> Starlette:
    """``failing``: chunk ids answered with a 500, as a broken hub or proxy would."""

    def blobs(items: list[bytes]) -> list[str]:
        return [b64e(i) for i in items]

    async def rosters(request: Request) -> Response:
        after = int(request.query_params.get("after", "0"))
        return JSONResponse({"rosters": blobs(folder.rosters(after))})

    async def keyrings(request: Request) -> Response:
        return JSONResponse({"keyrings": blobs(folder.keyrings(request.path_params["project"]))})

    async def seqs(request: Request) -> Response:
        return JSONResponse({"seqs": folder.newest_seqs(request.path_params["project"])})

    async def manifests(request: Request) -> Response:
        project = request.path_params["project"]
        if "writer" not in request.path_params:
            found = folder.manifests(project)
            return JSONResponse({"writers": {w: blobs(d) for w, d in found.items()}})
        kept = folder.writer_manifests(project, request.path_params["writer"])
        limit = int(request.query_params.get("limit", "0")) or None
        return JSONResponse({"manifests": blobs(kept[:limit])})

    async def chunk(request: Request) -> Response:
        p = request.path_params
        if p["chunk"] in failing:
            return JSONResponse({"error": "internal", "detail": "the hub failed"}, 500)
        data = folder.chunk(p["project"], p["writer"], p["chunk"])
        if data is None:
            return JSONResponse({"error": "not-found", "detail": "no such chunk here"}, 404)
        return Response(data, media_type="application/octet-stream")

    async def nothing(request: Request) -> Response:
        return JSONResponse({"requests": {}})

    t, p = "/v1/teams/{team}", "/v1/teams/{team}/projects/{project}"
    return Starlette(
        routes=[
            Route(t + "/rosters", rosters),
            Route(t + "/keyrings/{project}", keyrings),
            Route(t + "/requests", nothing),
            Route(p + "/seqs", seqs),
            Route(p + "/manifests", manifests),
            Route(p + "/manifests/{writer}", manifests),
            Route(p + "/chunks/{writer}/{chunk}", chunk),
        ]
    )
