"""One damaged chunk in a shared folder costs the reader one bucket, and one writer sync.

Real members, real stores, one real folder; every sync opens the team afresh, as every
CLI ``sync`` is a new process (the writer has verified nothing in it yet).  The writer's
own sample finds nothing (``CHECKED_CHUNKS`` is 0, the unluckiest draw): what repairs the
chunk is the reader's hole report.  The reader merges every chunk that verifies, keeps
the hole with the head, tries it again at each pull, and ends with every memory after
one sync of the writer."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from sealmem.client.sync import folder_chunks
from sealmem.client.sync.engine import SyncSummary
from sealmem.client.sync.session import Team
from sealmem.crypto import SUITE
from sealmem.protocol import reasons
from sealmem.protocol.manifest import MAX_CHUNK_BYTES, peek
from sealmem.protocol.snapshot import bucket_of, chunk_id
from tests.sync.conftest import PROJECT, Node, World

pytestmark = pytest.mark.slow

NOTES = [f"carol's note number {i} about the deploy pipeline" for i in range(120)]


def _fresh(node: Node) -> SyncSummary:
    """A sync in a new process: the team and its transport opened again."""
    node.team = Team.open(node.home, node.store, node.key)
    return node.sync()


def _slot(world: World, node: Node, *more: str) -> Path:
    team = world.nodes["admin"].t.config.team
    return world.folder / "sealmem" / team / "snapshots" / PROJECT / node.key.kid / Path(*more)


def _holes(world: World, writer: Node) -> Path:
    team = world.nodes["admin"].t.config.team
    return world.folder / "sealmem" / team / "holes" / PROJECT / writer.key.kid


def _contents(node: Node) -> set[str]:
    return {m.content for m in node.memories().values()}


@pytest.mark.parametrize("damage", ["overwritten", "oversized", "deleted"])
def test_one_damaged_chunk_costs_one_bucket_and_one_writer_sync(
    world: World, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    monkeypatch.setattr(folder_chunks, "CHECKED_CHUNKS", 0)  # the sample draws nothing
    alice, carol = world.nodes["alice"], world.nodes["carol"]
    ids = {carol.remember(note).id: note for note in NOTES}
    _fresh(carol)
    chunks = sorted(_slot(world, carol, "chunks").iterdir())
    assert len(chunks) >= 24
    victim = chunks[len(chunks) // 2]
    if damage == "overwritten":
        victim.write_bytes(b"garbage from a hostile share user")
    elif damage == "oversized":  # larger than any chunk: it cannot be the listed one
        victim.write_bytes(b"\0" * (MAX_CHUNK_BYTES + 1))
    else:
        victim.unlink()
    [manifest] = sorted(_slot(world, carol).glob("manifest-*.json"))
    m = peek(manifest.read_bytes())
    [bucket] = [c.bucket for c in m.chunks if c.id == victim.name]
    lost = {n for i, n in ids.items() if bucket_of(SUITE, i, m.buckets) == bucket}

    first = _fresh(alice)

    want = reasons.MISSING_CHUNK if damage == "deleted" else reasons.BAD_CHUNK_ID
    assert [r.reason for r in first.refused] == [want]
    assert _contents(alice) & set(NOTES) == set(NOTES) - lost  # every other bucket merged
    assert lost
    assert [p.name for p in _holes(world, carol).iterdir()] == [f"{alice.key.kid}.json"]
    assert _fresh(alice).refused[0].reason == want  # tried again; still a hole

    started = time.monotonic()
    healing = _fresh(carol)  # nothing new, and its sample finds nothing: the report
    healed_s = time.monotonic() - started

    assert healing.pushed_chunks == 1  # that bucket alone is encrypted again
    started = time.monotonic()
    after = _fresh(alice)
    caught_up_s = time.monotonic() - started
    assert after.refused == []
    assert set(NOTES) <= _contents(alice)
    assert list(_holes(world, carol).iterdir()) == []  # the report is withdrawn
    assert _fresh(carol).pushed_chunks == 0
    newest = peek(sorted(_slot(world, carol).glob("manifest-*.json"))[-1].read_bytes())
    for ref in newest.chunks:  # the damaged file waits for the collection's grace period
        assert chunk_id(SUITE, _slot(world, carol, "chunks", ref.id).read_bytes()) == ref.id
    print(f"healing sync {healed_s:.2f} s, reader catch-up {caught_up_s:.2f} s")


def test_a_forged_hole_report_costs_the_writer_a_read_and_nothing_else(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(folder_chunks, "CHECKED_CHUNKS", 0)
    alice, carol = world.nodes["alice"], world.nodes["carol"]
    for note in NOTES[:20]:
        carol.remember(note)
    _fresh(carol)
    listed = sorted(p.name for p in _slot(world, carol, "chunks").iterdir())
    holes = _holes(world, carol)
    holes.mkdir(parents=True)
    (holes / f"{alice.key.kid}.json").write_text(json.dumps([*listed, "../../x", "f" * 64]))
    (holes / "not-a-member.json").write_text("{not json")

    assert _fresh(carol).pushed_chunks == 0  # every reported chunk hashed intact
    assert _fresh(alice).refused == []
    assert set(NOTES[:20]) <= _contents(alice)


def test_a_hole_report_nested_too_deeply_is_ignored_not_the_end_of_the_sync(
    world: World,
) -> None:
    """The stdlib decoder raises RecursionError (no ValueError) on a thousand ``[``: a
    report planted so stopped every sync of the writer it named."""
    alice, carol = world.nodes["alice"], world.nodes["carol"]
    carol.remember(NOTES[0])
    _fresh(carol)
    holes = _holes(world, carol)
    holes.mkdir(parents=True)
    (holes / f"{alice.key.kid}.json").write_bytes(b"[" * 5000)
    carol.remember(NOTES[1])
    assert _fresh(carol).pushed_versions == 1
    assert _fresh(alice).refused == []
    assert set(NOTES[:2]) <= _contents(alice)
