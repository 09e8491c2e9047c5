"""Nothing a teammate or a stranger wrote can act on the terminal of the person reading it.

A teammate's memory, a keyword, a join request's name reach ``recall``, ``show``,
``list``, ``admin requests``...  Control sequences in them (retitle the window,
erase the screen), C1 controls and bidi overrides are printed as visible escapes;
``--json`` output is ASCII.  Names with such characters are refused outright, at
join, at approve and at issue.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sealmem.client.cli.output import clean
from sealmem.crypto import MemberKey
from sealmem.protocol.encoding import b64e
from sealmem.protocol.envelope import seal
from sealmem.protocol.invite import JOIN_FORMAT
from sealmem.protocol.names import hidden_at
from tests.support.cli import Run, in_process
from tests.sync.conftest import PROJECT, World, make_world

pytestmark = pytest.mark.slow

HOSTILE = "deploy \x1b]0;pwned\x07 from \x1b[2J the \u202eesaeler\u202c branch \x9b31m only"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u202c", "\u2066")


def _no_raw(done: Run) -> None:
    for stream in (done.out, done.err):
        found = [f"U+{ord(ch):04X}" for ch in RAW if ch in stream]
        assert not found, (found, stream)


def _strings(doc: object) -> set[str]:
    if isinstance(doc, str):
        return {doc}
    values = doc.values() if isinstance(doc, dict) else doc if isinstance(doc, list) else ()
    return {s for value in values for s in _strings(value)}


@pytest.fixture
def as_member(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Run]:
    cwd = tmp_path / "work"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("SEALMEM_PASSPHRASE", "a long enough passphrase")
    run = in_process(capsys, monkeypatch)

    def as_(home: Path, *args: str) -> Run:
        monkeypatch.setenv("SEALMEM_HOME", str(home))
        return run(*args)

    return as_


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    made = make_world(tmp_path, "alice")
    yield made
    made.close()


def test_a_teammates_memory_reaches_the_terminal_escaped(
    world: World, as_member: Callable[..., Run]
) -> None:
    boss, alice = world.nodes["admin"], world.nodes["alice"]
    memory = alice.remember(HOSTILE, keywords=["deploy", "\x1b[2Jerase"])
    alice.sync()
    boss.sync()
    for args in (
        ("recall", "deploy branch", "-p", PROJECT),
        ("show", memory.id),
        ("list", "-p", PROJECT),
        ("status",),
        ("team", "status"),
        ("sync",),
    ):
        done = as_member(boss.home, *args)
        assert done.code == 0, done
        _no_raw(done)
    recall = as_member(boss.home, "recall", "deploy branch", "-p", PROJECT)
    assert "\\x1b]0;pwned\\x07" in recall.out  # visible, not swallowed
    assert "\\u202eesaeler\\u202c" in recall.out
    assert "keywords: deploy, \\x1b[2Jerase" in recall.out

    for args in (("recall", "deploy branch", "-p", PROJECT, "--json"), ("export",)):
        done = as_member(boss.home, *args)
        assert done.code == 0, done
        assert done.out.isascii()
        assert HOSTILE in _strings(json.loads(done.out))  # the text itself, unchanged


def _plant_request(world: World, name: str) -> MemberKey:
    """A join request as anyone with access to the folder can write one, name unchecked."""
    eve = MemberKey.generate()
    team = world.nodes["admin"].t.config.team
    body = {
        "format": JOIN_FORMAT, "team": team, "kid": eve.kid, "name": name,
        "sign_public": b64e(eve.sign_public), "box_public": b64e(eve.box_public),
        "created_at": 1, "invite_id": "A" * 22,
    }  # fmt: skip
    path = world.folder / "sealmem" / team / "requests" / f"{eve.kid}.json"
    path.write_bytes(seal(body, "join", eve))
    return eve


@pytest.mark.parametrize("name", ["\x1b]0;pwned\x07", "\x1b[2J", "\u202eecila"])
def test_a_hostile_join_request_name_is_shown_escaped_and_refused(
    world: World, as_member: Callable[..., Run], name: str
) -> None:
    boss = world.nodes["admin"]
    eve = _plant_request(world, name)
    version = boss.t.roster().version

    listed = as_member(boss.home, "admin", "requests")
    assert listed.code == 0, listed
    _no_raw(listed)
    assert eve.kid in listed.out
    assert "refused: malformed" in listed.out
    as_json = as_member(boss.home, "admin", "requests", "--json")
    assert as_json.out.isascii()
    (item,) = as_json.json()["requests"]
    assert item["refused"] == "malformed"

    approved = as_member(boss.home, "admin", "approve", eve.kid)
    assert approved.code == 1
    _no_raw(approved)
    assert "malformed" in approved.err
    # nothing valid was shown: approving the shown set changes nothing
    assert as_member(boss.home, "admin", "approve", "--yes").code == 1
    boss.t.refresh(boss.t.trusted(), boss.clock())[1]
    assert boss.t.roster().version == version


@pytest.mark.parametrize("name", ["\x1b]0;pwned\x07", "\x1b[2J", "\u202eecila"])
def test_hostile_names_are_refused_at_join_and_issue(
    world: World, as_member: Callable[..., Run], tmp_path: Path, name: str
) -> None:
    boss = world.nodes["admin"]
    invite = as_member(boss.home, "team", "invite", "--json").json()["invite"]
    newcomer = tmp_path / "newcomer"
    joined = as_member(newcomer, "team", "join", invite, "--name", name)
    assert joined.code == 1
    _no_raw(joined)
    assert "display name" in joined.err
    assert not (newcomer / "team.json").exists()
    requests = world.folder / "sealmem" / boss.t.config.team / "requests"
    assert os.listdir(requests) == []

    bundle = tmp_path / "bundle.key"
    issued = as_member(boss.home, "admin", "issue", name, "--output", str(bundle))
    assert issued.code == 1
    _no_raw(issued)
    assert "member name" in issued.err
    assert not bundle.exists()


@given(st.text())
def test_clean_leaves_nothing_a_terminal_acts_on(text: str) -> None:
    shown = clean(text)
    assert not any(hidden_at(shown, i) for i in range(len(shown)) if shown[i] not in "\n\t")
    assert shown.count("\n") == text.count("\n")
    assert clean(shown) == shown
