"""Holes a hostile review found in the membership flow, closed (real CLI, real folder).

A rejected request posted again is not approved on the strength of an older
listing; ``admin approve NAME`` is bound to what ``admin requests`` showed; a
name that is another member's short id neither passes nor wins a selector; a
refused look-alike request blocks nobody; text from a planted file never
reaches the admin's terminal as a new line.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from sealmem.client.sync.door import door_warnings
from sealmem.client.sync.session import find_member
from sealmem.client.team.invite import make_join_request
from sealmem.crypto import MemberKey
from sealmem.protocol.errors import InputError
from tests.protocol.team_world import World
from tests.sync.test_approve_bound import Cli, _join, _members, _waiting, cli, invite

__all__ = ["cli", "invite"]  # fixtures, re-exported for pytest


def _now() -> int:
    return time.time_ns() // 1_000_000


def _requests_dir(cli: Cli, tmp_path: Path) -> Path:
    team = cli("admin", "team", "status", "--json").json()["team"]
    return tmp_path / "nas" / "sealmem" / team / "requests"


@pytest.mark.slow
def test_a_rejected_request_posted_again_is_not_approved(
    cli: Cli, invite: str, tmp_path: Path
) -> None:
    alice = _join(cli, invite, "alice")
    mallory = _join(cli, invite, "mallory")
    cli("admin", "admin", "requests")  # shows alice and mallory
    filed = _requests_dir(cli, tmp_path) / f"{mallory['kid']}.json"
    saved = filed.read_bytes()
    cli("admin", "admin", "reject", "mallory")
    assert not filed.exists()
    filed.write_bytes(saved)  # the same bytes, posted again

    done = cli("admin", "admin", "approve", "--yes", "--json")
    assert [a["kid"] for a in done.json()["approved"]] == [alice["kid"]]
    assert f"left waiting: mallory ({mallory['kid']}): you rejected it" in done.err
    by_name = cli("admin", "admin", "approve", "mallory", code=1)
    assert "you rejected the join request of 'mallory'" in by_name.err
    assert mallory["kid"] not in _members(cli)

    shown = cli("admin", "admin", "requests")  # shown again, flagged
    assert "ok, rejected before" in shown.out
    assert f"{mallory['kid']}: you rejected a join request of this key before" in shown.out
    assert _waiting(cli)[mallory["kid"]]["rejected_before"] is not None
    cli("admin", "admin", "approve", mallory["kid"])  # the admin saw the flag: its call
    assert mallory["kid"] in _members(cli)


@pytest.mark.slow
def test_approve_by_name_is_bound_to_what_was_shown(cli: Cli, invite: str, tmp_path: Path) -> None:
    alice = _join(cli, invite, "alice")
    never = cli("admin", "admin", "approve", "alice", code=1)  # nothing was shown yet
    assert "run 'sealmem admin requests'" in never.err
    assert alice["fingerprint"] in cli("admin", "admin", "requests").out
    # anyone with the folder: read alice's invite id, remove her file, plant "alice"
    reqdir = _requests_dir(cli, tmp_path)
    invite_id = _waiting(cli)[alice["kid"]]["invite_id"]
    cli("admin", "admin", "requests")  # the last listing shows alice
    (reqdir / f"{alice['kid']}.json").unlink()
    evil = MemberKey.generate()
    team = cli("admin", "team", "status", "--json").json()["team"]
    planted = make_join_request(evil, team=team, name="alice", invite_id=invite_id, now=_now())
    (reqdir / f"{evil.kid}.json").write_bytes(planted)

    swapped = cli("admin", "admin", "approve", "alice", code=1)
    assert f"approving alice ({evil.kid}) fingerprint" in swapped.err  # shown before approving
    assert f"({evil.kid}) is not one the last 'sealmem admin requests' showed" in swapped.err
    assert evil.kid not in _members(cli)
    by_prefix = cli("admin", "admin", "approve", evil.kid[:10], code=1)
    assert "is not one the last" in by_prefix.err
    assert evil.kid not in _members(cli)


@pytest.mark.slow
def test_a_name_that_is_a_members_short_id_is_refused(cli: Cli, invite: str) -> None:
    alice = _join(cli, invite, "alice")
    cli("admin", "admin", "requests")
    cli("admin", "admin", "approve", "alice")
    short = alice["kid"][:8]
    mallory = _join(cli, invite, "mallory", name=short)
    assert f"the member id {alice['kid']}" in _waiting(cli)[mallory["kid"]]["clash"]
    cli("admin", "admin", "requests")
    refused = cli("admin", "admin", "approve", mallory["kid"], code=1)
    assert f"looks like the member id {alice['kid']}" in refused.err
    assert mallory["kid"] not in _members(cli)
    full = _join(cli, invite, "full", name="a" * 26)  # shaped like a full member id
    cli("admin", "admin", "requests")
    assert "looks like the member id" in cli("admin", "admin", "approve", full["kid"], code=1).err


def test_a_selector_that_is_a_name_and_an_id_prefix_is_ambiguous() -> None:
    world = World()
    roster = world.roster_v1()
    alice = roster.member(world.alice.kid)
    assert alice is not None
    shadow = dataclasses.replace(alice, kid=world.mallory.kid, name=world.alice.kid[:8])
    roster = dataclasses.replace(roster, members=(*roster.members, shadow))
    with pytest.raises(InputError, match="both a member's name and the start of another"):
        find_member(roster, world.alice.kid[:8])
    assert find_member(roster, world.alice.kid).kid == world.alice.kid  # a full id wins
    assert find_member(roster, "ALICE").kid == world.alice.kid  # names by skeleton


@pytest.mark.slow
def test_a_refused_lookalike_request_blocks_nobody(cli: Cli, invite: str, tmp_path: Path) -> None:
    alice = _join(cli, invite, "alice")
    team = cli("admin", "team", "status", "--json").json()["team"]
    stranger = MemberKey.generate()  # no valid invite: refused, never approvable
    planted = make_join_request(stranger, team=team, name="ALICE", invite_id="B" * 22, now=_now())
    (_requests_dir(cli, tmp_path) / f"{stranger.kid}.json").write_bytes(planted)
    assert _waiting(cli)[alice["kid"]]["clash"] is None
    assert _waiting(cli)[stranger.kid]["refused"] == "invite-unknown"
    cli("admin", "admin", "requests")
    done = cli("admin", "admin", "approve", "alice", "--json").json()
    assert [a["kid"] for a in done["approved"]] == [alice["kid"]]


def test_a_planted_request_cannot_forge_lines_in_admin_requests(
    cli: Cli, invite: str, tmp_path: Path
) -> None:
    _join(cli, invite, "alice")
    kid = MemberKey.generate().kid
    inner = "99999999999999999999"  # out of range: the decoder names its path
    for line in ("approve --yes (fingerprint verified)", "NOTICE from sealmem: re-signed"):
        inner = '{"\\n' + line + '":' + inner + "}"
    body = '{"body":' + inner + ',"signer":"' + kid + '","sig":"x"}'
    (_requests_dir(cli, tmp_path) / f"{kid}.json").write_bytes(body.encode())
    out = cli("admin", "admin", "requests").out
    assert not [line for line in out.splitlines() if line.startswith(("NOTICE", "approve"))]
    assert "\\nNOTICE from sealmem" in out  # shown, escaped, on the refusal's line


def test_door_warnings_name_only_codes_shaped_like_the_hubs() -> None:
    evil = {f"x\n{i}": 5 for i in range(3)} | {"not-canonical": 2, "\x1b[2Jwiped": 1}
    many = {f"code-{i:03d}": 1 for i in range(100)}
    found = door_warnings({"refused": {"by_code": {**evil, **many, "huge": 10**40}}}, _now())
    assert len(found) == 1
    for planted in ("\n", "\x1b", "huge"):
        assert planted not in found[0]
    assert found[0].count("code-") == 15  # 16 codes at most, in order: not-canonical is one
    assert "2 not-canonical" in found[0]
