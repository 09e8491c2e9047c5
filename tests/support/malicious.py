"""A malicious transport: hostile variants of an honest view, each with the reason to expect.

Given the honest :class:`~tests.support.honest_world.World` (its ``current`` and
``earlier`` views, paths -> bytes in the folder layout of DESIGN §6, and the
keys of its members), :func:`hostile_variants` returns what a hostile folder
or hub could serve instead: stale replays, forks, reordered and swapped
objects, truncations, garbage, objects of another team or project, and
objects re-signed by an outsider, by a member without the right grant, or in
the wrong context.  A fork or a cross-team copy needs the real writer's key
(a stolen key or a writer that equivocates); the rest needs no key at all.

Each :class:`Variant` is a complete hostile view plus the one path that
differs (``target``), the view the reader trusted beforehand (``reader``) and
the :class:`~sealmem.protocol.errors.Rejected` reason a verifier must give.
Sync tests serve ``variant.objects`` from a real folder or hub and check that
the sync refuses ``variant.target`` with ``variant.reason`` and stores nothing.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sealmem.crypto import ContentKey, MemberKey
from sealmem.protocol import canonical, reasons
from sealmem.protocol.encoding import b64d, b64e
from sealmem.protocol.envelope import seal
from sealmem.protocol.keyring import Keyring, build_keyring
from sealmem.protocol.manifest import Manifest
from sealmem.protocol.roster import Roster
from sealmem.protocol.verify import MAX_MANIFEST_BYTES

from .honest_world import (
    World,
    keyring_path,
    manifest_path,
    roster_path,
)

__all__ = ["Variant", "flip_signature", "garbage", "hostile_variants"]


@dataclass(frozen=True, slots=True)
class Variant:
    """One hostile view: serve ``objects``; ``target`` must be refused with ``reason``."""

    name: str
    reason: str
    target: str
    objects: Mapping[str, bytes]
    reader: str = "current"  # the honest view the reader had accepted: "current" or "earlier"

    def __str__(self) -> str:
        return self.name


def garbage(seed: str, size: int = 300) -> bytes:
    """Deterministic random bytes (not JSON, not a chunk)."""
    return random.Random(seed).randbytes(size)


def flip_signature(envelope: bytes) -> bytes:
    """The same envelope, canonical still, with one bit of its signature flipped."""
    obj = canonical.decode(envelope)
    sig = bytearray(b64d(obj["sig"]))
    sig[len(sig) // 2] ^= 0x01
    return canonical.encode({**obj, "sig": b64e(bytes(sig))})


def _body(envelope: bytes) -> dict[str, Any]:
    body = canonical.decode(envelope)["body"]
    assert isinstance(body, dict)
    return body


def _forge(envelope: bytes, signer: MemberKey, context: str, **changes: Any) -> bytes:
    """Re-sign the body of ``envelope`` with ``changes`` applied."""
    return seal({**_body(envelope), **changes}, context, signer)


class _Builder:
    def __init__(self, world: World) -> None:
        self.world = world
        self.out: list[Variant] = []

    def serve(
        self,
        name: str,
        reason: str,
        target: str,
        data: bytes | None,
        *,
        reader: str = "current",
        extra: Callable[[dict[str, bytes]], None] | None = None,
    ) -> None:
        """Record a variant: the reader's-era view with ``target`` replaced (or deleted)."""
        view = dict(self.world.current)
        if data is None:
            del view[target]
        else:
            view[target] = data
        if extra is not None:
            extra(view)
        self.out.append(Variant(name, reason, target, view, reader))


def hostile_variants(world: World) -> list[Variant]:
    """Every hostile variant of ``world``'s transport; see the module docstring."""
    b = _Builder(world)
    keys = world.keys
    _manifests(b, world, keys)
    _rosters(b, world, keys)
    _keyrings(b, world, keys)
    _chunks(b, world)
    return b.out


