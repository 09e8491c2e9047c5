"""What ``admin approve``/``issue``/``grant`` give is what their flags say, through the
real CLI over a real shared folder: ``--read`` alone used to grant write too (two
independent flags, both defaulting to true), ``-p webapp`` left out the ``shared``
project recall always reads, and ``team status`` showed only one's own access."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sealmem.client.cli.approval import access
from tests.support.cli import Run, per_home

Cli = Callable[..., Run]

pytestmark = pytest.mark.slow


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    return per_home(tmp_path, capsys, monkeypatch)


def grants_of(cli: Cli, kid: str) -> dict[str, tuple[bool, bool]]:
    doc = cli("admin", "team", "status", "--json").json()
    return {g["project"]: (g["read"], g["write"]) for g in doc["grants"] if g["kid"] == kid}


def test_read_alone_is_read_only_and_shared_comes_with_a_project(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "nas").mkdir()
    cli("admin", "team", "create", "Acme", "--folder", str(tmp_path / "nas"), "-p", "webapp")
    cli("admin", "admin", "grant", "admin", "billing", "--create")
    invite = str(cli("admin", "team", "invite", "--json").json()["invite"])
    bob = cli("bob", "team", "join", invite, "--name", "bob", "--json").json()
    cli("admin", "admin", "requests")
    done = cli("admin", "admin", "approve", "bob", "-p", "webapp", "--read")
    assert grants_of(cli, bob["kid"]) == {"webapp": (True, False), "shared": (True, False)}
    assert "access: read on webapp, shared" in done.out

    monkeypatch.setenv("SEALMEM_PASSPHRASE", "correct horse battery staple")
    bundle = tmp_path / "carol.key"
    issued = cli("admin", "admin", "issue", "carol", "-o", str(bundle), "-p", "billing", "--json")
    carol = issued.json()["issued"]["kid"]
    assert grants_of(cli, carol) == {"billing": (True, True), "shared": (True, True)}
    cli("admin", "admin", "grant", "carol", "billing", "--no-write")
    assert grants_of(cli, carol)["billing"] == (True, False)

    shown = cli("admin", "team", "status").out  # who holds which grant, not only mine
    table = shown[shown.index("PROJECT  MAY READ") :].split("\n\n")[0].splitlines()
    rows = {line.split()[0]: line.split()[1:] for line in table[1:]}
    assert rows["webapp"] == ["admin,", "bob", "admin"]
    assert rows["billing"] == ["admin,", "carol", "admin"]
    assert rows["shared"] == ["admin,", "bob,", "carol", "admin,", "carol"]


def test_the_flags_combine_as_said() -> None:
    assert access(None, None) == (True, True)
    assert access(True, None) == (True, False)
    assert access(None, True) == (True, True)
    assert access(None, False) == (True, False)
    assert access(False, None) == (False, False)
    assert access(True, True) == (True, True)
    assert access(False, True) == (False, True)


def test_no_read_alone_is_refused_with_the_ways_on(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--no-read`` alone used to issue or approve a member with no access, silently."""
    (tmp_path / "nas").mkdir()
    cli("admin", "team", "create", "Acme", "--folder", str(tmp_path / "nas"), "-p", "webapp")
    invite = str(cli("admin", "team", "invite", "--json").json()["invite"])
    bob = cli("bob", "team", "join", invite, "--name", "bob", "--json").json()
    cli("admin", "admin", "requests")
    before = cli("admin", "team", "status", "--json").json()["roster_version"]
    monkeypatch.setenv("SEALMEM_PASSPHRASE", "correct horse battery staple")
    bundle = tmp_path / "carol.key"
    for args in (
        ("approve", "bob", "-p", "webapp", "--no-read"),
        ("issue", "carol", "-o", str(bundle), "-p", "webapp", "--no-read"),
    ):
        refused = cli("admin", "admin", *args, code=1)
        (line,) = refused.err.splitlines()
        assert "--no-read alone makes a member who can neither read nor write" in line
        assert "--no-read --write" in line
        assert "nothing was changed" in line
    assert not bundle.exists()
    assert cli("admin", "team", "status", "--json").json()["roster_version"] == before
    done = cli("admin", "admin", "approve", "bob", "-p", "webapp", "--no-read", "--no-write")
    assert "access: no access on webapp" in done.out  # on purpose: said, not refused
    assert grants_of(cli, bob["kid"]) == {"webapp": (False, False), "shared": (False, False)}
    issued = cli("admin", "admin", "issue", "carol", "-o", str(bundle), "-p", "webapp",
                 "--no-read", "--write")  # fmt: skip
    assert "access: write only on webapp" in issued.out
