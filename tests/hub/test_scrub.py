"""A chunk blob damaged on the hub's disk heals: ``sealmem hub scrub`` drops it (or
the hub finds it when a reader reads it), which marks the writer's slot; the writer
publishes that bucket again at its next sync, and readers catch up.  A real damaged
file in the blob directory, real members, the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from sealmem.crypto import SUITE
from sealmem.protocol import reasons
from sealmem.protocol.snapshot import chunk_id
from tests.support.cli import Run, in_process

from .conftest import PROJECT, TEAM, Node, hub_config
from .restartable import Hub, make_hub_fixture  # noqa: F401 - the make_hub fixture

pytestmark = pytest.mark.slow

NOTES = [f"alice's note number {i} about the release train" for i in range(6)]


def _contents(node: Node) -> set[str]:
    return {m.content for m in node.store.recent(limit=1000, all_projects=True)}


def _slot(data: Path, node: Node) -> Path:
    return data / "blobs" / TEAM / PROJECT / node.key.kid


def test_a_scrubbed_chunk_is_uploaded_again_by_its_writer(
    tmp_path: Path,
    make_hub: type[Hub],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = tmp_path / "hub"
    hub = make_hub(hub_config(data))
    world = hub.world()
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    for note in NOTES:
        alice.remember(note)
    alice.sync()
    blobs = sorted(_slot(data, alice).iterdir())
    blob = blobs[0]
    hub.stop()
    blob.write_bytes(b"a disk that flipped every bit of this chunk")

    run = in_process(capsys, monkeypatch)
    scrubbed: Run = run("hub", "scrub", "--data", str(data), "--json")

    assert scrubbed.code == 0, scrubbed.err
    assert scrubbed.json() == {"checked": len(blobs), "damaged": 1, "missing": 0}
    assert not blob.exists()
    hub.start()
    refused = bob.sync().refused
    assert [r.reason for r in refused] == [reasons.MISSING_CHUNK]
    assert set(NOTES) - _contents(bob)  # that bucket is a hole
    assert set(NOTES) & _contents(bob)  # the others were merged (a partial read)

    summary = alice.sync()  # nothing new to say: the writer heals anyway

    assert summary.pushed_chunks == 1
    assert bob.sync().refused == []
    assert set(NOTES) <= _contents(bob)
    for healed in _slot(data, alice).iterdir():
        assert chunk_id(SUITE, healed.read_bytes()) == healed.name
    assert alice.sync().pushed_chunks == 0  # healed: nothing more to publish
    world.close()


def test_a_chunk_damaged_on_disk_heals_without_a_scrub(tmp_path: Path, make_hub: type[Hub]) -> None:
    data = tmp_path / "hub"
    hub = make_hub(hub_config(data))
    world = hub.world()
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    for note in NOTES:
        alice.remember(note)
    alice.sync()
    blob = sorted(_slot(data, alice).iterdir())[0]
    blob.write_bytes(b"garbage")
    # the hub checks what it serves: the damaged blob reads as missing, and is marked
    assert [r.reason for r in bob.sync().refused] == [reasons.MISSING_CHUNK]

    assert alice.sync().pushed_chunks == 1  # the hub's mark on its slot said which

    assert bob.sync().refused == []
    assert set(NOTES) <= _contents(bob)
    world.close()
