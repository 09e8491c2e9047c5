"""Hostile cases against the hub's storage, through the real API.

Each fails on the first hub: a member filling the team's quota locked the
admin out of revoking it (507); a nonce was forgotten at restart; every start
deleted blobs no row named yet, whatever their age; chunks no manifest named
stayed until their writer collected them; a revoked writer's chunks stayed
for ever; one lock object per queried team id was kept for ever.
"""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path

import pytest

from sealmem.client.team import admin as team_admin
from sealmem.crypto import SUITE, MemberKey
from sealmem.hub.http.app import run_janitor
from sealmem.hub.storage.feed import Feed
from sealmem.protocol.snapshot import chunk_id

from .conftest import PROJECT, TEAM, hub_config, now_ms, signed
from .restartable import Hub, make_hub_fixture  # noqa: F401 - the make_hub fixture


@pytest.mark.slow
def test_a_member_filling_the_quota_cannot_stop_its_revocation(
    tmp_path: Path, make_hub: type[Hub]
) -> None:
    hub = make_hub(hub_config(tmp_path / "hub", team_quota_bytes=400_000, member_rate=1e6))
    world = hub.world()
    adm, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    codes = []
    for i in range(200):  # alice fills the team with chunks no manifest names
        response = hub.put_chunk(alice.key, os.urandom(8 * 1024) + bytes([i]))
        codes.append(response.status_code)
        if response.status_code != 201:
            break
    assert codes[-1] == 507

    team_admin.revoke(adm.t, "alice", keep_data=True, now=now_ms())  # still fits

    assert hub.storage.usage(TEAM) <= 400_000
    roster = adm.t.roster()
    assert roster.revocation(alice.key.kid) is not None
    bob.sync()
    assert bob.t.roster().revocation(alice.key.kid) is not None
    world.close()


@pytest.mark.slow
def test_a_replayed_request_is_refused_after_a_restart(tmp_path: Path, make_hub: type[Hub]) -> None:
    hub = make_hub(hub_config(tmp_path / "hub"))
    world = hub.world()
    alice = world.nodes["alice"].key
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/seqs"
    headers = signed(alice, "GET", path)
    assert hub.c.get(path, headers=headers).status_code == 200
    world.close()
    hub.stop()

    hub.start()
    replay = hub.c.get(path, headers=headers)

    assert (replay.status_code, replay.json().get("error")) == (401, "replayed")


def test_a_young_blob_no_row_names_survives_a_start(tmp_path: Path, make_hub: type[Hub]) -> None:
    config = hub_config(tmp_path / "hub")
    hub = make_hub(config)
    world = hub.world()
    alice = world.nodes["alice"]
    alice.remember("a note so that alice's slot has a directory")
    alice.sync()
    world.close()
    hub.stop()
    # another replica wrote this blob and has not committed its row yet
    slot = tmp_path / "hub" / "blobs" / TEAM / PROJECT / alice.key.kid
    in_flight = slot / chunk_id(SUITE, b"in flight")
    in_flight.write_bytes(b"in flight")

    hub.start()
    hub.stop()

    assert in_flight.exists()
    hub.start()
    old = time.time() - config.orphan_min_age_s - 5
    os.utime(in_flight, (old, old))
    assert run_janitor(hub.storage, config, now_ms()) == (0, 1)  # old enough: an orphan
    assert not in_flight.exists()


@pytest.mark.slow
def test_chunks_no_manifest_names_expire(tmp_path: Path, make_hub: type[Hub]) -> None:
    config = hub_config(tmp_path / "hub", unreferenced_ttl_s=300)
    hub = make_hub(config)
    world = hub.world()
    alice = world.nodes["alice"]
    alice.remember("a note alice pushes")
    alice.sync()
    stray = os.urandom(1000)
    assert hub.put_chunk(alice.key, stray).status_code == 201
    used = hub.storage.member_usage(TEAM, alice.key.kid)

    assert run_janitor(hub.storage, config, now_ms() + 60_000) == (0, 0)  # not yet
    assert run_janitor(hub.storage, config, now_ms() + 301_000) == (1, 0)

    assert hub.storage.member_usage(TEAM, alice.key.kid) == used - len(stray)
    assert hub.storage.missing_chunks(TEAM, PROJECT, alice.key.kid, [chunk_id(SUITE, stray)])
    world.nodes["bob"].sync()
    assert "a note alice pushes" in {
        m.content for m in world.nodes["bob"].store.recent(limit=100, all_projects=True)
    }
    world.close()


