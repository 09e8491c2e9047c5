"""A hostile transport double over a real one (folder or hub): it can only withhold or
replay what the real transport answers, never forge a signature.

:func:`withhold_rosters` hides every roster above a version (and keeps serving an old
checkpoint, if given); :func:`replay` shows one writer's old manifest, with its chunks,
as that writer's newest.  Both patch the answers of one member's transport instance,
so its teammates keep seeing the honest transport.
"""

from __future__ import annotations

from collections.abc import Mapping

from sealmem.client.sync.transport import Transport
from sealmem.protocol import canonical
from sealmem.protocol.manifest import peek

__all__ = ["capture", "replay", "withhold_rosters"]


def _version(roster: bytes) -> int:
    return int(canonical.decode(roster)["body"]["version"])


def withhold_rosters(
    transport: Transport, above: int, *, checkpoint: bytes | str | None = "honest"
) -> None:
    """Serve no roster above version ``above``; ``checkpoint``: the checkpoint envelope to
    serve instead of the real one (``None``: none at all), or ``"honest"``."""
    rosters = transport.rosters

    def withheld(after_version: int) -> list[bytes]:
        return [r for r in rosters(after_version) if _version(r) <= above]

    transport.rosters = withheld  # type: ignore[method-assign]
    if checkpoint != "honest":
        transport.checkpoint = lambda: checkpoint  # type: ignore[method-assign,assignment,return-value]


def capture(transport: Transport, project: str, writer: str) -> tuple[bytes, dict[str, bytes]]:
    """The writer's newest manifest and its chunks, as the transport holds them now."""
    data = transport.newest_manifest(project, writer)
    assert data is not None
    chunks = {}
    for ref in peek(data).chunks:
        chunk = transport.chunk(project, writer, ref.id)
        assert chunk is not None
        chunks[ref.id] = chunk
    return data, chunks


def replay(
    transport: Transport, project: str, writer: str, manifest: bytes, chunks: Mapping[str, bytes]
) -> None:
    """Serve ``manifest`` (and ``chunks``) as ``writer``'s newest and only manifest."""
    seq = peek(manifest).seq
    newest_seqs, manifests, chunk = transport.newest_seqs, transport.manifests, transport.chunk
    writer_manifests, newest_manifest = transport.writer_manifests, transport.newest_manifest

    def seqs(p: str) -> dict[str, int] | None:
        found = newest_seqs(p)
        return found if found is None or p != project else {**found, writer: seq}

    def listed(p: str) -> dict[str, list[bytes]]:
        found = manifests(p)
        return found if p != project else {**found, writer: [manifest]}

    def of_writer(p: str, w: str) -> list[bytes]:
        return [manifest] if (p, w) == (project, writer) else writer_manifests(p, w)

    def newest(p: str, w: str) -> bytes | None:
        return manifest if (p, w) == (project, writer) else newest_manifest(p, w)

    def one_chunk(p: str, w: str, chunk_id: str) -> bytes | None:
        if (p, w) == (project, writer) and chunk_id in chunks:
            return chunks[chunk_id]
        return chunk(p, w, chunk_id)

    transport.newest_seqs = seqs  # type: ignore[method-assign]
    transport.manifests = listed  # type: ignore[method-assign]
    transport.writer_manifests = of_writer  # type: ignore[method-assign]
    transport.newest_manifest = newest  # type: ignore[method-assign]
    transport.chunk = one_chunk  # type: ignore[method-assign]
