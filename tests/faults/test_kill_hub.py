"""The hub process killed with SIGKILL in the middle of members' pushes, then started
again on the same data: the members' next syncs converge with nothing lost or twice."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sealmem.client.sync.hub import HubTransport
from sealmem.hub.http.server import free_port
from sealmem.protocol.errors import SealmemError
from tests.hub.conftest import TEAM, TOKEN, HubWorld, wait_healthy

from .conftest import SEALMEM, converged, seeded, sound

pytestmark = pytest.mark.slow

ROUNDS = 10


class HubProcess:
    """``sealmem hub serve`` as a real process on a fixed port and data directory."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "SEALMEM_HUB_OPERATOR_TOKEN": TOKEN}
        self.proc = subprocess.Popen(
            [str(SEALMEM), "hub", "serve", "--data", str(self.data), "--port", str(self.port)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_healthy(self.url)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait()


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubProcess]:
    server = HubProcess(tmp_path / "hub-data")
    server.start()
    try:
        yield server
    finally:
        server.kill()


def test_hub_killed_mid_push(tmp_path: Path, hub: HubProcess) -> None:
    rng = seeded(1403)
    homes = tmp_path / "homes"
    homes.mkdir()
    world = HubWorld(homes, hub.url, lambda k: HubTransport(hub.url, TEAM, k, operator_token=TOKEN))
    try:
        world.create()
        alice, bob = world.join("alice", "bob")
        alice.remember("alice's first note syncs whole")
        began = time.monotonic()
        alice.sync()
        whole = time.monotonic() - began  # one push, to aim the kills inside one
        written = {"alice's first note syncs whole"}
        failed = 0
        for n in range(ROUNDS):
            for who in (alice, bob):
                for i in range(4):  # several buckets: the push takes a few requests
                    text = f"{who.name} round {n} note {i}: the hub fault suite"
                    who.remember(text)
                    written.add(text)
            killer = threading.Timer(rng.uniform(0.0, 1.5) * whole, hub.kill)
            killer.start()
            for who in (alice, bob):
                try:
                    who.sync()
                except SealmemError:  # the hub went away: one clear error, nothing lost
                    failed += 1
            killer.join()
            hub.kill()
            hub.start()
        assert failed >= 3, "the kills should land mostly inside a push"
        sound(node.home for node in world.nodes.values())
        world.sync_all(rounds=2)
        converged(world.nodes.values(), written)
    finally:
        with contextlib.suppress(SealmemError):
            world.close()