@pytest.mark.slow
def test_a_revoked_writers_unpinned_chunks_are_dropped(tmp_path: Path, make_hub: type[Hub]) -> None:
    hub = make_hub(hub_config(tmp_path / "hub"))
    world = hub.world()
    adm, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    alice.remember("alice's note, pinned by the revocation")
    alice.sync()
    stray = os.urandom(1000)
    assert hub.put_chunk(alice.key, stray).status_code == 201
    slot = tmp_path / "hub" / "blobs" / TEAM / PROJECT / alice.key.kid
    pinned = {p.name for p in slot.iterdir()} - {chunk_id(SUITE, stray)}
    assert pinned

    adm.sync()  # the admin has seen alice's newest manifest: the revocation pins it
    team_admin.revoke(adm.t, "alice", keep_data=True, now=now_ms())

    left = {p.name for p in slot.iterdir()}
    assert left == pinned  # the stray chunk went at once; the pinned snapshot stays
    assert not hub.storage.missing_chunks(TEAM, PROJECT, alice.key.kid, pinned)
    bob.sync()
    assert "alice's note, pinned by the revocation" in {
        m.content for m in bob.store.recent(limit=100, all_projects=True)
    }
    world.close()


@pytest.mark.slow
def test_queried_team_ids_leave_nothing_behind(tmp_path: Path, make_hub: type[Hub]) -> None:
    hub = make_hub(hub_config(tmp_path / "hub"))
    key = MemberKey.generate()
    for i in range(300):
        path = f"/v1/teams/no-such-team-{i}/projects/{PROJECT}/seqs"
        assert hub.c.get(path, headers=signed(key, "GET", path)).status_code == 404
    teams = hub.c.app.state.teams  # type: ignore[attr-defined]
    assert len(getattr(teams, "_locks", ())) == 0
    assert len(teams) == 0


@pytest.mark.slow
def test_a_feed_holds_nothing_for_a_team_nobody_waits_on() -> None:
    feed = Feed()
    for i in range(100):
        feed.event(f"team-{i}")  # a waiter that timed out dropped its event
    gc.collect()
    assert len(feed) == 0
    held = feed.event("t")
    feed.notify("t")
    assert held.is_set()


@pytest.mark.slow
def test_the_janitor_runs_by_itself(tmp_path: Path, make_hub: type[Hub]) -> None:
    config = hub_config(tmp_path / "hub", unreferenced_ttl_s=0.2, janitor_interval_s=0.1)
    hub = make_hub(config)
    world = hub.world()
    alice = world.nodes["alice"]
    stray = os.urandom(500)
    assert hub.put_chunk(alice.key, stray).status_code == 201
    cid = chunk_id(SUITE, stray)
    deadline = time.monotonic() + 10
    while not hub.storage.missing_chunks(TEAM, PROJECT, alice.key.kid, [cid]):
        assert time.monotonic() < deadline, "the janitor never expired the stray chunk"
        time.sleep(0.05)
    world.close()


@pytest.mark.slow
def test_the_janitor_outlives_an_unexpected_error(
    tmp_path: Path, make_hub: type[Hub], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One unexpected error in a janitor pass must not end the janitor for good
    (chunks would then pile up until the hub restarts)."""
    config = hub_config(tmp_path / "hub", unreferenced_ttl_s=0.2, janitor_interval_s=0.1)
    hub = make_hub(config)
    world = hub.world()
    alice = world.nodes["alice"]
    real = hub.storage.expire_unreferenced
    calls: list[int] = []

    def fails_once(stored_before_ms: int) -> int:
        calls.append(stored_before_ms)
        if len(calls) == 1:
            raise RuntimeError("an unexpected failure in one janitor pass")
        return real(stored_before_ms)

    monkeypatch.setattr(hub.storage, "expire_unreferenced", fails_once)
    stray = os.urandom(500)
    assert hub.put_chunk(alice.key, stray).status_code == 201
    cid = chunk_id(SUITE, stray)
    deadline = time.monotonic() + 10
    while not hub.storage.missing_chunks(TEAM, PROJECT, alice.key.kid, [cid]):
        assert time.monotonic() < deadline, f"the janitor stopped after {len(calls)} pass(es)"
        time.sleep(0.05)
    assert len(calls) >= 2
    world.close()
