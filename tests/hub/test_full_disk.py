"""A real uvicorn hub whose data directory is a small tmpfs that fills up: pushes are
refused ``disk-full`` in the client's words, pulls keep working (a restart on the full
disk included, when no nonce can be recorded), ``/healthz`` and the metrics say it, and
everything pushes once space is freed."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sealmem.client.sync.hub import HubTransport
from sealmem.client.sync.hub_answers import HubError
from sealmem.hub.http.server import BackgroundHub, free_port
from sealmem.hub.storage import DiskFull
from sealmem.hub.storage.sqlite import SQLiteStorage
from tests.hub.conftest import METRICS_AUTH, PROJECT, TEAM, TOKEN, HubWorld, Node, hub_config

SIZE = "8m"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of :data:`SIZE` mounted in ``tmp_path`` (root only: skipped elsewhere)."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(where)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}): run as root")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk: Path, name: str = "ballast") -> Path:
    """Write a ballast file until the disk has no byte left; return it."""
    ballast = disk / name
    with open(ballast, "wb", buffering=0) as fh:
        for size in (1 << 20, 1 << 16, 1 << 12, 1 << 8, 1):
            while True:
                try:
                    fh.write(b"\0" * size)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    assert os.statvfs(disk).f_bfree == 0
    return ballast


def team_texts(node: Node) -> list[str]:
    rows = node.store.connection.execute(
        "SELECT content FROM memories WHERE visibility = 'team' AND project = ?", (PROJECT,)
    ).fetchall()
    return sorted(str(r[0]) for r in rows)


def health(url: str) -> dict[str, object]:
    answer = httpx.get(url + "/healthz")
    assert answer.status_code == 200  # reads are served: a balancer keeps the hub
    doc: dict[str, object] = answer.json()
    return doc


def test_a_full_hub_disk_is_named_and_reads_keep_working(small_disk: Path) -> None:
    config = hub_config(small_disk / "hub", port=free_port())
    homes = small_disk.parent / "homes"
    homes.mkdir()
    hub = BackgroundHub(config).start()
    world = HubWorld(homes, hub.url, lambda k: HubTransport(hub.url, TEAM, k, operator_token=TOKEN))
    try:
        world.create()
        alice, bob = world.join("alice", "bob")
        alice.remember("the deploy runs at noon")
        world.sync_all()
        assert team_texts(bob) == ["the deploy runs at noon"]

        ballast = fill(small_disk)
        alice.remember("the cache is warmed at six " + os.urandom(3000).hex())
        with pytest.raises(HubError) as refused:
            alice.sync()
        assert refused.value.code == "disk-full"
        assert refused.value.status == 503
        assert "the hub's disk is full; tell its operator" in str(refused.value)
        assert "\n" not in str(refused.value)
        bob.sync()  # a pull: signed reads pass
        assert team_texts(bob) == ["the deploy runs at noon"]
        assert health(hub.url)["disk"] == "full"
        metrics = httpx.get(hub.url + "/metrics", headers=METRICS_AUTH).text
        assert "sealmem_hub_disk_full 1.0" in metrics
        assert 'sealmem_hub_errors_total{code="disk-full"}' in metrics

        # a restart (the stop freed the logs' space), and the disk full again: no nonce
        # can be recorded any more (its log cannot grow), and reads still pass
        hub.stop()
        hub = BackgroundHub(config).start()
        more = fill(small_disk, "ballast-2")
        bob.sync()
        assert team_texts(bob) == ["the deploy runs at noon"]
        with pytest.raises(HubError, match="the hub's disk is full; tell its operator"):
            alice.sync()

        ballast.unlink()
        more.unlink()  # the operator frees space: the next sync pushes, nothing lost
        alice.sync()
        bob.sync()
        assert len(team_texts(bob)) == 2
        assert health(hub.url) == {"ok": True}
    finally:
        world.close()
        hub.stop()


def test_a_hub_on_a_full_disk_does_not_start_and_says_why(small_disk: Path) -> None:
    fill(small_disk)
    with pytest.raises(DiskFull, match=r"no space left: free some on the hub's disk") as failed:
        SQLiteStorage(small_disk)
    assert "\n" not in str(failed.value)
