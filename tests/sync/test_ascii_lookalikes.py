"""ASCII look-alike names are flagged as clashes, through the real CLI over a real folder.

A join request named ``aIice`` (capital I), ``a1ice`` (digit one) or ``b0b`` (digit
zero) beside members ``alice`` and ``bob`` reads as that member on most screens; the
name skeleton folded case before mapping look-alikes and mapped no digits, so none was
flagged and an admin could approve an impostor that the roster then showed as a second
``alice``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import Run, per_home

Cli = Callable[..., Run]


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    return per_home(tmp_path, capsys, monkeypatch)


def _join(cli: Cli, invite: str, who: str, name: str) -> dict[str, Any]:
    return dict(cli(who, "team", "join", invite, "--name", name, "--json").json())


def _waiting(cli: Cli) -> dict[str, dict[str, Any]]:
    return {r["kid"]: r for r in cli("admin", "admin", "requests", "--json").json()["requests"]}


@pytest.mark.slow
def test_capital_i_digit_one_and_zero_lookalikes_are_clashes(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "nas").mkdir()
    cli("admin", "team", "create", "Acme", "--folder", str(tmp_path / "nas"))
    invite = str(cli("admin", "team", "invite", "--json").json()["invite"])
    alice = _join(cli, invite, "alice", "alice")
    bob = _join(cli, invite, "bob", "bob")
    cli("admin", "admin", "requests")
    cli("admin", "admin", "approve", "--yes")

    fakes = {
        "aIice": ("fake1", alice),
        "a1ice": ("fake2", alice),
        "b0b": ("fake3", bob),
    }
    kids = {name: _join(cli, invite, home, name)["kid"] for name, (home, _) in fakes.items()}
    waiting = _waiting(cli)
    for name, (_, member) in fakes.items():
        real = "alice" if member is alice else "bob"
        clash = waiting[kids[name]]["clash"]
        assert clash is not None, name
        assert f"member {real!r} ({member['kid'][:8]})" in clash, name
    assert "name clash" in cli("admin", "admin", "requests").out
    refused = cli("admin", "admin", "approve", "--yes", code=1)
    # the first clash in the listing's order (by kid, random) is the one named
    assert re.search(r"looks like member '(alice|bob)'", refused.err), refused.err
    members = cli("admin", "team", "status", "--json").json()["members"]
    assert sorted(m["name"] for m in members if m["kid"] in kids.values()) == []
