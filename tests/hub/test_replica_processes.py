"""Three hub replicas over one PostgreSQL and one S3 bucket, and members using them at once.

Each replica is a real ``sealmem hub serve --db postgresql://... --blobs s3://...``
process (uvicorn) on its own port; PostgreSQL is the real server started by the
tests, the bucket lives in moto's S3 server.  Members each have their own home
and store and sync with the real client, each through the replica it is routed
to; nothing is shared between the replicas but the database and the bucket.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path

import httpx
import pytest

from sealmem.client import MemoryStore
from sealmem.client.sync.engine import sync
from sealmem.client.sync.hub import HubTransport
from sealmem.client.sync.hub_answers import HubConflictError, HubError
from sealmem.client.sync.session import Team
from sealmem.client.team.admin import revoke
from sealmem.crypto import SUITE, MemberKey
from sealmem.crypto.request import sign_request
from sealmem.hub.http.server import free_port
from sealmem.protocol import hubapi, reasons
from sealmem.protocol.errors import TransportError
from sealmem.protocol.manifest import peek
from tests.support.postgres import PostgresServer
from tests.support.s3 import S3Server

from .conftest import PROJECT, TOKEN, HubWorld, Node, now_ms, wait_healthy

pytestmark = pytest.mark.slow

_teams = count(1)


@dataclass
class Cluster:
    """Replica processes over one database and one bucket; ``urls[i]`` is replica i."""

    db: str
    blobs: str
    log_dir: Path
    ports: list[int]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{p}" for p in self.ports]

    def start(self, i: int) -> None:
        env = {**os.environ, "SEALMEM_HUB_OPERATOR_TOKEN": TOKEN}
        code = "import sys; from sealmem.client.cli import main; sys.exit(main())"
        argv = [sys.executable, "-c", code, "hub", "serve", "--db", self.db,
                "--blobs", self.blobs, "--port", str(self.ports[i])]  # fmt: skip
        with open(self.log_dir / f"replica-{i}.log", "ab") as log:
            proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        if i < len(self.procs):
            self.procs[i] = proc
        else:
            self.procs.append(proc)
        wait_healthy(self.urls[i], timeout_s=60)

    def kill(self, i: int) -> None:
        self.procs[i].send_signal(signal.SIGKILL)
        self.procs[i].wait()

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module")
def cluster(
    pg_server: PostgresServer, s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    made = Cluster(
        db=pg_server.new_database(),
        blobs=s3_server.url(s3_server.new_bucket(), "replicas"),
        log_dir=tmp_path_factory.mktemp("replica-logs"),
        ports=[free_port() for _ in range(3)],
    )
    try:
        for i in range(3):
            made.start(i)
        yield made
    finally:
        made.stop()


@dataclass
class Routed:
    """A team whose members each talk to the replica they are routed to."""

    world: HubWorld
    cluster: Cluster
    route: dict[str, str]
    clients: dict[str, httpx.Client] = field(default_factory=dict)

    def via(self, node: Node, replica: int, client: httpx.Client | None = None) -> Node:
        """From now on ``node`` syncs through replica ``replica`` (over ``client``)."""
        self.route[node.key.kid] = self.cluster.urls[replica]
        old = self.clients.pop(node.key.kid, None)
        if old is not None:
            old.close()
        if client is not None:
            self.clients[node.key.kid] = client
        if node.team is not None:
            node.team.transport.close()
        node.team = self.world._team(node, self.world.nodes["admin"].key)
        return node


@pytest.fixture
def routed(cluster: Cluster, tmp_path: Path) -> Iterator[Routed]:
    """admin on replica 0; alice on 0, bob on 1, carol on 2 (a new team each test)."""
    for i, proc in enumerate(cluster.procs):  # a test may have killed one
        if proc.poll() is not None:
            cluster.start(i)
    route: dict[str, str] = {}

    def transport(key: MemberKey) -> HubTransport:
        url = route.get(key.kid, cluster.urls[0])
        client = made.clients.get(key.kid)
        # a small retry budget: a killed replica is not waited on for long, and a join post
        # refused 429 (10 a minute from one address, the tests share 127.0.0.1) waits it out
        return HubTransport(
            url, world.team, key, operator_token=TOKEN, client=client, retry_budget_s=8.0
        )

    homes = tmp_path / "homes"
    homes.mkdir()
    world = HubWorld(homes, cluster.urls[0], transport, team=f"replicated-{next(_teams)}")
    made = Routed(world, cluster, route)
    try:
        world.create()
        _alice, bob, carol = world.join("alice", "bob", "carol")
        made.via(bob, 1)
        made.via(carol, 2)
        yield made
    finally:
        world.close()
        for client in made.clients.values():
            client.close()


def _signed_get(key: MemberKey, path: str) -> dict[str, str]:
    return sign_request(key, "GET", path, b"", now_ms=now_ms())


def test_members_on_three_replicas_at_once_lose_no_update(routed: Routed) -> None:
    nodes = [routed.world.nodes[n] for n in ("alice", "bob", "carol")]
    written: dict[str, set[str]] = {n.name: set() for n in nodes}
    errors: list[BaseException] = []

    start = threading.Barrier(len(nodes))

    def work(node: Node) -> None:
        # its own store connection and transport: SQLite connections belong to their thread
        store = MemoryStore.open(node.home / "store.db", author=node.key.kid)
        team = Team(node.home, store, node.key, node.t.config, routed.world.transport_for(node.key))
        try:
            start.wait()
            for round_ in range(4):
                for i in range(5):
                    text = f"{node.name} round {round_} note {i} on topic {i * 7}"
                    written[node.name].add(store.remember(text, project=PROJECT).memory.id)
                sync(team)
        except BaseException as exc:
            errors.append(exc)
        finally:
            team.transport.close()
            store.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in nodes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for node in nodes:  # forget the state cached before the threads ran
        routed.via(node, ["alice", "bob", "carol"].index(node.name))
    for _ in range(2):
        for node in nodes:
            assert not node.sync().refused
    everything = set().union(*written.values())
    assert len(everything) == 60
    for node in nodes:
        assert everything <= set(node.team_ids()), node.name


def test_two_versions_of_one_seq_through_two_replicas_only_one_lands(routed: Routed) -> None:
    alice = routed.world.nodes["alice"]
    alice.remember("alice's first note")
    alice.sync()
    a, b = (HubTransport(u, routed.world.team, alice.key) for u in routed.cluster.urls[:2])
    try:
        newest = a.newest_manifest(PROJECT, alice.key.kid)
        assert newest is not None
        current = peek(newest)
        forks = [  # same seq and prev, different contents: a fork if both landed
            dataclasses.replace(
                current, seq=current.seq + 1, prev=current.hash(SUITE), records=current.records + n
            ).sign(alice.key)
            for n in (1, 2)
        ]
        outcome: list[object] = [None, None]
        barrier = threading.Barrier(2)

        def publish(i: int, transport: HubTransport) -> None:
            barrier.wait()
            try:
                transport.push(PROJECT, alice.key.kid, current.seq + 1, forks[i], {})
                outcome[i] = "stored"
            except HubError as exc:
                outcome[i] = exc

        threads = [threading.Thread(target=publish, args=(i, t)) for i, t in enumerate((a, b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert outcome.count("stored") == 1
        lost = next(o for o in outcome if o != "stored")
        assert isinstance(lost, HubConflictError)
        # the loser is refused under the team lock: as a fork of the stored seq, or, had
        # it verified before the winner committed, by the compare-and-swap on seq
        assert lost.code in (reasons.FORK, hubapi.STALE_SEQ)
        c = HubTransport(routed.cluster.urls[2], routed.world.team, alice.key)
        try:
            kept = [t.newest_manifest(PROJECT, alice.key.kid) for t in (a, b, c)]
        finally:
            c.close()
        assert kept[0] == kept[1] == kept[2]  # every replica serves the same one
        assert kept[0] in forks
    finally:
        a.close()
        b.close()


def test_a_request_replayed_to_another_replica_is_refused(routed: Routed) -> None:
    bob = routed.world.nodes["bob"]
    path = hubapi.path(hubapi.ROSTERS, team=routed.world.team)
    headers = _signed_get(bob.key, path)
    first = httpx.get(routed.cluster.urls[1] + path, headers=headers)
    assert first.status_code == 200
    for url in (routed.cluster.urls[0], routed.cluster.urls[2], routed.cluster.urls[1]):
        again = httpx.get(url + path, headers=headers)
        assert again.status_code == 401
        assert again.json()["error"] == hubapi.REPLAYED


def test_a_member_revoked_through_one_replica_is_refused_by_all(routed: Routed) -> None:
    admin, bob = routed.world.nodes["admin"], routed.world.nodes["bob"]
    path = hubapi.path(hubapi.SEQS, team=routed.world.team, project=PROJECT)
    for url in routed.cluster.urls:  # every replica has bob's team state cached
        assert httpx.get(url + path, headers=_signed_get(bob.key, path)).status_code == 200
    revoke(admin.t, "bob", now=now_ms())  # published through replica 0
    for url in routed.cluster.urls:
        answer = httpx.get(url + path, headers=_signed_get(bob.key, path))
        assert answer.status_code == 403, url
        assert answer.json()["error"] == hubapi.REVOKED


def test_the_feed_on_one_replica_wakes_when_a_push_lands_on_another(routed: Routed) -> None:
    alice, bob = routed.world.nodes["alice"], routed.world.nodes["bob"]  # replicas 0 and 1
    feed = HubTransport(routed.cluster.urls[1], routed.world.team, bob.key)
    try:
        cursor, _ = feed.feed(0, wait_s=0)
        answer: list[tuple[int, list[dict[str, object]], float]] = []

        def poll() -> None:
            started = time.monotonic()
            new, changes = feed.feed(cursor, wait_s=25)
            answer.append((new, changes, time.monotonic() - started))

        poller = threading.Thread(target=poll)
        poller.start()
        time.sleep(1.0)  # the poll is waiting on replica 1
        alice.remember("alice pushes through replica 0")
        alice.sync()
        poller.join(timeout=40)
        new, changes, waited = answer[0]
        assert new > cursor
        assert any(c.get("writer") == alice.key.kid for c in changes)
        # woken by the push, not by the end of the 25 s wait (a generous margin)
        assert waited < 15, f"the long poll on replica 1 slept {waited:.1f} s"
    finally:
        feed.close()


def test_a_replica_killed_mid_push_loses_nothing(routed: Routed) -> None:
    cluster, world = routed.cluster, routed.world
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    before = bob.remember("bob's note, committed before the crash").id
    bob.sync()
    uploads: list[str] = []

    def kill_after_four_chunks(response: httpx.Response) -> None:
        request = response.request
        if request.method == "PUT" and "/chunks/" in request.url.path:
            uploads.append(request.url.path)
            if len(uploads) == 4:  # replica 2 dies in the middle of alice's push
                cluster.kill(2)

    client = httpx.Client(
        base_url=cluster.urls[2], event_hooks={"response": [kill_after_four_chunks]}
    )
    routed.via(alice, 2, client)
    ids = {alice.remember(f"alice memory {i} on subject {i * 31}").id for i in range(600)}
    with pytest.raises(TransportError, match="cannot reach the hub"):
        alice.sync()
    assert len(uploads) == 4
    routed.via(alice, 0)  # alice carries on through a surviving replica
    summary = alice.sync()
    assert summary.pushed_versions == 600
    assert not bob.sync().refused  # bob reads through replica 1
    assert {before, *ids} <= set(bob.team_ids())
    carol = routed.via(world.nodes["carol"], 1)
    assert not carol.sync().refused
    assert {before, *ids} <= set(carol.team_ids())
