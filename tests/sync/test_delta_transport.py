"""Delta manifests over a real folder: one change publishes a manifest that lists only the
changed chunks against a full base; readers rebuild it from the base they keep or from the
folder, which keeps the base while deltas name it; a folder that lost or swapped the base
gets a named refusal that keeps nothing, until the writer publishes in full again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sealmem.client.team import admin
from sealmem.protocol import canonical, reasons
from sealmem.protocol.manifest import DELTA_FORMAT, MANIFEST_FORMAT

from .conftest import PROJECT, Node, World
from .test_transport_seam import second_device

pytestmark = pytest.mark.slow


def _files(world: World, writer: Node) -> list[Path]:
    return sorted(world.folder.glob(f"sealmem/*/snapshots/{PROJECT}/{writer.key.kid}/manifest-*"))


def _body(path: Path) -> dict[str, object]:
    body = canonical.decode(path.read_bytes())["body"]
    assert isinstance(body, dict)
    return body


def _head(node: Node, writer: Node) -> object:
    return node.store.connection.execute(
        "SELECT seq, hash FROM chain_heads WHERE writer = ? AND project = ?",
        (writer.key.kid, PROJECT),
    ).fetchone()


def _with_base(world: World, alice: Node, memories: int = 300) -> Path:
    for i in range(memories):
        alice.remember(f"decision number {i} about the build")
    alice.sync()
    (base,) = _files(world, alice)
    assert _body(base)["format"] == MANIFEST_FORMAT
    return base


def test_one_change_publishes_a_delta_that_readers_rebuild(world: World) -> None:
    alice, bob, carol = world.nodes["alice"], world.nodes["bob"], world.nodes["carol"]
    base = _with_base(world, alice)
    bob.sync()
    assert bob.written_by(alice) == 300
    for i in range(5):  # more deltas than the folder keeps manifests (MANIFESTS_KEPT)
        alice.remember(f"change {i}")
        alice.sync()
        bob.sync()
        assert bob.written_by(alice) == 301 + i
    newest = _files(world, alice)[-1]
    body = _body(newest)
    assert body["format"] == DELTA_FORMAT
    assert body["base"] == {"seq": _body(base)["seq"], "hash": body["base"]["hash"]}  # type: ignore[index]
    assert len(body["changed"]) <= 5  # type: ignore[arg-type]
    assert "chunks" not in body
    assert newest.stat().st_size * 3 < base.stat().st_size
    # the base outlives the manifests the folder prunes: a reader that never saw it
    assert base.exists()
    assert len(_files(world, alice)) == 4  # the 3 newest and the base
    summary = carol.sync()
    assert not summary.refused
    assert carol.written_by(alice) == 305
    assert _head(carol, alice) == _head(bob, alice)


def test_a_lost_or_swapped_base_is_refused_by_name_and_keeps_nothing(world: World) -> None:
    alice, bob, carol = world.nodes["alice"], world.nodes["bob"], world.nodes["carol"]
    base = _with_base(world, alice)
    alice.remember("one change")
    alice.sync()
    assert _body(_files(world, alice)[-1])["format"] == DELTA_FORMAT
    saved = base.read_bytes()
    base.unlink()  # the folder lost the base

    summary = bob.sync()
    assert [(r.reason, r.object) for r in summary.refused] == [
        (reasons.MISSING_BASE, f"manifest {alice.key.kid[:8]}/{PROJECT}")
    ]
    assert bob.written_by(alice) == 0
    assert _head(bob, alice) is None

    bob.remember("bob's own")
    bob.sync()
    (bobs,) = _files(world, bob)
    shutil.copyfile(bobs, base)  # another writer's manifest under the base's name
    summary = carol.sync()
    assert [r.reason for r in summary.refused] == [reasons.MISSING_BASE]
    assert carol.written_by(alice) == 0
    assert _head(carol, alice) is None

    # the writer notices its base is not in the folder as published, and publishes in full
    alice.sync()
    newest = _files(world, alice)[-1]
    assert _body(newest)["format"] == MANIFEST_FORMAT
    assert base.read_bytes() != saved
    for reader in (bob, carol):
        assert not reader.sync().refused
        assert reader.written_by(alice) == 301


def test_a_forged_base_or_root_is_refused_and_keeps_nothing(world: World) -> None:
    alice, bob, carol = world.nodes["alice"], world.nodes["bob"], world.nodes["carol"]
    base = _with_base(world, alice)
    alice.remember("one change")
    alice.sync()
    delta = _files(world, alice)[-1]
    body = _body(delta)
    assert body["format"] == DELTA_FORMAT
    # the folder rewrites the base's first chunk ref (its signature no longer matters:
    # the base is found by the hash the delta signed, and this one no longer has it)
    envelope = canonical.decode(base.read_bytes())
    chunks = envelope["body"]["chunks"]
    chunks[0]["id"] = chunks[1]["id"]
    base.write_bytes(canonical.encode(envelope))
    summary = bob.sync()
    assert [r.reason for r in summary.refused] == [reasons.MISSING_BASE]
    assert bob.written_by(alice) == 0
    assert _head(bob, alice) is None
    # the folder forges the delta's chunk_root: the delta's signature fails
    signed = canonical.decode(delta.read_bytes())
    signed["body"]["chunk_root"] = "0" * 64
    delta.write_bytes(canonical.encode(signed))
    summary = carol.sync()
    assert reasons.BAD_SIGNATURE in [r.reason for r in summary.refused]
    assert carol.written_by(alice) == 0
    assert _head(carol, alice) is None


def test_a_store_restored_from_before_the_folder_pruned_its_base_syncs_again(
    world: World,
) -> None:
    """A store restored from an old backup (or a second device left behind) whose last
    manifest is a delta against a base the folder has since pruned: the newer chain in
    the folder is adopted; the stale delta's base is not needed and the sync goes on."""
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    first = _with_base(world, alice)
    alice.remember("one change")
    alice.sync()
    assert _body(_files(world, alice)[-1])["format"] == DELTA_FORMAT
    backup = second_device(world, alice, "alice-restored")  # its last manifest: the delta
    for i in range(120):  # changes most buckets: a full manifest, the next deltas' base
        alice.remember(f"a later batch, item {i}")
    alice.sync()
    assert _body(_files(world, alice)[-1])["format"] == MANIFEST_FORMAT
    for i in range(2):
        alice.remember(f"later change {i}")
        alice.sync()
    assert _body(_files(world, alice)[-1])["format"] == DELTA_FORMAT
    assert not first.exists()  # pruned: no delta names it any more

    summary = backup.sync()  # the restored store reads its newer chain back
    assert not summary.refused
    (seq,) = backup.store.connection.execute(
        "SELECT seq FROM own_chain WHERE project = ?", (PROJECT,)
    ).fetchone()
    assert seq > 5  # the chain continued after the folder's seq 5, not beside it
    assert not bob.sync().refused


