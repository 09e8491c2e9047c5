"""A transport that withholds or replays is caught: real members, real stores, one folder.

- **frozen revocation**: the folder keeps from alice the roster that revokes carol; the
  admin's verified manifest (and checkpoint) cite it, so alice stops publishing under
  the old epoch (which carol's kept key opens) and says why, in sync and in status;
- **replay to a newcomer**: a newcomer shown alice's seq-1 snapshot, although bob's
  signed manifest witnessed her seq 2, refuses it as ``behind-witness``; the text alice
  forgot in between never reaches the newcomer's store;
- **ages**: past the team's warn age members are told, past its stop age they stop.
"""

from __future__ import annotations

import dataclasses
import json

import anyio
import pytest
from mcp.client.client import Client
from mcp_types import TextContent

from sealmem.client.mcp.server import create_server
from sealmem.client.sync import freshness
from sealmem.client.sync.engine import sync
from sealmem.client.sync.session import Team, sync_health
from sealmem.client.team import admin
from sealmem.client.ui.views import team_page
from sealmem.protocol import reasons
from sealmem.protocol.manifest import peek
from tests.support.cli import in_process
from tests.support.withholding import capture, replay, withhold_rosters
from tests.sync.conftest import DAY_MS, PROJECT, Node, World

pytestmark = pytest.mark.slow

SECRET = "the staging database password rotates on fridays, ask ops for it"


def _hostile(node: Node) -> Team:
    """``node``'s team session over its own copy of the transport (patched by the test)."""
    return dataclasses.replace(
        node.t, transport=Team.open(node.home, node.store, node.key).transport
    )


