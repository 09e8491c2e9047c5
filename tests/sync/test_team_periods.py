"""The periods the team sets (issue 26 item 1, issue 29 item 5; SPEC "Team settings").

An admin sets the review period and the stale period with ``sealmem admin settings``; the
new roster carries them to every member, over a real shared folder and a real uvicorn hub
on 127.0.0.1, each member with its own home.  On bob's machine a member approved after
the setting stays in review for the team's 2 days, then is trusted; bob's own period wins
over the team's; a memory no one confirmed for 31 days is stale under the team's 30 days.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from sealmem.client import MemoryStore
from sealmem.client.recall.standing import member_states
from sealmem.client.sync.hub import HubTransport
from sealmem.hub.http.server import BackgroundHub, free_port
from tests.hub.conftest import TEAM, TOKEN, HubWorld, hub_config
from tests.support.cli import Run, per_home

from .conftest import DAY_MS, PROJECT, make_world

pytestmark = pytest.mark.slow


class Member(Protocol):
    home: Path
    store: MemoryStore

    @property
    def key(self) -> Any: ...


class Team(Protocol):
    nodes: Any

    def sync_all(self, rounds: int = 2) -> None: ...


def _now() -> int:
    return time.time_ns() // 1_000_000


@pytest.fixture(params=["folder", "hub"])
def setup(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Team, Callable[[str], Any], Path]]:
    """(the team of admin, alice and bob; add(name): approve one more member; homes root)."""
    if request.param == "folder":
        world = make_world(tmp_path, "alice", "bob")
        try:
            yield world, lambda name: world.add_members(name)[0], tmp_path
        finally:
            world.close()
        return
    config = hub_config(tmp_path / "hub-data", port=free_port())
    with BackgroundHub(config) as hub:
        homes = tmp_path / "homes"
        homes.mkdir()
        hw = HubWorld(
            homes, hub.url, lambda k: HubTransport(hub.url, TEAM, k, operator_token=TOKEN)
        )
        hw.create()
        hw.join("alice", "bob")
        try:
            yield hw, lambda name: hw.join(name)[0], homes
        finally:
            hw.close()


def _old_memory(node: Member, text: str, days: int) -> str:
    """``text`` remembered by ``node`` ``days`` days ago (its clock then), in its project."""
    when = _now() - days * DAY_MS
    with MemoryStore.open(node.home / "store.db", author=node.key.kid, clock=lambda: when) as s:
        return s.remember(text, project=PROJECT).memory.id


def _state(node: Member, member: Member, at: int) -> str:
    return member_states(node.store.connection, node.key.kid, at)[member.key.kid]


def test_the_team_sets_the_periods_and_a_local_setting_wins(
    setup: tuple[Team, Callable[[str], Any], Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    team, add, root = setup
    cli: Callable[..., Run] = per_home(root, capsys, monkeypatch)
    _admin, alice, bob = (team.nodes[n] for n in ("admin", "alice", "bob"))
    old = _old_memory(alice, "The nightly export lands in s3://exports/nightly", days=31)
    recent = _old_memory(alice, "The weekly report is mailed on Mondays by cron", days=29)
    shown = cli("admin", "admin", "settings", "--json").json()
    assert (shown["review_days"], shown["stale_days"]) == (
        {"days": 7, "set": False},
        {"days": 180, "set": False},
    )
    done = cli("admin", "admin", "settings", "--review-days", "2", "--stale-days", "30", "--json")
    assert (done.json()["review_days"], done.json()["stale_days"]) == (
        {"days": 2, "set": True},
        {"days": 30, "set": True},
    )
    shown = cli("admin", "admin", "settings").out  # named as the commands that set one's own
    assert "trust review period: 2 days (team setting)" in shown, shown
    assert "review (stale) period: 30 days (team setting)" in shown, shown
    refused = cli("admin", "admin", "settings", "--review-days", "366", code=1)
    assert "review_days 366 is outside 0..365 days" in refused.err
    assert cli("alice", "admin", "settings", "--stale-days", "5", code=1).err  # not an admin
    team.sync_all(rounds=2)
    eve = add("eve")
    eve.remember("Run scripts/warm.py after every deploy", kind="lesson")
    team.sync_all(rounds=2)

    assert cli("bob", "trust", "period", "--json").json() == {
        "review_days": 2,
        "days": 2,
        "set_by": "team",
        "team_days": 2,
    }
    now = _now()
    assert _state(bob, eve, now) == "review"
    assert _state(bob, eve, now + 2 * DAY_MS + 60_000) == "trusted"  # the team's 2 days
    listed = {
        m["name"]: m["state"] for m in cli("bob", "trust", "list", "--json").json()["members"]
    }
    assert listed["eve"] == "review"

    cli("bob", "trust", "period", "10")  # bob's own period wins over the team's
    assert (
        "10 days (your setting on this machine; the team's is 2)"
        in cli("bob", "trust", "period").out
    )
    assert _state(bob, eve, now + 3 * DAY_MS) == "review"
    assert _state(bob, eve, now + 10 * DAY_MS + 60_000) == "trusted"
    assert _state(alice, eve, now + 3 * DAY_MS) == "trusted"  # alice keeps the team's
    cli("bob", "trust", "period", "--team")
    assert _state(bob, eve, now + 3 * DAY_MS) == "trusted"

    stale = {m.id for m, _ in bob.store.stale(all_projects=True)}
    assert old in stale
    assert recent not in stale
    review = cli("bob", "review", "--all-projects", "--json").json()
    assert review["period_days"] == 30
    assert [r["id"] for r in review["stale"]] == [old]
    cli("bob", "review", "period", "60")  # bob's own stale period wins too
    assert bob.store.stale(all_projects=True) == []
    status = cli("bob", "status", "--json").json()
    assert status["periods"]["review_days"] == {"days": 2, "set_by": "team", "team_days": 2}
    assert status["periods"]["stale_days"] == {"days": 60, "set_by": "local", "team_days": 30}
    assert (
        "periods:   review 2 days (team), stale 60 days (yours here; team 30)"
        in cli("bob", "status").out
    )
    page = _viewer_page(bob.home, "/team")
    assert "stays in review for 2 days (the team setting)" in page
    assert "stale after 60 days (your setting on this machine; the team&#39;s is 30)" in page


def _viewer_page(home: Path, path: str) -> str:
    from starlette.testclient import TestClient

    from sealmem.client.ui.app import allowed_hosts, create_app
    from sealmem.client.ui.guard import Secrets

    secrets, base = Secrets(), "http://127.0.0.1:8765"
    client = TestClient(
        create_app(home, secrets, allowed_hosts(8765)), base_url=base, follow_redirects=False
    )
    assert client.get(f"/?token={secrets.token}").status_code == 200
    page = client.get(path)
    assert page.status_code == 200
    return page.text
