"""Syncs through a proxy that loses some of the hub's answers: a real uvicorn hub on
127.0.0.1, real members, and :mod:`tests.support.faultproxy` between them.  Requests
that are safe to repeat (reads, chunk uploads) are repeated, signed afresh, and nothing
is lost or duplicated; a manifest whose answer was lost is not sent again blindly."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from sealmem.client.sync.hub import HubTransport
from sealmem.client.sync.replica import load_own_chain
from sealmem.client.sync.transport import Unreachable
from sealmem.crypto import MemberKey
from sealmem.hub.http.server import BackgroundHub, free_port
from sealmem.protocol.errors import TransportError
from tests.hub.conftest import PROJECT, TEAM, TOKEN, HubWorld, Node
from tests.support.asgi_thread import serving
from tests.support.faultproxy import fault_proxy

#: the fault rate and rounds of the many-rounds test (the environment may set others, to
#: measure: ``SEALMEM_FLAKY_RATE=0.1 SEALMEM_FLAKY_ROUNDS=60 pytest -s -k many_rounds``)
RATE = float(os.environ.get("SEALMEM_FLAKY_RATE", "0.03"))
ROUNDS = int(os.environ.get("SEALMEM_FLAKY_ROUNDS", "30"))


def through(node: Node, url: str) -> None:
    """The node's syncs go to ``url`` from now on."""
    node.t.transport.close()
    node.team = dataclasses.replace(node.t, transport=HubTransport(url, TEAM, node.key))


def texts(node: Node) -> list[str]:
    rows = node.store.connection.execute(
        "SELECT content FROM memories WHERE visibility = 'team' AND project = ?", (PROJECT,)
    ).fetchall()
    return sorted(str(r[0]) for r in rows)


@pytest.mark.slow
@pytest.mark.parametrize("lost", ["answer", "request"])
def test_many_rounds_through_a_lossy_proxy_all_succeed(
    world: HubWorld, hub: BackgroundHub, lost: str
) -> None:
    """Every kind of request loses its answer (or the request itself) at ``RATE``: reads,
    chunks, manifests, collects; no sync fails, nothing is lost or duplicated."""
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    with fault_proxy(hub.config.port, RATE, seed=2812, requests=lost == "request") as proxy:
        for node in (alice, bob):
            through(node, f"http://127.0.0.1:{proxy.port}")
        failed, wrote = [], []
        for r in range(ROUNDS):
            for node in (alice, bob):
                text = f"{node.name} note {r}"
                node.remember(text)
                wrote.append(text)
                try:
                    node.sync()
                except TransportError as exc:
                    failed.append(f"round {r} {node.name}: {exc}")
        print(
            f"{ROUNDS} rounds, {lost}s lost at rate {RATE}: {proxy.faults} lost, "
            f"{len(failed)} of {2 * ROUNDS} syncs failed: {failed}"
        )
        assert proxy.faults > 0
        assert failed == []
    for node in (alice, bob):
        through(node, hub.url)
    world.sync_all()
    assert texts(alice) == texts(bob) == sorted(wrote)


def hub_seq(hub: BackgroundHub, node: Node) -> int:
    """The seq of ``node``'s newest manifest on the hub, read directly (no proxy)."""
    direct = HubTransport(hub.url, TEAM, node.key)
    try:
        return (direct.newest_seqs(PROJECT) or {}).get(node.key.kid, 0)
    finally:
        direct.close()


def own_seq(node: Node) -> int:
    chain = load_own_chain(node.store.connection, PROJECT)
    return 0 if chain is None else chain.seq


@pytest.mark.slow
@pytest.mark.parametrize("lost", ["answer", "request"])
def test_a_lost_manifest_put_is_settled_by_reading_back(
    world: HubWorld, hub: BackgroundHub, lost: str
) -> None:
    """The proxy loses the answer after the hub stored the manifest (read back: it landed,
    done) or cuts the request before the hub saw it (read back: absent, sent once more);
    either way the sync succeeds, and the writer's chain is what the hub holds."""
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    alice.remember("the cache is warmed at six")
    before = hub_seq(hub, alice)
    # the request mode loses the first manifest PUT only: its repeat must get through
    rate, only = (1.0, r"^PUT \S*/manifests/") if lost == "answer" else (0.5, r"^PUT \S*/manif")
    with fault_proxy(hub.config.port, rate, seed=3, only=only, requests=lost == "request") as proxy:
        through(alice, f"http://127.0.0.1:{proxy.port}")
        summary = alice.sync()
        assert proxy.faults >= 1
    assert summary.pushed_versions == 1
    assert own_seq(alice) == hub_seq(hub, alice) == before + 1
    through(alice, hub.url)
    alice.sync()  # nothing new: no manifest, the chain stays where it is
    assert own_seq(alice) == hub_seq(hub, alice) == before + 1
    bob.sync()
    assert texts(bob) == ["the cache is warmed at six"]


