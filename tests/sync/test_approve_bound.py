"""Approving binds to what the admin saw, through the real CLI over a real shared folder.

``admin approve`` with no argument approves exactly the requests the last
``admin requests`` showed: a stranger who posts in between waits.  Requests are
chosen by name or id, names that look alike are refused unless renamed
(``--as``), ``admin reject`` removes requests, ``admin grant`` does not invent
a project by a typo, and a key issued with ``admin issue carol`` joins as carol.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sealmem.client import MemoryStore
from sealmem.client.identity import load_member_key
from sealmem.client.sync.session import Team
from sealmem.client.team import admin
from sealmem.client.team.inbox import SHOWN_FILE, SHOWN_MAX_AGE_MS
from sealmem.client.team.invite import make_join_request, read_invite
from sealmem.crypto import KDF_INTERACTIVE
from sealmem.protocol.invite import DAY_MS
from tests.support.cli import Run, per_home

Cli = Callable[..., Run]
PASSPHRASE = "correct horse battery staple"


def _now() -> int:
    return time.time_ns() // 1_000_000


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """``cli(who, *args)``: the sealmem CLI in the home ``tmp_path/who``, checked exit code."""
    return per_home(tmp_path, capsys, monkeypatch)


@pytest.fixture
def invite(cli: Cli, tmp_path: Path) -> str:
    """A team in ``tmp_path/nas`` (projects webapp and shared) and an open invite to it."""
    (tmp_path / "nas").mkdir()
    cli("admin", "team", "create", "Acme", "--folder", str(tmp_path / "nas"))
    return str(cli("admin", "team", "invite", "--json").json()["invite"])


def _join(cli: Cli, invite: str, who: str, name: str | None = None) -> dict[str, Any]:
    return dict(cli(who, "team", "join", invite, "--name", name or who, "--json").json())


def _waiting(cli: Cli) -> dict[str, dict[str, Any]]:
    return {r["kid"]: r for r in cli("admin", "admin", "requests", "--json").json()["requests"]}


def _members(cli: Cli) -> dict[str, str]:
    doc = cli("admin", "team", "status", "--json").json()
    return {m["kid"]: m["name"] for m in doc["members"]}


@pytest.mark.slow
def test_a_request_posted_after_admin_requests_is_not_approved(cli: Cli, invite: str) -> None:
    alice = _join(cli, invite, "alice")
    shown = cli("admin", "admin", "requests").out
    assert "alice" in shown
    assert alice["fingerprint"] in shown
    assert "ok" in shown
    mallory = _join(cli, invite, "mallory")  # anyone with the folder (or the hub) can post

    done = cli("admin", "admin", "approve", "--yes", "--json").json()
    assert [a["kid"] for a in done["approved"]] == [alice["kid"]]
    assert done["left_waiting"] == [{"kid": mallory["kid"], "name": "mallory"}]
    members = _members(cli)
    assert alice["kid"] in members
    assert mallory["kid"] not in members
    assert set(_waiting(cli)) == {mallory["kid"]}  # the stranger still waits
    cli("alice", "sync")
    assert cli("alice", "team", "status", "--json").json()["my_access"]["webapp"]["key"]


@pytest.mark.slow
def test_approve_with_no_argument_needs_a_recent_listing_and_a_confirmation(
    cli: Cli, invite: str, tmp_path: Path
) -> None:
    alice = _join(cli, invite, "alice")
    never = cli("admin", "admin", "approve", "--yes", code=1)
    assert "run 'sealmem admin requests'" in never.err
    cli("admin", "admin", "requests")
    asked = cli("admin", "admin", "approve", code=1)  # no terminal to ask, no --yes
    assert "confirm with --yes" in asked.err
    assert f"alice ({alice['kid']})" in asked.err  # it says what it would approve
    record = tmp_path / "admin" / SHOWN_FILE
    assert not record.stat().st_mode & 0o077
    doc = json.loads(record.read_text())
    assert list(doc["requests"]) == [alice["kid"]]
    doc["shown_at"] -= SHOWN_MAX_AGE_MS + 60_000
    record.write_text(json.dumps(doc))
    stale = cli("admin", "admin", "approve", "--yes", code=1)
    assert "more than 60 minutes" in stale.err
    assert list(_members(cli)) == [load_member_key(tmp_path / "admin").kid]  # nothing changed


@pytest.mark.slow
def test_a_request_changed_since_it_was_shown_is_left_waiting(
    cli: Cli, invite: str, tmp_path: Path
) -> None:
    alice = _join(cli, invite, "alice")
    # the folder now serves another request signed by the same key (an older one, replayed)
    key = load_member_key(tmp_path / "alice")
    team = cli("admin", "team", "status", "--json").json()["team"]
    invite_id = _waiting(cli)[alice["kid"]]["invite_id"]  # 'admin requests' shows it
    other = make_join_request(key, team=team, name="alice", invite_id=invite_id, now=_now() - 5)
    (tmp_path / "nas" / "sealmem" / team / "requests" / f"{key.kid}.json").write_bytes(other)
    done = cli("admin", "admin", "approve", "--yes", code=1)
    assert f"left waiting: alice ({alice['kid']}): arrived or changed" in done.err
    assert alice["kid"] not in _members(cli)


@pytest.mark.slow
def test_approve_by_name_and_ambiguous_names(cli: Cli, invite: str) -> None:
    alice = _join(cli, invite, "alice")
    bob = _join(cli, invite, "bob")
    bob2 = _join(cli, invite, "bob2", name="Bob")  # looks like bob
    cli("admin", "admin", "requests")
    done = cli("admin", "admin", "approve", "alice", "--json").json()
    assert [a["kid"] for a in done["approved"]] == [alice["kid"]]
    ambiguous = cli("admin", "admin", "approve", "bob", code=1)
    assert "2 waiting join requests are named like 'bob'" in ambiguous.err
    by_kid = cli("admin", "admin", "approve", bob["kid"], code=1)
    assert f"looks like the waiting request of 'Bob' ({bob2['kid'][:8]})" in by_kid.err
    flagged = _waiting(cli)
    assert "the request of 'Bob'" in flagged[bob["kid"]]["clash"]
    assert "the request of 'bob'" in flagged[bob2["kid"]]["clash"]
    assert "ok, name clash" in cli("admin", "admin", "requests").out
    renamed = cli("admin", "admin", "approve", bob2["kid"], "--as", "robert", "--json").json()
    assert [(a["kid"], a["name"]) for a in renamed["approved"]] == [(bob2["kid"], "robert")]
    cli("admin", "admin", "approve", "bob")  # unique now
    assert _members(cli)[bob["kid"]] == "bob"
    assert _members(cli)[bob2["kid"]] == "robert"
    too_many = cli("admin", "admin", "approve", "x" * 8, "y" * 8, "--as", "z", code=1)
    assert "--as renames one request" in too_many.err


@pytest.mark.slow
def test_a_name_like_a_members_is_refused_unless_renamed(cli: Cli, invite: str) -> None:
    alice = _join(cli, invite, "alice")
    cli("admin", "admin", "requests")
    cli("admin", "admin", "approve", "alice")
    fake = _join(cli, invite, "fake", name="ALICE")
    assert "member 'alice'" in _waiting(cli)[fake["kid"]]["clash"]
    cli("admin", "admin", "requests")
    refused = cli("admin", "admin", "approve", "--yes", code=1)
    assert f"looks like member 'alice' ({alice['kid'][:8]})" in refused.err
    assert "--as NEWNAME" in refused.err
    still = cli("admin", "admin", "approve", fake["kid"], "--as", "Alice", code=1)
    assert "choose another with --as" in still.err
    cli("admin", "admin", "approve", fake["kid"], "--as", "alice-laptop")
    assert _members(cli)[fake["kid"]] == "alice-laptop"


@pytest.mark.slow
def test_reject_removes_requests_by_name_and_all_refused(
    cli: Cli, invite: str, tmp_path: Path
) -> None:
    mallory = _join(cli, invite, "mallory")
    dave = _join(cli, invite, "dave")
    with MemoryStore.open(tmp_path / "admin" / "store.db") as store:
        boss = Team.open(tmp_path / "admin", store, load_member_key(tmp_path / "admin"))
        try:
            stale = admin.invite(boss, _now() - 3 * DAY_MS, lifetime_ms=DAY_MS)
        finally:
            boss.transport.close()
    stale_id = read_invite(stale, now=_now() - 3 * DAY_MS + 1).invite_id
    zed = load_member_key(tmp_path / "zed")
    team = cli("admin", "team", "status", "--json").json()["team"]
    planted = make_join_request(zed, team=team, name="zed", invite_id=stale_id, now=_now())
    (tmp_path / "nas" / "sealmem" / team / "requests" / f"{zed.kid}.json").write_bytes(planted)
    assert _waiting(cli)[zed.kid]["refused"] == "invite-expired"

    gone = cli("admin", "admin", "reject", "mallory")
    assert f"removed the join request of mallory ({mallory['kid']})" in gone.out
    assert set(_waiting(cli)) == {dave["kid"], zed.kid}
    swept = cli("admin", "admin", "reject", "--all-refused", "--json").json()
    assert swept["rejected"] == [{"kid": zed.kid, "name": "zed", "refused": "invite-expired"}]
    assert set(_waiting(cli)) == {dave["kid"]}
    assert "give --all-refused" in cli("admin", "admin", "reject", code=1).err
    assert "no waiting join request" in cli("admin", "admin", "reject", "nobody", code=1).err
    assert list(_waiting(cli)) == [dave["kid"]]


@pytest.mark.slow
def test_grant_on_an_unknown_project_needs_create(cli: Cli, invite: str) -> None:
    _join(cli, invite, "alice")
    cli("admin", "admin", "requests")
    cli("admin", "admin", "approve", "alice")
    version = cli("admin", "team", "status", "--json").json()["roster_version"]
    typo = cli("admin", "admin", "grant", "alice", "webap", code=1)
    assert "project 'webap' is not registered" in typo.err
    assert "--create" in typo.err
    assert cli("admin", "team", "status", "--json").json()["roster_version"] == version
    made = cli("admin", "admin", "grant", "alice", "infra", "--create", "--json").json()
    assert "infra" in made["projects"]
    assert made["roster_version"] == version + 1


@pytest.mark.slow
def test_an_issued_key_joins_under_its_issued_name(
    cli: Cli, invite: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MemoryStore.open(tmp_path / "admin" / "store.db") as store:
        boss = Team.open(tmp_path / "admin", store, load_member_key(tmp_path / "admin"))
        try:
            bundle, made = admin.issue(
                boss, "carol", passphrase=PASSPHRASE, projects=None, read=True, write=True,
                now=_now(), kdf=KDF_INTERACTIVE,
            )  # fmt: skip
        finally:
            boss.transport.close()
    path = tmp_path / "carol.bundle"
    path.write_bytes(bundle)
    monkeypatch.setenv("SEALMEM_PASSPHRASE", PASSPHRASE)
    monkeypatch.setenv("USER", "root")
    monkeypatch.setenv("LOGNAME", "root")
    wrong = cli("carol", "team", "join", invite, "--key-bundle", str(path), "--name", "x", code=1)
    assert "this key was issued for 'carol'" in wrong.err
    joined = cli("carol", "team", "join", invite, "--key-bundle", str(path), "--json").json()
    assert (joined["kid"], joined["name"]) == (made.kid, "carol")
    status = cli("carol", "team", "status", "--json").json()
    assert status["me"] == {"kid": made.kid, "name": "carol"}
    assert "me: carol" in cli("carol", "team", "status").out
    dup = cli("admin", "admin", "issue", "Carol", "--output", str(tmp_path / "b2"), code=1)
    assert "looks like that of member 'carol'" in dup.err
