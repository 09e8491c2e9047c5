"""The client against a malicious hub over HTTP: the hostile objects of the folder
refusal tests, now served by a hub that checks nothing, are refused by name."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import uvicorn

from sealmem.client.sync.folder import FolderTransport
from sealmem.client.sync.hub import HubTransport
from sealmem.hub.http.server import free_port
from tests.sync.conftest import Node, World, make_world
from tests.sync.test_refusals import CASES, refused_by_name_while_the_rest_syncs

from .evil_hub import evil_app

pytestmark = pytest.mark.slow


class _Server:
    """The malicious hub under uvicorn on 127.0.0.1, in a thread."""

    def __init__(self, folder: FolderTransport) -> None:
        self.port = free_port()
        config = uvicorn.Config(evil_app(folder), port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path, "alice", "bob", "carol")
    try:
        yield w
    finally:
        w.close()


@pytest.mark.parametrize(
    ("attack", "reason", "after_bob_pulled"),
    [pytest.param(a, r, p, id=name) for name, a, r, p in CASES],
)
def test_a_malicious_hub_is_caught(
    world: World,
    tmp_path: Path,
    attack: Callable[[World, Node, Path], None],
    reason: str,
    after_bob_pulled: bool,
) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    folder = alice.t.transport
    assert isinstance(folder, FolderTransport)
    with _Server(folder) as url:
        hub = HubTransport(url, bob.t.config.team, bob.key)
        bob.team = dataclasses.replace(bob.t, transport=hub)  # bob reads via the hub
        try:
            fresh = refused_by_name_while_the_rest_syncs(
                world, tmp_path, attack, reason, after_bob_pulled
            )
            assert fresh.provenance.transport == "hub"
        finally:
            bob.t.transport.close()
