"""Approving what ``admin requests`` showed approves every valid request shown, whatever else
lies in requests/.

The team folder is untrusted: a garbage file or a replayed request of a member
under a request-shaped name must not stop the admin approving a real newcomer.
"""

from __future__ import annotations

from pathlib import Path

from sealmem.client.sync.session import Team
from sealmem.client.team import admin, approval
from sealmem.client.team.invite import make_join_request, read_invite
from sealmem.client.team.join import join_team
from tests.sync.conftest import make_world


def test_approving_the_shown_set_skips_garbage_and_replayed_requests(tmp_path: Path) -> None:
    world = make_world(tmp_path, "alice")
    try:
        boss, alice = world.nodes["admin"], world.nodes["alice"]
        requests = world.folder / "sealmem" / boss.t.config.team / "requests"
        (requests / ("a" * 26 + ".json")).write_bytes(b"not a join request")
        assert boss.t.transport.requests() == {"a" * 26: b"not a join request"}
        dave = world.node("dave")
        inv = read_invite(admin.invite(boss.t, boss.clock()), now=dave.clock())
        join_team(dave.home, inv, dave.key, name="dave", now=dave.clock())
        # a member's valid request replayed, and dave's request under a name not its kid
        replayed = make_join_request(
            alice.key, team=boss.t.config.team, name="alice", invite_id=inv.invite_id, now=0
        )
        (requests / f"{alice.key.kid}.json").write_bytes(replayed)
        dave_request = (requests / f"{dave.key.kid}.json").read_bytes()
        (requests / ("b" * 26 + ".json")).write_bytes(dave_request)
        _, shown = approval.show_requests(boss.t, boss.clock())
        assert set(shown.requests) == {dave.key.kid}
        plan = approval.plan_shown(boss.t, shown, boss.clock())
        assert [v.kid for v in plan.approve] == [dave.key.kid]
        kids = [v.kid for v in plan.approve]
        done = approval.approve(
            boss.t, kids, projects=None, read=True, write=True, now=boss.clock(),
            expect=shown,
        )  # fmt: skip
        assert [a.kid for a in done] == [dave.key.kid]
        dave.team = Team.open(dave.home, dave.store, dave.key)
        dave.sync()
        assert dave.t.roster().can_read(dave.key.kid, "webapp")
    finally:
        world.close()
