"""Two hub replicas over one storage: what one replica stores, the other enforces.

Both apps run in this process over the same :class:`Storage` (as two processes
would over one PostgreSQL): each has its own cache of the team's trusted state,
and nothing in either app's memory may decide what the other accepts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sealmem.client.sync.hub import HubError, HubTransport
from sealmem.client.team import admin as team_admin
from sealmem.crypto import SUITE, MemberKey
from sealmem.hub.http.app import create_app
from sealmem.hub.storage import Storage
from sealmem.protocol.encoding import b64e

from .conftest import IN_PROCESS_URL, PROJECT, TEAM, TOKEN, HubWorld, hub_config, now_ms, signed


@dataclass
class Replicas:
    a: TestClient
    b: TestClient
    storage: Storage
    world: HubWorld

    def via_b(self, key: MemberKey) -> HubTransport:
        return HubTransport(IN_PROCESS_URL, TEAM, key, operator_token=TOKEN, client=self.b)


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[Replicas]:
    config = hub_config(tmp_path / "hub-data")
    app_a = create_app(config)
    storage: Storage = app_a.state.storage
    app_b = create_app(config, storage)
    with (
        TestClient(app_a, base_url=IN_PROCESS_URL) as a,
        TestClient(app_b, base_url=IN_PROCESS_URL) as b,
    ):
        homes = tmp_path / "homes"
        homes.mkdir()
        world = HubWorld(
            homes,
            IN_PROCESS_URL,
            lambda key: HubTransport(IN_PROCESS_URL, TEAM, key, operator_token=TOKEN, client=a),
        )
        world.create()
        world.join("alice", "bob")
        try:
            yield Replicas(a, b, storage, world)
        finally:
            world.close()


def test_a_member_revoked_through_one_replica_is_refused_by_the_other(
    replicas: Replicas,
) -> None:
    adm, alice = replicas.world.nodes["admin"], replicas.world.nodes["alice"]
    through_b = replicas.via_b(alice.key)
    assert through_b.newest_seqs(PROJECT) is not None  # replica B caches the team's state

    team_admin.revoke(adm.t, "alice", keep_data=True, now=now_ms())  # through replica A

    with pytest.raises(HubError) as refused:
        through_b.newest_seqs(PROJECT)
    assert (refused.value.status, refused.value.code) == (403, "revoked")
    through_b.close()


def _publish(client: TestClient, key: MemberKey, version: int, roster: bytes) -> tuple[int, str]:
    path = f"/v1/teams/{TEAM}/rosters/{version}"
    body = json.dumps({"roster": b64e(roster), "keyrings": []}).encode()
    response = client.put(path, headers=signed(key, "PUT", path, body), content=body)
    return response.status_code, str(response.json().get("error", ""))


def test_a_roster_version_published_twice_through_two_replicas_is_a_conflict(
    replicas: Replicas,
) -> None:
    adm = replicas.world.nodes["admin"]
    current = adm.t.roster()
    _publish(replicas.b, adm.key, current.version, current.sign(adm.key))  # B caches the team
    one = current.successor(SUITE, created_at=now_ms(), projects={**current.projects, "one": 1})
    two = current.successor(SUITE, created_at=now_ms(), projects={**current.projects, "two": 1})

    assert _publish(replicas.a, adm.key, one.version, one.sign(adm.key)) == (201, "")
    status, code = _publish(replicas.b, adm.key, two.version, two.sign(adm.key))

    assert status == 409, code  # a conflict to pull and retry, never a 503
    assert code == "fork"
    assert replicas.storage.rosters(TEAM, current.version) == [one.sign(adm.key)]


def test_a_stale_keyring_does_not_overwrite_a_newer_one(replicas: Replicas) -> None:
    adm = replicas.world.nodes["admin"]
    older = replicas.storage.keyrings(TEAM, PROJECT)[-1]
    through_b = replicas.via_b(adm.key)
    through_b.keyrings(PROJECT)  # replica B caches the team as it is now
    carol = replicas.world.join("carol")[0]  # through A: a newer keyring wraps carol's key
    newer = replicas.storage.keyrings(TEAM, PROJECT)[-1]
    assert newer.data != older.data
    assert newer.epoch == older.epoch

    with pytest.raises(HubError) as refused:
        through_b.put_keyring(PROJECT, older.epoch, older.data)  # an admin's stale retry

    assert (refused.value.status, refused.value.code) == (409, "rollback")
    assert replicas.storage.keyrings(TEAM, PROJECT)[-1].data == newer.data
    carol.sync()
    assert carol.t.content_key(carol.t.trusted(), PROJECT, newer.epoch) is not None
    through_b.close()
