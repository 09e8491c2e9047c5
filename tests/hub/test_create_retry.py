"""A ``team create`` the hub refuses keeps its team id: the operator allows the id the
refusal named, and the next create registers that same id (it used to draw a new one
each time, so no id could be allowed ahead of the create that registers it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sealmem.client.team.pending import PENDING_FILE
from sealmem.hub.config import HubConfig
from sealmem.hub.http.server import BackgroundHub, free_port
from tests.support.cli import per_home

pytestmark = pytest.mark.slow


def test_the_refused_team_id_is_the_one_registered_once_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SEALMEM_HUB_OPERATOR_TOKEN", raising=False)
    cli = per_home(tmp_path, capsys, monkeypatch)
    port = free_port()
    data = tmp_path / "hub-data"
    with BackgroundHub(HubConfig(data_dir=data, port=port)) as hub:
        ids = set()
        for _ in range(2):  # refused twice: the same id both times
            refused = cli("admin", "team", "create", "Acme", "--hub", hub.url, code=1)
            assert "Traceback" not in refused.err
            named = re.search(r"does not accept team (\S+);", refused.err)
            assert named is not None, refused.err
            ids.add(named.group(1))
        assert len(ids) == 1
    (team_id,) = ids
    assert (tmp_path / "admin" / PENDING_FILE).exists()
    allowed = HubConfig(data_dir=data, port=port, allow_teams=frozenset({team_id}))
    with BackgroundHub(allowed) as hub:
        made = cli("admin", "team", "create", "Acme", "--hub", hub.url, "--json").json()
    assert made["team"] == team_id
    assert not (tmp_path / "admin" / PENDING_FILE).exists()


def test_the_refusal_names_the_kept_id_in_the_clients_own_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The id came only in the hub's sentence (cut at 80 characters, and a hub's to
    choose); the client's line asked for an operator token, not for the id to be allowed."""
    monkeypatch.delenv("SEALMEM_HUB_OPERATOR_TOKEN", raising=False)
    cli = per_home(tmp_path, capsys, monkeypatch)
    with BackgroundHub(HubConfig(data_dir=tmp_path / "hub-data", port=free_port())) as hub:
        refused = cli("admin", "team", "create", "Acme", "--hub", hub.url, code=1)
    ours = refused.err.splitlines()[0]  # the hub's own words follow on "the hub said:"
    team_id = json.loads((tmp_path / "admin" / PENDING_FILE).read_text())["team"]
    assert ours.startswith("error: "), refused.err
    assert "hub said" not in ours, refused.err
    assert f"--allow-team {team_id}" in ours, ours
    assert "sealmem team create" in ours, ours
