"""A ``team join --key-bundle`` that fails takes the bundle's key back out of the home:
it used to stay, so the retry with the bundle the admin issued again was refused ("this
sealmem home already has member key ...")."""

from __future__ import annotations

from pathlib import Path

import pytest

from sealmem.client.identity import member_key_path
from tests.support.cli import per_home

pytestmark = pytest.mark.slow


def test_a_failed_bundle_join_leaves_no_key_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cli = per_home(tmp_path, capsys, monkeypatch)
    monkeypatch.setenv("SEALMEM_PASSPHRASE", "correct horse battery staple")
    (tmp_path / "nas").mkdir()
    cli("admin", "team", "create", "Acme", "--folder", str(tmp_path / "nas"))
    first, second = tmp_path / "carol-1.key", tmp_path / "carol-2.key"
    cli("admin", "admin", "issue", "carol", "-o", str(first))
    invite = str(cli("admin", "team", "invite", "--json").json()["invite"])

    wrong = cli(
        "carol", "team", "join", invite, "--key-bundle", str(first), "--name", "caro", code=1
    )
    assert "issued for 'carol'" in wrong.err
    assert not member_key_path(tmp_path / "carol").exists()

    cli("admin", "admin", "issue", "carol2", "-o", str(second))  # the admin issues another
    joined = cli("carol", "team", "join", invite, "--key-bundle", str(second), "--json").json()
    assert joined["name"] == "carol2"
    assert member_key_path(tmp_path / "carol").exists()


def test_a_bundle_join_at_the_wrong_folder_is_refused_and_the_retry_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``--key-bundle`` nothing is posted, so a mistyped ``--folder`` used to "join":
    under the login name (no roster there named the key) and into a team config that
    refused the corrected retry ("already in a team")."""
    cli = per_home(tmp_path, capsys, monkeypatch)
    monkeypatch.setenv("SEALMEM_PASSPHRASE", "correct horse battery staple")
    (tmp_path / "nas").mkdir()
    cli("admin", "team", "create", "Acme", "--folder", str(tmp_path / "nas"))
    bundle = tmp_path / "carol.key"
    cli("admin", "admin", "issue", "carol", "-o", str(bundle))
    invite = str(cli("admin", "team", "invite", "--json").json()["invite"])
    typo = str(tmp_path / "nsa")
    wrong = cli(
        "carol", "team", "join", invite, "--key-bundle", str(bundle), "--folder", typo, code=1
    )
    assert typo in wrong.err
    assert "Traceback" not in wrong.err
    assert not (tmp_path / "carol" / "team.json").exists()
    assert not member_key_path(tmp_path / "carol").exists()
    joined = cli(
        "carol", "team", "join", invite, "--key-bundle", str(bundle),
        "--folder", str(tmp_path / "nas"), "--json",
    ).json()  # fmt: skip
    assert joined["name"] == "carol"