def _manifests(b: _Builder, world: World, keys: Mapping[str, MemberKey]) -> None:
    alice, bob, eve = (world.kid(n) for n in ("alice", "bob", "eve"))
    path = manifest_path("app", alice)
    honest = world.current[path]
    m = Manifest.from_body(_body(honest))
    next_seq = {"seq": m.seq + 1, "prev": m.hash(world.suite)}
    b.serve("stale-manifest", reasons.ROLLBACK, path, world.earlier[path])
    b.serve("forked-manifest", reasons.FORK, path,
            _forge(honest, keys["alice"], "manifest", created_at=m.created_at + 1))  # fmt: skip
    bob_path = manifest_path("app", bob)

    def swap_back(view: dict[str, bytes]) -> None:
        view[bob_path] = honest

    b.serve("swapped-manifests", reasons.SIGNER_MISMATCH, path, world.current[bob_path],
            extra=swap_back)  # fmt: skip
    b.serve("truncated-manifest", reasons.NOT_CANONICAL, path, honest[: len(honest) // 2])
    b.serve("garbage-manifest", reasons.NOT_CANONICAL, path, garbage("manifest"))
    b.serve("oversized-manifest", reasons.TOO_LARGE, path, b" " * (MAX_MANIFEST_BYTES + 1))
    b.serve("cross-team-manifest", reasons.CROSS_TEAM, path,
            _forge(honest, keys["alice"], "manifest", team="evil-team"))  # fmt: skip
    b.serve("future-format-manifest", reasons.UNKNOWN_FORMAT, path,
            _forge(honest, keys["alice"], "manifest", format="sealmem/manifest/v9"))  # fmt: skip
    b.serve("cross-project-manifest", reasons.CROSS_PROJECT, path,
            world.current[manifest_path("lib", alice)])  # fmt: skip
    out = keys["outsider"]
    b.serve("outsider-manifest", reasons.UNKNOWN_WRITER, manifest_path("app", out.kid),
            _forge(honest, out, "manifest", writer=out.kid, prev=None, seq=1))  # fmt: skip
    carol = keys["carol"]
    b.serve("no-write-grant-manifest", reasons.NO_WRITE_GRANT, manifest_path("app", carol.kid),
            _forge(honest, carol, "manifest", writer=carol.kid, prev=None, seq=1))  # fmt: skip
    b.serve("impostor-signer-manifest", reasons.SIGNER_MISMATCH, path,
            _forge(honest, out, "manifest", **next_seq))  # fmt: skip
    stolen_sig = canonical.decode(_forge(honest, out, "manifest", **next_seq))["sig"]
    claimed = canonical.encode(
        {"body": {**_body(honest), **next_seq}, "signer": alice, "sig": stolen_sig}
    )
    b.serve("outsider-signature-manifest", reasons.BAD_SIGNATURE, path, claimed)
    b.serve("flipped-signature-manifest", reasons.BAD_SIGNATURE, path, flip_signature(honest))
    b.serve("wrong-context-manifest", reasons.WRONG_CONTEXT, path,
            _forge(honest, keys["alice"], "roster", **next_seq))  # fmt: skip
    eve_path = manifest_path("app", eve)
    eve_m = Manifest.from_body(_body(world.current[eve_path]))
    b.serve("revoked-writer-manifest", reasons.REVOKED, eve_path,
            _forge(world.current[eve_path], keys["eve"], "manifest", seq=eve_m.seq + 1,
                   prev=eve_m.hash(world.suite)))  # fmt: skip
    b.serve("future-roster-manifest", reasons.ROSTER_UNKNOWN, path,
            _forge(honest, keys["alice"], "manifest", roster_version=m.roster_version + 1,
                   **next_seq))  # fmt: skip
    b.serve("unknown-epoch-manifest", reasons.EPOCH_UNKNOWN, path,
            _forge(honest, keys["alice"], "manifest", epoch=m.epoch + 5, **next_seq))  # fmt: skip
    bob_head = {"writer": bob, "project": "app", "seq": 1, "hash": "0" * 64}
    b.serve("equivocating-heads-manifest", reasons.EQUIVOCATION, path,
            _forge(honest, keys["alice"], "manifest", heads=[bob_head], **next_seq))  # fmt: skip


def _rosters(b: _Builder, world: World, keys: Mapping[str, MemberKey]) -> None:
    # A reader fetches only roster versions above the one it trusts, so every
    # hostile roster is served as the next version, v4 (except the reordering,
    # which a reader still at v1 meets at v2).
    v3 = world.current[roster_path(3)]
    roster = Roster.from_body(_body(v3), world.suite)
    v4 = roster.successor(world.suite, created_at=roster.created_at + 1)
    honest = v4.sign(keys["root"])
    path = roster_path(4)
    b.serve("stale-roster", reasons.ROLLBACK, path, world.current[roster_path(2)])
    b.serve("forked-roster", reasons.FORK, path,
            _forge(v3, keys["root"], "roster", created_at=roster.created_at + 1))  # fmt: skip
    b.serve("reordered-roster", reasons.ROSTER_NOT_EXTENDING, roster_path(2), v3,
            reader="earlier")  # fmt: skip
    skipping = v4.successor(world.suite, created_at=roster.created_at + 2).sign(keys["root"])
    b.serve("gap-roster", reasons.ROSTER_NOT_EXTENDING, path, skipping)
    b.serve("truncated-roster", reasons.NOT_CANONICAL, path, honest[:-1])
    b.serve("garbage-roster", reasons.NOT_CANONICAL, path, garbage("roster"))
    b.serve("cross-team-roster", reasons.CROSS_TEAM, path,
            _forge(honest, keys["root"], "roster", team="evil-team"))  # fmt: skip
    b.serve("member-signed-roster", reasons.NOT_ADMIN, path, v4.sign(keys["alice"]))
    b.serve("outsider-signed-roster", reasons.NOT_ADMIN, path, v4.sign(keys["outsider"]))
    b.serve("flipped-signature-roster", reasons.BAD_SIGNATURE, path, flip_signature(honest))
    b.serve("wrong-context-roster", reasons.WRONG_CONTEXT, path,
            seal(v4.to_body(), "keyring", keys["root"]))  # fmt: skip
    unchained = v4.successor(world.suite, created_at=0)  # v5 whose prev is v4, relabelled v4
    b.serve("unchained-roster", reasons.ROSTER_NOT_EXTENDING, path,
            _forge(unchained.sign(keys["root"]), keys["root"], "roster", version=4))  # fmt: skip


def _keyrings(b: _Builder, world: World, keys: Mapping[str, MemberKey]) -> None:
    path = keyring_path("app", 3)
    honest = world.current[path]
    roster = Roster.from_body(_body(world.current[roster_path(3)]), world.suite)
    other_key = ContentKey(b"\x99" * 32)
    rewrapped = build_keyring(other_key, roster, "app")
    b.serve("forked-keyring", reasons.FORK, path, rewrapped.sign(keys["root"]))
    b.serve("member-signed-keyring", reasons.NOT_ADMIN, path, rewrapped.sign(keys["alice"]))
    b.serve("cross-team-keyring", reasons.CROSS_TEAM, path,
            _forge(honest, keys["root"], "keyring", team="evil-team"))  # fmt: skip
    ghost = Keyring(roster.team, "ghost", 1, roster.version, {}, other_key.commitment())
    b.serve("unknown-project-keyring", reasons.UNKNOWN_PROJECT, keyring_path("ghost", 1),
            ghost.sign(keys["root"]))  # fmt: skip
    out = keys["outsider"]
    leaked = Keyring(
        roster.team, "app", 3, roster.version,
        {**rewrapped.wraps, out.kid: other_key.wrap_to(out.box_public)},
        other_key.commitment(),
    )  # fmt: skip
    b.serve("outsider-wrap-keyring", reasons.NO_READ_GRANT, path, leaked.sign(keys["root"]))
    b.serve("garbage-keyring", reasons.NOT_CANONICAL, path, garbage("keyring"))
    b.serve("truncated-keyring", reasons.NOT_CANONICAL, path, honest[:40])


def _chunks(b: _Builder, world: World) -> None:
    alice, bob = world.kid("alice"), world.kid("bob")
    mine = sorted(p for p in world.current if p.startswith(f"snapshots/app/{alice}/chunks/"))
    theirs = sorted(p for p in world.current if p.startswith(f"snapshots/app/{bob}/chunks/"))
    first, second = mine[0], mine[1]
    data = world.current[first]
    b.serve("truncated-chunk", reasons.BAD_CHUNK_ID, first, data[:-16])
    b.serve("garbage-chunk", reasons.BAD_CHUNK_ID, first, garbage("chunk", len(data)))
    b.serve("missing-chunk", reasons.MISSING_CHUNK, first, None)

    def swap_back(view: dict[str, bytes]) -> None:
        view[second] = data

    b.serve("swapped-chunks", reasons.BAD_CHUNK_ID, first, world.current[second], extra=swap_back)
    b.serve("foreign-chunk", reasons.BAD_CHUNK_ID, first, world.current[theirs[0]])