class Busy:
    """Answers 503 with ``Retry-After`` to the first ``busy`` requests, then ``{}``; keeps
    each request's signature nonce (every attempt must be signed afresh)."""

    def __init__(self, busy: int, retry_after: str) -> None:
        self.busy, self.retry_after = busy, retry_after.encode()
        self.nonces: list[bytes] = []
        self.at: list[float] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.at.append(time.monotonic())
        self.nonces += [v for k, v in scope["headers"] if k.endswith(b"nonce")]
        headers = [(b"content-type", b"application/json")]
        status, body = 200, b'{"rosters": []}'
        if len(self.at) <= self.busy:
            headers.append((b"retry-after", self.retry_after))
            status, body = 503, b'{"error": "hub-busy", "detail": "try later"}'
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@pytest.fixture
def busy() -> Iterator[tuple[Busy, str]]:
    app = Busy(2, "0.3")
    with serving(app) as url:
        yield app, url


def test_retry_after_is_honoured_and_every_attempt_signed_afresh(busy: tuple[Busy, str]) -> None:
    app, url = busy
    transport = HubTransport(url, TEAM, MemberKey.generate())
    try:
        assert transport.rosters(0) == []
    finally:
        transport.close()
    assert len(app.at) == 3
    assert all(b - a >= 0.29 for a, b in zip(app.at, app.at[1:], strict=False))
    assert len(app.nonces) == 3
    assert len(set(app.nonces)) == 3


def test_the_budget_ends_the_retries(busy: tuple[Busy, str]) -> None:
    app, url = busy
    transport = HubTransport(url, TEAM, MemberKey.generate(), retry_budget_s=0.5)
    try:
        with pytest.raises(TransportError, match=r"after 2 attempts: .* \(hub-busy, HTTP 503\)"):
            transport.rosters(0)
    finally:
        transport.close()
    assert len(app.at) == 2  # a second wait of 0.3 s would end past the budget


def test_the_sync_budget_ends_the_retries_of_every_request(busy: tuple[Busy, str]) -> None:
    app, url = busy
    transport = HubTransport(url, TEAM, MemberKey.generate(), sync_budget_s=0.5)
    try:
        with transport.syncing(), pytest.raises(TransportError, match="after 2 attempts"):
            transport.rosters(0)  # its own budget (30 s) would allow a third attempt
    finally:
        transport.close()
    assert len(app.at) == 2


def test_a_request_after_the_sync_has_its_own_budget_again(busy: tuple[Busy, str]) -> None:
    """The sync's budget ends with the sync: a watcher's long poll or an admin command
    issued later in the same process repeats within its own budget."""
    app, url = busy
    transport = HubTransport(url, TEAM, MemberKey.generate(), sync_budget_s=0.5)
    try:
        with transport.syncing():
            pass
        time.sleep(0.6)
        transport.rosters(0)  # busy twice, then answered: the third attempt is allowed
    finally:
        transport.close()
    assert len(app.at) == 3


def test_a_request_the_hub_never_saw_is_repeated() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens: the connection is refused
    transport = HubTransport(url, TEAM, MemberKey.generate(), retry_budget_s=0.3)
    try:
        with pytest.raises(Unreachable, match=r"to publish keyring webapp/1 after [2-6] attempts"):
            transport.put_keyring(PROJECT, 1, b"keyring")
    finally:
        transport.close()


@pytest.mark.slow
@pytest.mark.parametrize(("what", "most"), [("rosters", None), ("keyrings", 1)])
def test_an_approval_whose_publication_answers_are_lost_lands(
    world: HubWorld, hub: BackgroundHub, what: str, most: int | None
) -> None:
    """Every roster PUT, or the first keyring PUT, loses its answer (a keyring the hub
    refused until its roster comes is absent on read back, and sent once more): each is
    read back and settled, and the approval completes; the newcomer reads the team."""
    admin, alice = world.nodes["admin"], world.nodes["alice"]
    alice.remember("the staging database is reset on mondays")
    alice.sync()
    lossy = fault_proxy(hub.config.port, 1.0, seed=1, only=rf"^PUT \S*/{what}/", most=most)
    with lossy as proxy:
        through(admin, f"http://127.0.0.1:{proxy.port}")
        (carol,) = world.join("carol")
        assert proxy.faults >= 1
    through(admin, hub.url)
    carol.sync()
    assert texts(carol) == ["the staging database is reset on mondays"]


@pytest.mark.slow
def test_a_join_post_whose_answer_is_lost_is_read_back(world: HubWorld, hub: BackgroundHub) -> None:
    """The join post's answer is lost after the hub took it: the joiner reads its request's
    state back (pending: it landed) and the admin approves it as usual."""
    alice = world.nodes["alice"]
    alice.remember("the release train leaves on thursdays")
    alice.sync()
    with fault_proxy(hub.config.port, 1.0, seed=1, only=r"^POST \S*/requests/") as proxy:
        url = f"http://127.0.0.1:{proxy.port}"
        world.location = url
        world.transport_for = lambda k: HubTransport(url, TEAM, k, operator_token=TOKEN)
        (carol,) = world.join("carol")
        assert proxy.faults == 1
    through(carol, hub.url)
    through(world.nodes["admin"], hub.url)
    carol.sync()
    assert texts(carol) == ["the release train leaves on thursdays"]
