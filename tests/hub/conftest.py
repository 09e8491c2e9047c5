"""A real hub and a team of real members talking to it.

``HubWorld`` builds a team over any hub (a uvicorn server on 127.0.0.1, or the
app in-process through a Starlette ``TestClient``): the admin publishes roster
v1 and its keyrings through :class:`HubTransport` (registration with the
operator token), members post join requests to the hub inbox and the admin
approves them with the same code the CLI runs (``sealmem.client.team.admin``).
Each member has its own home, key and SQLite store.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from sealmem.client import Memory, MemoryStore
from sealmem.client.identity import load_member_key
from sealmem.client.sync.engine import SyncSummary, sync
from sealmem.client.sync.hub import HubTransport
from sealmem.client.sync.session import Team, TeamConfig
from sealmem.client.team.admin import invite
from sealmem.client.team.approval import approve
from sealmem.client.team.invite import make_join_request, read_invite
from sealmem.crypto import SUITE, ContentKey, MemberKey
from sealmem.crypto.request import sign_request
from sealmem.hub.config import HubConfig
from sealmem.hub.http.app import create_app
from sealmem.hub.http.server import BackgroundHub, free_port
from sealmem.hub.storage import Storage
from sealmem.protocol.admin import genesis
from sealmem.protocol.keyring import build_keyring
from sealmem.protocol.roster import Member

TOKEN = "operator-token-for-tests-0123456789"
METRICS_TOKEN = "metrics-token-for-tests-0123456789"
#: the header a scraper sends to read /metrics of a hub from hub_config()
METRICS_AUTH = {"authorization": f"Bearer {METRICS_TOKEN}"}
TEAM = "acme-hub-team"
PROJECT = "webapp"

TransportFactory = Callable[[MemberKey], HubTransport]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def hub_config(data_dir: Path, **kw: object) -> HubConfig:
    kw.setdefault("operator_token", TOKEN)
    kw.setdefault("metrics_token", METRICS_TOKEN)
    return HubConfig(data_dir=data_dir, **kw)  # type: ignore[arg-type]


@dataclass
class Node:
    name: str
    home: Path
    key: MemberKey
    store: MemoryStore
    team: Team | None = None

    @property
    def t(self) -> Team:
        assert self.team is not None
        return self.team

    def sync(self) -> SyncSummary:
        return sync(self.t)

    def remember(self, text: str, **kw: object) -> Memory:
        kw.setdefault("project", PROJECT)
        return self.store.remember(text, **kw).memory  # type: ignore[arg-type]

    def team_ids(self) -> list[str]:
        rows = self.store.connection.execute(
            "SELECT id FROM memories WHERE visibility = 'team' ORDER BY id"
        ).fetchall()
        return [str(r[0]) for r in rows]


@dataclass
class HubWorld:
    root: Path
    location: str
    transport_for: TransportFactory
    team: str = TEAM
    nodes: dict[str, Node] = field(default_factory=dict)

    def node(self, name: str) -> Node:
        home = self.root / name
        home.mkdir()
        key = load_member_key(home)
        store = MemoryStore.open(home / "store.db", author=key.kid)
        node = Node(name, home, key, store)
        self.nodes[name] = node
        return node

    def _team(self, node: Node, root: MemberKey) -> Team:
        config = TeamConfig(
            team=self.team, root_public=root.sign_public, root_box_public=root.box_public,
            location=self.location, name=node.name, transport="hub",
        )  # fmt: skip
        config.save(node.home)
        team = Team(node.home, node.store, node.key, config, self.transport_for(node.key))
        return team

    def create(self, projects: tuple[str, ...] = (PROJECT, "shared"), name: str = "admin") -> Node:
        """The admin registers the team on the hub: keyrings, then roster v1."""
        admin = self.node(name)
        me = Member(admin.key.kid, name, admin.key.sign_public, admin.key.box_public, "admin")
        roster = genesis(SUITE, self.team, me, created_at=now_ms(), projects=projects)
        admin.team = self._team(admin, admin.key)
        transport = admin.t.transport
        for project in projects:
            keyring = build_keyring(ContentKey.generate(), roster, project)
            transport.put_keyring(project, keyring.epoch, keyring.sign(admin.key))
        transport.put_roster(1, roster.sign(admin.key))
        assert not admin.t.refresh(admin.t.trusted(), now_ms())[1]
        return admin

    def join(
        self, *names: str, projects: list[str] | None = None, admin: str = "admin"
    ) -> list[Node]:
        """Members post join requests to the hub inbox; the admin approves them all."""
        root = self.nodes[admin]
        inv = read_invite(invite(root.t, now_ms()), now=now_ms())
        added = []
        for name in names:
            node = self.node(name)
            request = make_join_request(
                node.key, team=self.team, name=name, invite_id=inv.invite_id, now=now_ms()
            )
            node.team = self._team(node, root.key)
            node.t.transport.post_request(node.key.kid, request)
            added.append(node)
        approve(
            root.t,
            [n.key.kid for n in added],
            projects=projects,
            read=True,
            write=True,
            now=now_ms(),
        )
        return added

    def sync_all(self, rounds: int = 2) -> None:
        for _ in range(rounds):
            for node in self.nodes.values():
                node.sync()

    def close(self) -> None:
        for node in self.nodes.values():
            if node.team is not None:
                node.team.transport.close()
            node.store.close()


#: ``pytestmark = BOTH_PATHS``: a module's tests that take a hub (the ``fast`` fixture,
#: which ``hub`` and ``inproc`` take) run against the fast path and the plain one
BOTH_PATHS = pytest.mark.both_paths


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "fast" in metafunc.fixturenames and metafunc.definition.get_closest_marker("both_paths"):
        metafunc.parametrize("fast", [True, False], ids=["fast", "plain"], indirect=True)


@pytest.fixture
def fast(request: pytest.FixtureRequest) -> bool:
    """The path the hubs of a test serve: fast, unless the module runs on ``BOTH_PATHS``."""
    return bool(getattr(request, "param", True))


@pytest.fixture
def hub(tmp_path: Path, fast: bool) -> Iterator[BackgroundHub]:
    """A real uvicorn hub on 127.0.0.1, on a free port, data in tmp_path/hub-data."""
    config = hub_config(tmp_path / "hub-data", port=free_port(), fast=fast)
    with BackgroundHub(config) as server:
        yield server


@pytest.fixture
def world(tmp_path: Path, hub: BackgroundHub) -> Iterator[HubWorld]:
    """admin (root), alice and bob in one team on the real hub."""
    homes = tmp_path / "homes"
    homes.mkdir()
    w = HubWorld(homes, hub.url, lambda key: HubTransport(hub.url, TEAM, key, operator_token=TOKEN))
    w.create()
    w.join("alice", "bob")
    try:
        yield w
    finally:
        w.close()


def data_bytes(data_dir: Path) -> bytes:
    """Every byte under the hub's data directory (database, WAL, blobs)."""
    return b"".join(p.read_bytes() for p in sorted(data_dir.rglob("*")) if p.is_file())


