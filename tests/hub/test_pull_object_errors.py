"""A hub that fails to serve one writer's objects skips that writer, not the whole sync.

The hub (or a proxy in front of it) answering 500 for one chunk is a failure of
that object: the reader warns, keeps nothing of that snapshot, and still merges
every other teammate's.  A hub that cannot be reached at all stops the sync.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sealmem.client.sync.folder import FolderTransport
from sealmem.client.sync.hub import HubTransport
from sealmem.client.sync.transport import Unreachable
from sealmem.hub.http.server import free_port
from tests.sync.conftest import PROJECT, World, make_world

from .evil_hub import evil_app

URL = "http://evil.test"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path, "alice", "bob", "carol")
    try:
        yield w
    finally:
        w.close()


def test_a_500_for_one_writers_chunk_skips_that_writer_only(world: World) -> None:
    alice, bob, carol = (world.nodes[n] for n in ("alice", "bob", "carol"))
    alice.remember("alice keeps the on-call rota")
    carol.remember("carol writes the release notes")
    alice.sync()
    carol.sync()
    folder = alice.t.transport
    assert isinstance(folder, FolderTransport)
    team = world.nodes["admin"].t.config.team
    chunk_dir = folder.base / "snapshots" / PROJECT / alice.key.kid / "chunks"
    failing = {p.name for p in chunk_dir.iterdir()}
    with TestClient(evil_app(folder, failing=failing), base_url=URL) as client:
        bob.team = dataclasses.replace(
            bob.t, transport=HubTransport(URL, team, bob.key, client=client)
        )
        summary = bob.sync()
    contents = {m.content for m in bob.memories().values()}
    assert "carol writes the release notes" in contents
    assert "alice keeps the on-call rota" not in contents
    assert summary.refused == []
    skipped = [w for w in summary.warnings if f"manifest {alice.key.kid[:8]}/{PROJECT}" in w]
    assert len(skipped) == 1, summary.warnings
    assert "500" in skipped[0]


def test_an_unreachable_hub_stops_the_sync(world: World) -> None:
    bob = world.nodes["bob"]
    team = world.nodes["admin"].t.config.team
    # a small retry budget: the refused connections are not waited on for seconds
    url = f"http://127.0.0.1:{free_port()}"
    hub = HubTransport(url, team, bob.key, timeout_s=2, retry_budget_s=0.2)
    bob.team = dataclasses.replace(bob.t, transport=hub)
    try:
        with pytest.raises(Unreachable, match="cannot reach the hub"):
            bob.sync()
    finally:
        hub.close()
