"""The team page of a member of a real folder team: roster, fingerprints, access, syncs."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sealmem.client.ui.app import allowed_hosts, create_app
from sealmem.client.ui.guard import Secrets
from tests.support.cli import per_home

pytestmark = pytest.mark.slow


def test_the_team_page_shows_the_roster_access_and_sync_activity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cli = per_home(tmp_path, capsys, monkeypatch)
    folder = tmp_path / "nas"
    folder.mkdir()
    made = cli("root", "team", "create", "Acme", "--folder", str(folder), "--name", "root")
    cli("root", "remember", "Deploys go out on Tuesdays", "-p", "webapp")
    cli("root", "sync")
    status = cli("root", "team", "status", "--json").json()
    secrets = Secrets()
    app = create_app(tmp_path / "root", secrets, allowed_hosts(8000))
    client = TestClient(app, base_url="http://127.0.0.1:8000", follow_redirects=False)
    assert client.get(f"/?token={secrets.token}").status_code == 200
    html = client.get("/team").text
    assert f"team {status['team']}" in html
    assert f"roster version {status['roster_version']}" in html
    assert status["my_fingerprint"] in html
    assert status["root_fingerprint"] in html
    assert status["me"]["kid"] in html
    assert ">webapp<" in html
    assert "syncs per day" in html
    assert "<rect" in html  # one sync drawn
    assert "team details unavailable" not in html
    assert made.code == 0
