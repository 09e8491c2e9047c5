"""A real uvicorn hub whose data directory is a small tmpfs that fills up: pushes are
refused ``disk-full`` in the client's words, pulls keep working (a restart on the full
disk included, when no nonce can be recorded), ``/healthz`` and the metrics say it, and
everything pushes once space is freed."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import uuid
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
from tests.support.nobody import NOBODY
from tests.support.postgres import PostgresServer

pytestmark = pytest.mark.slow  # real hubs on a mounted tmpfs
SIZE = "8m"


@contextlib.contextmanager
def tmpfs(where: Path, *options: str) -> Iterator[Path]:
    """A tmpfs of :data:`SIZE` mounted at ``where`` (root only: the test is skipped else)."""
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", ",".join([f"size={SIZE}", *options]), "tmpfs", str(where)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}): run as root")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk") as where:
        yield where


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


def test_postgres_out_of_space_is_disk_full_and_reads_pass(
    tmp_path: Path, pg_server: PostgresServer
) -> None:
    """The hub's database in a tablespace on a small tmpfs (the server's own WAL stays on
    its disk, so PostgreSQL answers 53100 ``disk_full`` rather than stopping): once the
    tmpfs is full, pushes are refused disk-full (as soon as the tables' free pages are
    spent), pulls pass, and space freed lets the writer push again."""
    name = f"full_{uuid.uuid4().hex[:8]}"
    owner = f"uid={NOBODY},gid={NOBODY},mode=0700" if os.geteuid() == 0 else "mode=0700"
    with tmpfs(pg_server.root / name, owner) as disk:
        pg_server.execute(f"CREATE TABLESPACE {name} LOCATION '{disk}'")
        pg_server.execute(f"CREATE DATABASE {name} TABLESPACE {name}")
        config = hub_config(
            None, port=free_port(), db_url=pg_server.dsn(name),
            blobs_url=(tmp_path / "blobs").as_uri(),
        )  # fmt: skip
        homes = tmp_path / "homes"
        homes.mkdir()
        hub = BackgroundHub(config).start()
        url = hub.url
        world = HubWorld(homes, url, lambda k: HubTransport(url, TEAM, k, operator_token=TOKEN))
        try:
            world.create()
            alice, bob = world.join("alice", "bob")
            world.sync_all(rounds=1)
            ballast = fill(disk)
            refused = None
            for n in range(200):  # until the pages the tables hold free are spent
                alice.remember(f"note {n} " + os.urandom(500).hex())
                try:
                    alice.sync()
                except HubError as exc:
                    refused = exc
                    break
            assert refused is not None, "PostgreSQL never ran out of space"
            assert refused.code == "disk-full"
            assert "the hub's disk is full; tell its operator" in str(refused)
            bob.sync()  # reads pass (nonces that cannot be recorded are checked)
            for _ in range(400):  # past the nonce table's free pages too
                assert bob.t.transport.rosters(0)
            assert health(url)["disk"] == "full"
            ballast.unlink()
            alice.sync()
            bob.sync()
            assert len(team_texts(bob)) == n + 1
        finally:
            world.close()
            hub.stop()
            pg_server.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            pg_server.execute(f"DROP TABLESPACE IF EXISTS {name}")


def test_a_lost_blob_read_on_a_full_disk_is_answered_not_found(small_disk: Path) -> None:
    """A read whose row has no blob drops the row after its answer; when that write finds
    no space, the read is still answered (404 ``not-found``, the chunk is not there), not
    turned into a 503 ``disk-full`` after the fact."""
    config = hub_config(small_disk / "hub", port=free_port())
    homes = small_disk.parent / "homes"
    homes.mkdir()
    hub = BackgroundHub(config).start()
    world = HubWorld(homes, hub.url, lambda k: HubTransport(hub.url, TEAM, k, operator_token=TOKEN))
    try:
        world.create()
        alice, bob = world.join("alice", "bob")
        alice.remember("the deploy runs at noon")
        alice.sync()
        hub.stop()
        blobs = [p for p in (small_disk / "hub" / "blobs").rglob("*") if p.is_file()]
        lost = [p.name for p in blobs if alice.key.kid in p.parts]
        assert lost
        for blob in blobs:
            blob.unlink()  # deleted behind the hub's back
        hub = BackgroundHub(config).start()
        fill(small_disk)  # after the restart: the database's log cannot grow
        assert bob.t.transport.chunk(PROJECT, alice.key.kid, lost[0]) is None
    finally:
        world.close()
        hub.stop()