def wait_healthy(url: str, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"the hub at {url} did not become healthy")


def start_hub_process(data: Path, port: int, *options: str) -> subprocess.Popen[bytes]:
    """``sealmem hub serve`` (with ``options``) in a child process on 127.0.0.1:``port``
    (a real process, to kill with SIGKILL), returned once it answers ``/healthz``."""
    env = {**os.environ, "SEALMEM_HUB_OPERATOR_TOKEN": TOKEN}
    code = "import sys; from sealmem.client.cli import main; sys.exit(main())"
    cmd = [sys.executable, "-c", code, "hub", "serve", "--data", str(data), "--port", str(port),
           *options]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_healthy(f"http://127.0.0.1:{port}")
    return proc


@dataclass
class InProcess:
    """The hub app in this process: ``client`` (sync, for HubTransport) and ``app``."""

    app: Starlette
    client: TestClient
    data_dir: Path

    @property
    def storage(self) -> Storage:
        store: Storage = self.app.state.storage
        return store

    def transport(self, key: MemberKey, team: str = TEAM) -> HubTransport:
        return HubTransport(IN_PROCESS_URL, team, key, operator_token=TOKEN, client=self.client)

    def asgi(self) -> httpx.AsyncClient:
        """An async client driving the same app through ``httpx.ASGITransport``."""
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url=IN_PROCESS_URL
        )

    def dump(self, team: str = TEAM) -> dict[str, object]:
        """Everything stored for ``team``, to show that a refused request changed nothing."""
        s = self.storage
        projects = (PROJECT, "shared")
        return {
            "rosters": s.rosters(team, 0),
            "keyrings": s.keyrings(team),
            "manifests": {p: s.manifests(team, p) for p in projects},
            "requests": s.requests(team),
            "cursor": s.cursor(team),
            "usage": s.usage(team),
            "blobs": sorted(str(p) for p in (self.data_dir / "blobs").rglob("*")),
        }


IN_PROCESS_URL = "http://hub.test"


@pytest.fixture
def inproc(tmp_path: Path, fast: bool) -> Iterator[InProcess]:
    data_dir = tmp_path / "hub-data"
    app = create_app(hub_config(data_dir, fast=fast))
    with TestClient(app, base_url=IN_PROCESS_URL) as client:
        yield InProcess(app, client, data_dir)


def signed(
    key: MemberKey,
    method: str,
    target: str,
    body: bytes = b"",
    *,
    now: int | None = None,
    nonce: bytes | None = None,
) -> dict[str, str]:
    """Signature headers for a raw request to ``target`` (path and query)."""
    return sign_request(key, method, target, body, now_ms=now or now_ms(), nonce=nonce)
