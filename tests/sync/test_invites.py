"""Invites with an id, an expiry and an optional single-use name, through the real CLI
over a real shared folder: the joiner refuses a stale invite, the admin refuses
requests that answer no invite it issued, an expired one, a used one, or one
for another name, and says which."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sealmem.client import MemoryStore
from sealmem.client.cli.team import parse_duration
from sealmem.client.identity import load_member_key
from sealmem.client.sync.session import Team
from sealmem.client.team import admin
from sealmem.client.team.invite import INVITE_PREFIX, make_join_request, read_invite
from sealmem.client.team.join import join_team
from sealmem.client.team.registry import load_registry
from sealmem.crypto import MemberKey
from sealmem.protocol.encoding import b64e
from sealmem.protocol.envelope import seal
from sealmem.protocol.errors import InputError
from sealmem.protocol.invite import DAY_MS
from tests.support.cli import Run, per_home

Cli = Callable[..., Run]


def _now() -> int:
    return time.time_ns() // 1_000_000


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """``cli(who, *args)``: the sealmem CLI in the home ``tmp_path/who``, checked exit code."""
    return per_home(tmp_path, capsys, monkeypatch)


@pytest.fixture
def team_id(cli: Cli, tmp_path: Path) -> str:
    folder = tmp_path / "nas"
    folder.mkdir()
    made = cli("admin", "team", "create", "Acme", "--folder", str(folder), "--json").json()
    return str(made["team"])


def _requests(cli: Cli) -> dict[str, dict[str, Any]]:
    return {r["kid"]: r for r in cli("admin", "admin", "requests", "--json").json()["requests"]}


def _plant(tmp_path: Path, team: str, key: MemberKey, data: bytes) -> None:
    (tmp_path / "nas" / "sealmem" / team / "requests" / f"{key.kid}.json").write_bytes(data)


def _admin_team(tmp_path: Path, store: MemoryStore) -> Team:
    home = tmp_path / "admin"
    return Team.open(home, store, load_member_key(home))


@pytest.mark.slow
def test_a_single_use_invite_admits_its_one_member_and_an_open_one_several(
    cli: Cli, team_id: str, tmp_path: Path
) -> None:
    before = _now()
    made = cli("admin", "team", "invite", "--for", "alice", "--expires", "2d", "--json").json()
    assert made["for"] == "alice"
    assert before + 2 * DAY_MS <= made["expires_at"] <= _now() + 2 * DAY_MS
    alice = cli("alice", "team", "join", made["invite"], "--json").json()  # name from the invite
    assert (alice["name"], alice["invite_id"]) == ("alice", made["invite_id"])
    refused = cli("bob", "team", "join", made["invite"], "--name", "bob", code=1)
    assert "this invite is for 'alice'" in refused.err
    assert not (tmp_path / "bob" / "team.json").exists()

    # mallory copies the invite id and the name; until alice is approved both look valid
    mallory = MemberKey.generate()
    request = make_join_request(
        mallory, team=team_id, name="alice", invite_id=made["invite_id"], now=_now()
    )
    _plant(tmp_path, team_id, mallory, request)
    waiting = _requests(cli)
    assert {k: r.get("refused") for k, r in waiting.items()} == {
        alice["kid"]: None,
        mallory.kid: None,
    }
    assert waiting[alice["kid"]]["fingerprint"] == alice["fingerprint"]
    # two waiting requests named alice: the admin cannot tell them apart by name
    clash = cli("admin", "admin", "approve", alice["kid"], code=1)
    assert f"looks like the waiting request of 'alice' ({mallory.kid[:8]})" in clash.err
    assert "admin reject" in clash.err
    cli("admin", "admin", "reject", mallory.kid)
    cli("admin", "admin", "approve", alice["kid"])
    assert load_registry(tmp_path / "admin")[made["invite_id"]].used_by == (alice["kid"],)
    _plant(tmp_path, team_id, mallory, request)  # posted again
    assert _requests(cli)[mallory.kid]["refused"] == "invite-used"
    again = cli("admin", "admin", "approve", mallory.kid, code=1)
    assert "invite-used" in again.err

    # an open invite lets bob in; approving what was shown skips mallory and approves bob
    opened = cli("admin", "team", "invite", "--json").json()
    assert opened["for"] is None
    bob = cli("bob", "team", "join", opened["invite"], "--name", "bob", "--json").json()
    assert _requests(cli)[bob["kid"]].get("refused") is None
    done = cli("admin", "admin", "approve", "--yes", "--json").json()
    assert [a["kid"] for a in done["approved"]] == [bob["kid"]]
    assert done["left_waiting"] == [{"kid": mallory.kid, "name": "alice"}]
    cli("admin", "remember", "deploys go out on Tuesdays", "--kind", "decision")
    cli("admin", "sync")
    for who in ("alice", "bob"):
        cli(who, "sync")
        hits = cli(who, "recall", "when do deploys go out", "--json").json()
        assert "Tuesdays" in str(hits)


@pytest.mark.slow
def test_an_expired_a_1970_or_an_old_invite_is_refused_at_join(
    cli: Cli, team_id: str, tmp_path: Path
) -> None:
    with MemoryStore.open(tmp_path / "admin" / "store.db") as store:
        boss = _admin_team(tmp_path, store)
        try:
            from_1970 = admin.invite(boss, 0)
            last_week = admin.invite(boss, _now() - 8 * DAY_MS)
        finally:
            boss.transport.close()
    for text in (from_1970, last_week):
        done = cli("carol", "team", "join", text, "--name", "carol", code=1)
        assert "expired" in done.err, done
        assert "ask the admin for a new one" in done.err, done
    key = load_member_key(tmp_path / "admin")
    old = {
        "format": "sealmem/invite/v1", "team": team_id, "root_public": b64e(key.sign_public),
        "root_box_public": b64e(key.box_public), "location": str(tmp_path / "nas"),
        "transport": "folder", "created_at": _now(),
    }  # fmt: skip
    done = cli("carol", "team", "join", INVITE_PREFIX + b64e(seal(old, "invite", key)), code=1)
    assert "older sealmem" in done.err, done
    assert "new invite" in done.err, done
    assert not (tmp_path / "carol" / "team.json").exists()
    requests = tmp_path / "nas" / "sealmem" / team_id / "requests"
    assert not requests.exists() or list(requests.iterdir()) == []


@pytest.mark.slow
def test_requests_answering_no_valid_invite_are_refused_by_name(
    cli: Cli, team_id: str, tmp_path: Path
) -> None:
    now = _now()
    with MemoryStore.open(tmp_path / "admin" / "store.db") as store:
        boss = _admin_team(tmp_path, store)
        try:
            # valid for a day, three days ago: dave joined in time, nobody approved
            stale = admin.invite(boss, now - 3 * DAY_MS, lifetime_ms=DAY_MS)
            for_carol = admin.invite(boss, now, for_name="carol")
            version = boss.roster().version
        finally:
            boss.transport.close()
    dave = tmp_path / "dave"
    dave.mkdir()
    dave_key = load_member_key(dave)
    join_team(dave, read_invite(stale, now=now - 3 * DAY_MS + 1), dave_key, name="dave", now=now)
    # the joiner refuses another name for a --for invite; a hand-made request is the admin's
    eve, zed, old = MemberKey.generate(), MemberKey.generate(), MemberKey.generate()
    carol_id = read_invite(for_carol, now=now).invite_id
    _plant(tmp_path, team_id, eve, make_join_request(
        eve, team=team_id, name="eve", invite_id=carol_id, now=now))  # fmt: skip
    _plant(tmp_path, team_id, zed, make_join_request(
        zed, team=team_id, name="zed", invite_id=b64e(bytes(16)), now=now))  # fmt: skip
    v1 = {
        "format": "sealmem/join/v1", "team": team_id, "kid": old.kid, "name": "old",
        "sign_public": b64e(old.sign_public), "box_public": b64e(old.box_public),
        "created_at": now,
    }  # fmt: skip
    _plant(tmp_path, team_id, old, seal(v1, "join", old))

    waiting = _requests(cli)
    assert {k: r["refused"] for k, r in waiting.items()} == {
        dave_key.kid: "invite-expired",
        eve.kid: "invite-name-mismatch",
        zed.kid: "invite-unknown",
        old.kid: "unknown-format",
    }
    assert "send them a new invite" in waiting[dave_key.kid]["detail"]
    shown = cli("admin", "admin", "requests").out
    assert "refused: invite-name-mismatch" in shown
    assert "--name 'carol'" in shown
    assert "can be approved now" in cli("admin", "admin", "approve", "--yes", code=1).err
    for kid in waiting:
        done = cli("admin", "admin", "approve", kid, code=1)
        assert waiting[kid]["refused"] in done.err
    assert cli("admin", "team", "status", "--json").json()["roster_version"] == version


@pytest.mark.slow
@pytest.mark.parametrize("text", ["31d", "0d", "7", "d", "-1d", "1w", "1.5d"])
def test_invite_lifetimes_out_of_range_are_refused(
    cli: Cli, team_id: str, tmp_path: Path, text: str
) -> None:
    done = cli("admin", "team", "invite", "--expires", text, code=1)
    assert "--expires" in done.err
    assert load_registry(tmp_path / "admin") == {}


def test_durations_parse_to_milliseconds() -> None:
    assert [parse_duration(t) for t in ("7d", "12h", "90m", " 2D ")] == [
        7 * DAY_MS, 12 * 3_600_000, 90 * 60_000, 2 * DAY_MS,
    ]  # fmt: skip
    with pytest.raises(InputError, match="not a duration"):
        parse_duration("soon")


def test_an_invite_is_recorded_in_the_admins_private_registry(
    cli: Cli, team_id: str, tmp_path: Path
) -> None:
    made = cli("admin", "team", "invite", "--expires", "12h", "--json").json()
    assert made["expires_at"] - _now() <= 12 * 3_600_000
    assert set(load_registry(tmp_path / "admin")) == {made["invite_id"]}
    assert not (tmp_path / "admin" / "invites.json").stat().st_mode & 0o077
