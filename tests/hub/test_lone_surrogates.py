"""A lone surrogate in a body is refused by name (4xx), never a 500.

``"\\ud800"`` is valid JSON text but names no character: it has no UTF-8 form,
so canonical JSON cannot hold it.  Each object the hub reads (a join post, a
roster, a keyring, a manifest) is sent once with such a string in a field and
must be refused as ``not-canonical`` with nothing stored.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sealmem.client.team.invite import make_join_request
from sealmem.crypto import MemberKey
from sealmem.protocol.encoding import b64e

from .conftest import IN_PROCESS_URL, PROJECT, TEAM, HubWorld, InProcess, signed

LONE = b"\\ud800"  # the six characters of the JSON escape, as a hostile writer sends them

ANY_INVITE = "A" * 22  # the hub cannot know invites: any well-formed id passes


def plant(data: bytes, old: bytes) -> bytes:
    """``data`` with the string ``old`` replaced by one holding a lone surrogate."""
    assert data.count(old) == 1, old
    return data.replace(old, old[:-1] + LONE + b'"')


@pytest.fixture
def team(tmp_path: Path, inproc: InProcess) -> HubWorld:
    homes = tmp_path / "homes"
    homes.mkdir()
    w = HubWorld(homes, IN_PROCESS_URL, inproc.transport)
    w.create()
    w.join("alice")
    w.nodes["alice"].remember("a memory so alice has a manifest")
    w.nodes["alice"].sync()
    return w


def test_a_join_post_with_a_lone_surrogate_is_refused_by_name(
    team: HubWorld, inproc: InProcess
) -> None:
    carol = MemberKey.generate()
    request = make_join_request(carol, team=TEAM, name="carol", invite_id=ANY_INVITE, now=1)
    before = inproc.dump()
    answer = inproc.client.post(
        f"/v1/teams/{TEAM}/requests/{carol.kid}", content=plant(request, b'"carol"')
    )
    assert (answer.status_code, answer.json()["error"]) == (422, "not-canonical")
    assert "surrogate" in answer.json()["detail"]
    assert inproc.dump() == before


@pytest.mark.slow
def test_a_roster_keyring_or_manifest_with_a_lone_surrogate_is_refused_by_name(
    team: HubWorld, inproc: InProcess
) -> None:
    admin, alice = team.nodes["admin"], team.nodes["alice"]
    [roster_v2] = admin.t.transport.rosters(1)
    [keyring] = admin.t.transport.keyrings(PROJECT)
    [manifest] = alice.t.transport.writer_manifests(PROJECT, alice.key.kid)
    bad_roster = plant(roster_v2, b'"alice"')  # a member name
    bad_keyring = plant(keyring, f'"{PROJECT}"'.encode())
    bad_manifest = plant(manifest, b'"sealmem/manifest/v1"')
    before = inproc.dump()

    path = f"/v1/teams/{TEAM}/rosters/3"
    body = json.dumps({"roster": b64e(bad_roster), "keyrings": []}).encode()
    answer = inproc.client.put(path, headers=signed(admin.key, "PUT", path, body), content=body)
    assert (answer.status_code, answer.json()["error"]) == (422, "not-canonical")

    path = f"/v1/teams/{TEAM}/keyrings/{PROJECT}/2"
    answer = inproc.client.put(
        path, headers=signed(admin.key, "PUT", path, bad_keyring), content=bad_keyring
    )
    assert (answer.status_code, answer.json()["error"]) == (422, "not-canonical")

    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/manifests/{alice.key.kid}/9"
    answer = inproc.client.put(
        path, headers=signed(alice.key, "PUT", path, bad_manifest), content=bad_manifest
    )
    assert (answer.status_code, answer.json()["error"]) == (422, "not-canonical")
    assert inproc.dump() == before
