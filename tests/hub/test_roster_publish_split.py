"""A roster publication whose keyrings do not fit one body still lands whole.

An admin sends the keyrings that name a new roster inside that roster's publication
(SPEC "Bodies").  When they do not fit the hub's body limit, the client sends the roster
with those that fit (or alone, when the hub's own limit is lower than the protocol's),
then each other keyring by itself once its roster is stored; one of those that fails is
read back and sent again, and one that still fails is named.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sealmem.hub.http.app import create_app
from sealmem.protocol.errors import TransportError
from sealmem.protocol.roster import Roster
from tests.hub.conftest import IN_PROCESS_URL, TEAM, HubWorld, InProcess, hub_config, now_ms

PROJECTS = tuple(f"p{i:02d}" for i in range(40))


@pytest.fixture
def small(tmp_path: Path) -> Iterator[InProcess]:
    """A hub that reads bodies of at most 16 KiB: 40 keyrings do not fit one."""
    data_dir = tmp_path / "hub-data"
    app = create_app(hub_config(data_dir, max_body_bytes=16 * 1024))
    with TestClient(app, base_url=IN_PROCESS_URL) as client:
        yield InProcess(app, client, data_dir)


@pytest.mark.slow
def test_a_team_whose_keyrings_do_not_fit_its_first_roster_registers_whole(
    tmp_path: Path, small: InProcess
) -> None:
    homes = tmp_path / "homes"
    homes.mkdir()
    world = HubWorld(homes, IN_PROCESS_URL, small.transport)
    try:
        admin = world.create(projects=PROJECTS)
        state, refused = admin.t.refresh(admin.t.trusted(), now_ms())
        assert not refused
        assert {p for p, _ in state.keyrings} == set(PROJECTS)
        assert len(small.storage.keyrings(TEAM)) == len(PROJECTS)
    finally:
        world.close()


@pytest.mark.slow  # encodes megabytes
def test_the_keyrings_that_fit_go_with_the_roster_in_order() -> None:
    import json

    from sealmem.client.sync.hub import _fitting
    from sealmem.protocol import hubapi
    from sealmem.protocol.encoding import b64e
    from sealmem.protocol.verify import MAX_KEYRING_BYTES, MAX_ROSTER_BYTES

    roster = bytes(MAX_ROSTER_BYTES)
    keyrings = [(f"p{i}", 1, bytes(MAX_KEYRING_BYTES)) for i in range(3)]
    bundled, later = _fitting(roster, keyrings)
    assert (bundled, later) == (keyrings[:1], keyrings[1:])  # one full-size beside a full roster
    body = json.dumps({"roster": b64e(roster), "keyrings": [b64e(k) for *_, k in bundled]})
    assert len(body) <= hubapi.MAX_ROSTER_PUBLISH_BYTES
    small = [(f"p{i}", 1, bytes(2000)) for i in range(3)]
    assert _fitting(b"{}", small) == (small, [])


def _revoke_losing_one_keyring(tmp_path: Path, losses: int) -> tuple[object, dict[str, int]]:
    """A revocation rotates every project of :data:`PROJECTS`; its roster goes alone (the
    hub reads 16 KiB bodies at most) and the keyrings follow one by one, through a proxy
    that loses the first ``losses`` requests of the keyring of p05 (none before the roster
    is sent).  Returns what the revocation returned or raised, and how many keyrings of
    each project the hub holds."""
    from sealmem.client.sync.hub import HubTransport
    from sealmem.client.team import admin as admin_ops
    from sealmem.hub.http.server import BackgroundHub, free_port
    from tests.hub.conftest import TOKEN
    from tests.support.faultproxy import fault_proxy

    config = hub_config(tmp_path / "hub-data", port=free_port(), max_body_bytes=16 * 1024)
    homes = tmp_path / "homes"
    homes.mkdir()
    only = r"PUT /v1/teams/[^/ ]+/keyrings/p05/"
    with BackgroundHub(config) as hub:
        world = HubWorld(
            homes, hub.url, lambda key: HubTransport(hub.url, TEAM, key, operator_token=TOKEN)
        )
        try:
            admin = world.create(projects=PROJECTS)
            world.join("carol", projects=list(PROJECTS))
            with fault_proxy(hub.config.port, 0.0, 7, only, requests=True, most=losses) as proxy:
                lossy = HubTransport(f"http://127.0.0.1:{proxy.port}", TEAM, admin.key,
                                     retry_budget_s=5)  # fmt: skip
                publish_roster = lossy.put_roster

                def losing(version: int, data: bytes) -> None:  # the keyrings before it land
                    proxy.rate = 1.0
                    publish_roster(version, data)

                lossy.put_roster = losing  # type: ignore[method-assign]
                admin.t.transport.close()
                admin.team = dataclasses.replace(admin.t, transport=lossy)
                try:
                    outcome: object = admin_ops.revoke(admin.t, "carol", now=now_ms())
                except TransportError as exc:
                    outcome = exc
                assert proxy.faults == losses
            direct = HubTransport(hub.url, TEAM, admin.key)
            try:
                return outcome, {p: len(direct.keyrings(p)) for p in PROJECTS}
            finally:
                direct.close()
        finally:
            world.close()


@pytest.mark.slow  # a uvicorn hub and a proxy
def test_a_keyring_that_fails_after_a_split_roster_is_sent_again(tmp_path: Path) -> None:
    """The request of one keyring is lost twice, which one request cannot settle on its
    own: the others are still sent, and the lost one is read back and sent again, so every
    keyring lands in the same call.  (Before, the first failure stopped the rest and the
    revocation failed once its roster was on the hub.)"""
    roster, held = _revoke_losing_one_keyring(tmp_path, losses=2)
    assert isinstance(roster, Roster), roster
    assert {roster.projects[p] for p in PROJECTS} == {2}
    assert held == dict.fromkeys(PROJECTS, 2)  # epoch 1 and the rotated epoch 2


@pytest.mark.slow  # a uvicorn hub and a proxy
def test_a_keyring_that_still_fails_is_named_and_the_others_land(tmp_path: Path) -> None:
    error, held = _revoke_losing_one_keyring(tmp_path, losses=4)
    assert isinstance(error, TransportError), error
    assert "roster v3 is on the hub" in str(error)
    assert "p05 epoch 2" in str(error)
    assert "sealmem admin rotate" in str(error)
    assert held == {p: 1 if p == "p05" else 2 for p in PROJECTS}