def _mcp_status_alarms(node: Node, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The alarms the MCP ``status`` tool answers an agent in ``node``'s home."""
    monkeypatch.setenv("SEALMEM_HOME", str(node.home))
    found: list[str] = []

    async def session() -> None:
        async with Client(create_server(project=PROJECT)) as client:
            result = await client.call_tool("status", {})
            text = "".join(b.text for b in result.content if isinstance(b, TextContent))
            found.extend(json.loads(text)["sync"]["alarms"])

    anyio.run(session)
    return found


def _holds_text(node: Node, text: str) -> bool:
    conn = node.store.connection
    return any(
        conn.execute(
            f"SELECT COUNT(*) FROM {table} WHERE {column} LIKE ?", (f"%{text}%",)
        ).fetchone()[0]
        for table, column in (("memories", "content"), ("history", "record_json"))
    )


@pytest.mark.parametrize("checkpoint", ["old", "honest"])
def test_a_withheld_revocation_stops_publishing_under_the_old_epoch(
    world: World, checkpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    adm, alice = world.nodes["admin"], world.nodes["alice"]
    alice.remember("alice's first note")
    world.sync_all(2)
    trusted = alice.t.roster().version
    old = alice.t.transport.checkpoint()
    assert old is not None  # the admin's syncs signed one
    hostile = _hostile(alice)
    withhold_rosters(
        hostile.transport, trusted, checkpoint=old if checkpoint == "old" else "honest"
    )

    admin.revoke(adm.t, "carol", now=adm.clock())
    adm.remember("the admin's note after revoking carol")
    adm.sync()  # pushes a manifest citing the new roster, signs a new checkpoint

    seqs_before = alice.t.transport.newest_seqs(PROJECT)
    alice.remember("alice's note after the revocation, carol must not read it")
    summary = sync(hostile, clock=alice.clock)
    assert summary.pushed_versions == 0
    assert alice.t.transport.newest_seqs(PROJECT) == seqs_before  # nothing published
    frozen = [w for w in summary.warnings if w.startswith("frozen:")]
    assert len(frozen) == 1, summary.warnings
    assert f"roster v{trusted + 1}" in frozen[0]
    assert f"up to v{trusted}" in frozen[0]
    assert "sync again" in frozen[0]
    assert any(
        a.startswith("frozen:") for a in sync_health(alice.home, alice.store.connection)["alarms"]
    )
    assert alice.t.roster().version == trusted  # still reading and working locally
    assert any(a.startswith("frozen:") for a in _mcp_status_alarms(alice, monkeypatch))
    page = team_page(alice.home, alice.store)  # the viewer's team page
    assert any(a.startswith("frozen:") for a in page["health"]["alarms"])
    assert any("carol must not read" in m.record.content for m in alice.memories().values())

    # the roster arrives: the next sync through the honest folder publishes again
    summary = alice.sync()
    assert summary.pushed_versions >= 1, summary.warnings
    assert not [w for w in summary.warnings if w.startswith("frozen:")]
    assert freshness.alarm(alice.store.connection, alice.clock()) is None


def test_a_newcomer_refuses_a_replay_below_what_a_teammate_witnessed(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    note = alice.remember(SECRET)
    alice.sync()  # seq 1 holds the text
    seq1 = capture(alice.t.transport, PROJECT, alice.key.kid)
    alice.store.forget(note.id, reason="a secret does not belong in team memory")
    alice.sync()  # seq 2: the tombstone
    bob.remember("bob's note, which makes bob publish again")
    bob.sync()  # bob accepts alice's seq 2 and witnesses it
    (dave,) = world.add_members("dave")
    hostile = _hostile(dave)
    replay(hostile.transport, PROJECT, alice.key.kid, *seq1)

    summary = sync(hostile, clock=dave.clock)
    refused = [r for r in summary.refused if r.object.startswith(f"manifest {alice.key.kid[:8]}")]
    assert [r.reason for r in refused] == [reasons.BEHIND_WITNESS], summary.refused
    assert "seq 2" in refused[0].detail
    assert bob.key.kid in refused[0].detail
    assert not _holds_text(dave, "staging database password")
    assert dave.t.trusted().head(alice.key.kid, PROJECT) is None  # never merged
    assert dave.written_by(bob) >= 1  # the rest of the sync went on

    summary = dave.sync()  # the honest folder: alice's seq 2 is taken
    assert dave.t.trusted().head(alice.key.kid, PROJECT).seq == 2
    assert not _holds_text(dave, "staging database password")


def test_members_are_told_past_the_warn_age_and_stop_past_the_stop_age(world: World) -> None:
    adm, alice = world.nodes["admin"], world.nodes["alice"]
    world.sync_all(1)
    admin.checkpoint(adm.t, now=adm.clock(), warn_after_ms=DAY_MS, stop_after_ms=3 * DAY_MS)
    alice.remember("a note before the admin goes on holiday")

    summary = sync(alice.t, clock=lambda: alice.clock() + 2 * DAY_MS)
    assert summary.pushed_versions == 1
    told = [w for w in summary.warnings if "checkpoint is" in w]
    assert len(told) == 1
    assert "2 days old" in told[0]
    assert "second admin" in told[0]

    alice.remember("a note while the admin is still away")
    summary = sync(alice.t, clock=lambda: alice.clock() + 4 * DAY_MS)
    assert summary.pushed_versions == 0
    stale = [w for w in summary.warnings if w.startswith("stale:")]
    assert len(stale) == 1, summary.warnings
    assert "4 days old" in stale[0]
    alarms = sync_health(alice.home, alice.store.connection)["alarms"]
    assert any(a.startswith("stale:") for a in alarms)

    adm.sync()  # the admin is back: the checkpoint is re-signed, alice publishes again
    summary = alice.sync()
    assert summary.pushed_versions == 1, summary.warnings


def test_a_roster_published_during_the_sync_is_read_again_not_called_frozen(
    world: World,
) -> None:
    adm, alice = world.nodes["admin"], world.nodes["alice"]
    world.sync_all(1)
    trusted = alice.t.roster().version
    late = _hostile(alice)
    rosters, calls = late.transport.rosters, []

    def first_without_the_new_one(after: int) -> list[bytes]:
        calls.append(after)
        return [] if len(calls) == 1 else rosters(after)

    late.transport.rosters = first_without_the_new_one  # type: ignore[method-assign]
    admin.revoke(adm.t, "carol", now=adm.clock())
    adm.sync()  # the checkpoint now cites the new roster
    alice.remember("alice's note, written under the new epoch")

    summary = sync(late, clock=alice.clock)
    assert not [w for w in summary.warnings if w.startswith("frozen:")], summary.warnings
    assert calls == [trusted, trusted]  # read once more after the checkpoint cited v+1
    assert summary.pushed_versions == 1
    assert alice.t.roster().version == trusted + 1
    head = alice.t.transport.newest_manifest(PROJECT, alice.key.kid)
    assert head is not None
    assert peek(head).epoch == alice.t.roster().projects[PROJECT]  # the new epoch


def test_admin_checkpoint_sets_the_team_ages_and_members_follow_them(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = world.nodes["alice"]
    world.sync_all(1)
    monkeypatch.setenv("SEALMEM_HOME", str(world.nodes["admin"].home))
    run = in_process(capsys, monkeypatch)
    done = run("admin", "checkpoint", "--warn-after", "2", "--stop-after", "5", "--json")
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert (doc["warn_after_hours"], doc["stop_after_hours"]) == (2, 5)
    assert doc["checkpoint"] >= 2  # the admin's syncs signed the first one
    bad = run("admin", "checkpoint", "--stop-after", "0")
    assert bad.code != 0
    assert "--stop-after 0 hours is out of range" in bad.err

    alice.remember("a note three hours later")
    summary = sync(alice.t, clock=lambda: alice.clock() + 3 * 3_600_000)
    assert summary.pushed_versions == 1
    assert any("team warns after 2 hours" in w for w in summary.warnings), summary.warnings
