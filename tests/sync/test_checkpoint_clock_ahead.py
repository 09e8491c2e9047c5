"""An admin whose clock runs days ahead does not keep the other admins' checkpoints out.

Its checkpoints are refused by every other member (``clock-ahead``), yet each took the
next seq: another admin that signs "the seq after the newest it accepted" met that seq
taken at every sync ("another admin signed at the same time"), and the members went
stale past the stop age although an honest admin synced every day.  That admin now
signs above a seq another admin took.  Real members, real stores, one folder.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from sealmem.client.sync.engine import sync
from sealmem.client.team import admin
from sealmem.client.team.publish import admin_state, change
from sealmem.protocol import reasons
from sealmem.protocol.roster import Roster
from tests.sync.conftest import DAY_MS, World

pytestmark = pytest.mark.slow
HOUR_MS = DAY_MS // 24


def test_an_admin_with_a_fast_clock_does_not_stall_the_team(world: World) -> None:
    adm, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]

    def promote(draft: Roster) -> Roster:  # alice becomes a second admin
        members = tuple(
            replace(m, role="admin") if m.kid == alice.key.kid else m for m in draft.members
        )
        return replace(draft, members=members, admins=(*draft.admins, alice.key.kid))

    state, _ = admin_state(adm.t, adm.clock())
    change(adm.t, state, [promote], adm.clock())
    admin.checkpoint(adm.t, now=adm.clock(), warn_after_ms=DAY_MS, stop_after_ms=3 * DAY_MS)
    world.sync_all(1)
    assert alice.t.roster().is_admin(alice.key.kid)

    def ahead() -> int:  # alice's clock: three days fast
        return alice.clock() + 3 * DAY_MS

    sync(alice.t, clock=ahead)  # she signs the next seq, dated three days ahead
    for hours in (13, 37, 61, 85):  # later: the admin syncs about twice a day
        later = hours * HOUR_MS
        sync(alice.t, clock=lambda later=later: ahead() + later)
        summary = sync(adm.t, clock=lambda later=later: adm.clock() + later)
        assert not [w for w in summary.warnings if "another admin" in w], summary.warnings

    bob.remember("bob's note, four days on")
    summary = sync(bob.t, clock=lambda: bob.clock() + 85 * HOUR_MS)
    assert not [w for w in summary.warnings if w.startswith("stale:")], summary.warnings
    assert summary.pushed_versions == 1
    ahead_refused = [r for r in summary.refused if r.reason == reasons.CLOCK_AHEAD]
    assert all("alice" in r.detail for r in ahead_refused)