def test_a_revoked_writers_pinned_delta_keeps_its_base_after_newer_manifests(
    world: World,
) -> None:
    """The admin pins the delta it last accepted; the writer had meanwhile published a
    full manifest and a delta against it.  The folder keeps the base of every manifest
    it keeps, so a reader that never read the writer still reads the pinned snapshot."""
    admin_node, alice, carol = world.nodes["admin"], world.nodes["alice"], world.nodes["carol"]
    first = _with_base(world, alice)
    alice.remember("the last change the admin saw")
    alice.sync()
    pinned = _files(world, alice)[-1]
    assert _body(pinned)["format"] == DELTA_FORMAT
    admin_node.sync()  # the admin accepts alice's delta: the head it pins
    for i in range(120):  # a full manifest, then a delta against it
        alice.remember(f"written after the admin looked, item {i}")
    alice.sync()
    alice.remember("and one more")
    alice.sync()
    assert _body(_files(world, alice)[-1])["format"] == DELTA_FORMAT
    assert pinned.exists()
    assert first.exists()  # the pinned delta's base, though the newest names another
    admin.revoke(admin_node.t, "alice", keep_data=True, now=admin_node.clock())

    summary = carol.sync()
    assert not [r for r in summary.refused if r.reason == reasons.MISSING_BASE], summary.refused
    assert carol.written_by(alice) == 301  # the pinned snapshot: up to the admin's head
