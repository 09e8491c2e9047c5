"""Many members at once, and a hub killed mid-push: nothing lost, nothing duplicated."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from sealmem.client import MemoryStore
from sealmem.client.sync.engine import sync
from sealmem.client.sync.hub import HubTransport
from sealmem.client.sync.session import Team
from sealmem.crypto import MemberKey
from sealmem.hub.config import HubConfig
from sealmem.hub.http.server import BackgroundHub, free_port
from sealmem.hub.storage.sqlite import SQLiteStorage
from sealmem.protocol.errors import TransportError

from .conftest import (
    PROJECT,
    TEAM,
    TOKEN,
    HubWorld,
    Node,
    hub_config,
    start_hub_process,
)

pytestmark = pytest.mark.slow

MEMBERS = 20
EACH = 2


def test_twenty_concurrent_members_converge(tmp_path: Path) -> None:
    config = hub_config(
        tmp_path / "hub-data", port=free_port(), join_burst=MEMBERS, max_pending_per_address=MEMBERS
    )
    hub = BackgroundHub(config).start()
    homes = tmp_path / "homes"
    homes.mkdir()
    w = HubWorld(homes, hub.url, lambda k: HubTransport(hub.url, TEAM, k, operator_token=TOKEN))
    try:
        w.create(projects=(PROJECT,))
        members = w.join(*(f"m{i:02d}" for i in range(MEMBERS)))
        written = {
            node.remember(f"note {j} from {node.name}").id for node in members for j in range(EACH)
        }

        def in_threads(step: Callable[[Team, MemoryStore, Node], object]) -> None:
            """Run ``step`` for every member at once, each in its own thread with its own
            store connection (SQLite connections belong to their thread)."""
            errors: list[BaseException] = []
            start = threading.Barrier(MEMBERS)

            def run(node: Node) -> None:
                store = MemoryStore.open(node.home / "store.db", author=node.key.kid)
                team = Team(node.home, store, node.key, node.t.config, w.transport_for(node.key))
                try:
                    start.wait()
                    step(team, store, node)
                except BaseException as exc:  # reported below
                    errors.append(exc)
                finally:
                    team.transport.close()
                    store.close()

            threads = [threading.Thread(target=run, args=(node,)) for node in members]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
            assert not errors, errors[:3]

        def sync_then_note(team: Team, store: MemoryStore, node: Node) -> None:
            sync(team)  # all 20 push and pull at once
            written.add(store.remember(f"late note from {node.name}", project=PROJECT).memory.id)

        in_threads(sync_then_note)
        assert len(written) == MEMBERS * (EACH + 1)
        in_threads(lambda team, _s, _n: sync(team, pull=False))  # push what is left
        in_threads(lambda team, _s, _n: sync(team, push=False))  # then everyone pulls
        for node in members:  # forget the state cached before the threads ran
            node.team = Team(node.home, node.store, node.key, node.t.config, node.t.transport)
        assert not w.nodes["admin"].sync().refused
        seqs = members[0].t.transport.newest_seqs(PROJECT)
        assert seqs is not None
        for node in [w.nodes["admin"], *members]:
            ids = node.team_ids()
            assert len(ids) == len(set(ids))  # no duplicated versions
            if node.name != "admin":
                assert set(ids) == written, node.name  # none lost
                own = node.store.connection.execute(
                    "SELECT seq FROM own_chain WHERE project = ?", (PROJECT,)
                ).fetchone()[0]
                assert seqs[node.key.kid] == own  # the hub holds each writer's newest push
    finally:
        w.close()
        hub.stop()


def test_hub_killed_mid_push_loses_nothing(tmp_path: Path) -> None:
    data, port = tmp_path / "hub-data", free_port()
    url = f"http://127.0.0.1:{port}"
    procs = [start_hub_process(data, port)]
    uploads: list[str] = []

    def kill_after_four_chunks(response: httpx.Response) -> None:
        request = response.request
        if request.method == "PUT" and "/chunks/" in request.url.path:
            uploads.append(request.url.path)
            if len(uploads) == 4:  # the hub dies in the middle of alice's push
                procs[0].send_signal(signal.SIGKILL)
                procs[0].wait()

    clients: list[httpx.Client] = []

    def transport(key: MemberKey) -> HubTransport:
        client = httpx.Client(base_url=url, event_hooks={"response": [kill_after_four_chunks]})
        clients.append(client)
        # a small retry budget: the killed hub is not waited on for seconds
        return HubTransport(url, TEAM, key, operator_token=TOKEN, client=client, retry_budget_s=1.0)

    homes = tmp_path / "homes"
    homes.mkdir()
    w = HubWorld(homes, url, transport)
    try:
        w.create()
        alice, bob = w.join("alice", "bob")
        before = bob.remember("bob's note, committed before the crash").id
        bob.sync()
        uploads.clear()
        ids = {alice.remember(f"alice memory {i} on subject {i * 31}").id for i in range(1000)}
        with pytest.raises(TransportError, match="cannot reach the hub"):
            alice.sync()
        assert len(uploads) == 4
        # a crash inside a blob write leaves a temp file and an unnamed blob behind
        stray = data / "blobs" / TEAM / PROJECT / alice.key.kid
        (stray / ".tmp-interrupted").write_bytes(b"half a chunk")
        (stray / ("f" * 64)).write_bytes(b"a blob whose row never committed")
        procs[0] = start_hub_process(data, port)
        # young: it could be a write in flight on another replica, so a start keeps it
        assert (stray / ".tmp-interrupted").exists()
        assert (stray / ("f" * 64)).exists()
        summary = alice.sync()
        assert summary.pushed_versions == 1000
        assert not bob.sync().refused
        assert ids <= set(bob.team_ids())
        admin = w.nodes["admin"]
        admin.sync()
        assert {before, *ids} <= set(admin.team_ids())
        procs[0].kill()
        procs[0].wait()
        # once older than the minimum age, the janitor's orphan pass removes both
        old = time.time() - HubConfig(data_dir=data).orphan_min_age_s - 1
        for leftover in (stray / ".tmp-interrupted", stray / ("f" * 64)):
            os.utime(leftover, (old, old))
        storage = SQLiteStorage(data)
        try:
            assert storage.collect_orphans(HubConfig(data_dir=data).orphan_min_age_s) == 2
        finally:
            storage.close()
        assert not (stray / ".tmp-interrupted").exists()
        assert not (stray / ("f" * 64)).exists()
    finally:
        w.close()
        for client in clients:
            client.close()
        procs[0].kill()
        procs[0].wait()
