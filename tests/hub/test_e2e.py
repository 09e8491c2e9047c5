"""End to end over a real uvicorn hub on 127.0.0.1: the sync engine with HubTransport."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest

from sealmem.client.sync.hub import HubTransport
from sealmem.client.sync.transport import ConflictError
from sealmem.client.team.invite import make_join_request
from sealmem.hub.http.server import BackgroundHub

from .conftest import BOTH_PATHS, METRICS_AUTH, PROJECT, TEAM, HubWorld, data_bytes

pytestmark = [pytest.mark.slow, BOTH_PATHS]

ANY_INVITE = "A" * 22  # the hub cannot know invites: any well-formed id passes


def test_a_memory_travels_through_the_hub_with_provenance(world: HubWorld) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    memory = alice.remember("the staging database is rebuilt every night at 02:00")
    pushed = alice.sync()
    assert pushed.pushed_versions == 1
    assert not pushed.refused
    pulled = bob.sync()
    assert not pulled.refused, pulled.to_dict()
    assert pulled.pulled_new == 1
    got = bob.store.get(memory.id)
    assert got.content == memory.content
    assert got.record.author == alice.key.kid
    assert got.provenance.transport == "hub"
    assert got.provenance.signer == alice.key.kid
    assert got.provenance.verified
    assert got.provenance.signer_name == "alice"


def test_the_hub_data_dir_holds_no_plaintext(world: HubWorld, hub: BackgroundHub) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    secret_words = ["zanzibarquokka", "periwinklefjord"]
    ids = [
        alice.remember(f"deploy rule about {secret_words[0]}", keywords=["quasarmarmot"]).id,
        bob.remember(f"incident lesson {secret_words[1]}", kind="lesson").id,
    ]
    world.sync_all()
    assert set(ids) <= set(world.nodes["admin"].team_ids())
    blob = data_bytes(hub.config.data_dir).lower()
    for needle in [*secret_words, "quasarmarmot", "deploy rule", "incident lesson", *ids]:
        assert needle.lower().encode() not in blob, needle
    # the hub does hold the ciphertext: the snapshots are there
    assert len(list((hub.config.data_dir / "blobs").rglob("*"))) > 3


def test_a_stale_push_gets_409_and_the_next_sync_completes(world: HubWorld) -> None:
    alice = world.nodes["alice"]
    alice.remember("first")
    alice.sync()
    transport = alice.t.transport
    [first] = transport.writer_manifests(PROJECT, alice.key.kid)
    transport.push(PROJECT, alice.key.kid, 1, first, {})  # the same manifest again: a no-op
    alice.remember("second")
    alice.sync()
    assert transport.newest_seqs(PROJECT) == {alice.key.kid: 2}
    kept = transport.writer_manifests(PROJECT, alice.key.kid)
    assert len(kept) == 2
    assert kept[1] == first
    assert transport.newest_manifest(PROJECT, alice.key.kid) == kept[0]
    with pytest.raises(ConflictError) as info:
        transport.push(PROJECT, alice.key.kid, 1, first, {})
    assert info.value.status == 409
    assert info.value.code == "rollback"
    alice.remember("third")
    assert alice.sync().pushed_versions == 1
    assert transport.newest_seqs(PROJECT) == {alice.key.kid: 3}


def test_the_change_feed_wakes_a_long_poll(world: HubWorld) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    feed = bob.t.transport
    assert isinstance(feed, HubTransport)
    cursor, _ = feed.feed(0, wait_s=0)
    assert cursor > 0
    result: list[tuple[int, list[dict[str, object]]]] = []
    waiter = threading.Thread(target=lambda: result.append(feed.feed(cursor, wait_s=25)))
    waiter.start()
    time.sleep(0.3)
    alice.remember("wake up bob")
    alice.sync()
    waiter.join(timeout=60)
    [(new_cursor, changes)] = result  # woken by alice's push: a timeout brings no change
    assert new_cursor > cursor
    assert {"kind": "manifest", "project": PROJECT, "writer": alice.key.kid}.items() <= changes[
        -1
    ].items()
    again, nothing = feed.feed(new_cursor, wait_s=0)
    assert again == new_cursor
    assert nothing == []


def test_wait_for_change_follows_the_feed_but_not_our_own_pushes(world: HubWorld) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    hub = bob.t.transport
    me = bob.key.kid
    cursor, changed = hub.wait_for_change(None, 10, ignore_writer=me)
    assert changed is False
    bob.remember("bob's own note")
    bob.sync()
    started = time.monotonic()
    cursor, changed = hub.wait_for_change(cursor, 1.0, ignore_writer=me)
    assert changed is False  # our own push moved the feed, but is not a change
    assert time.monotonic() - started >= 0.9  # and it went on waiting
    result: list[tuple[str, bool]] = []
    waiter = threading.Thread(
        target=lambda: result.append(hub.wait_for_change(cursor, 10, ignore_writer=me))
    )
    waiter.start()
    time.sleep(0.3)
    alice.remember("alice publishes while bob waits")
    alice.sync()
    waiter.join(timeout=15)
    [(cursor, changed)] = result
    assert changed is True
    alice.remember("alice publishes while nobody waits")
    alice.sync()
    assert hub.wait_for_change(cursor, 0, ignore_writer=me)[1] is True


def test_healthz_and_metrics(world: HubWorld, hub: BackgroundHub) -> None:
    world.nodes["alice"].remember("metrics")
    world.sync_all(1)
    assert httpx.get(hub.url + "/healthz").json() == {"ok": True}
    text = httpx.get(hub.url + "/metrics", headers=METRICS_AUTH).text
    assert "# TYPE sealmem_hub_requests_total counter" in text
    assert 'route="/v1/teams/{team}/projects/{project}/manifests/{writer}/{seq:int}"' in text
    assert "sealmem_hub_teams 1" in text
    assert TEAM not in text  # labels are route templates, never ids


def test_team_status_lists_join_requests_on_the_hub(world: HubWorld, tmp_path: Path) -> None:
    carol = world.node("carol")
    transport = HubTransport(world.location, TEAM, carol.key)
    request = make_join_request(carol.key, team=TEAM, name="carol", invite_id=ANY_INVITE, now=1)
    transport.post_request(carol.key.kid, request)
    admin = world.nodes["admin"]
    assert carol.key.kid in admin.t.transport.requests()
    assert any("join request" in alarm for alarm in admin.t.status()["alarms"])
    transport.close()
