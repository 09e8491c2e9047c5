"""A file planted in the shared folder holding a lone surrogate breaks nothing.

``"\\ud800"`` is valid JSON text with no UTF-8 form.  Planted as a join request
and as a manifest of a member, it must be listed as refused by ``admin
requests`` and skipped by ``sync`` (which goes on and exits 0), never crash the
command with a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sealmem.client.identity import load_member_key
from sealmem.client.team.invite import make_join_request
from tests.support.cli import Run, in_process

pytestmark = pytest.mark.slow

ANY_INVITE = "A" * 22  # the hub cannot know invites: any well-formed id passes


def test_admin_requests_and_sync_survive_a_planted_lone_surrogate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, cwd = tmp_path / "nas", tmp_path / "webapp"
    folder.mkdir()
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    cli = in_process(capsys, monkeypatch)

    def run(who: str, *args: str) -> Run:
        monkeypatch.setenv("SEALMEM_HOME", str(tmp_path / who))
        done = cli(*args)
        assert done.code == 0, done
        return done

    made = run("admin", "team", "create", "acme", "--folder", str(folder), "--json").json()
    team_dir = folder / "sealmem" / made["team"]
    invite = run("admin", "team", "invite", "--json").json()["invite"]
    run("alice", "team", "join", invite, "--name", "alice")
    run("admin", "admin", "requests")
    run("admin", "admin", "approve", "alice")
    run("alice", "remember", "deploys go out on Tuesdays", "--kind", "decision")
    run("alice", "sync")

    stranger = load_member_key(tmp_path / "stranger")
    request = make_join_request(
        stranger, team=made["team"], name="zed", invite_id=ANY_INVITE, now=1
    )
    assert request.count(b'"zed"') == 1
    planted = request.replace(b'"zed"', b'"z\\ud800"')
    (team_dir / "requests" / f"{stranger.kid}.json").write_bytes(planted)
    [alice_dir] = (team_dir / "snapshots" / "webapp").iterdir()
    [manifest] = alice_dir.glob("manifest-*.json")
    data = manifest.read_bytes()
    assert data.count(b'"sealmem/manifest/v1"') == 1
    (alice_dir / "manifest-000000000099.json").write_bytes(
        data.replace(b'"sealmem/manifest/v1"', b'"sealmem/manifest/v1\\udc00"')
    )

    waiting = run("admin", "admin", "requests", "--json").json()["requests"]
    refused = [r for r in waiting if r["kid"] == stranger.kid]
    assert [(r["refused"], r["name"], r["fingerprint"]) for r in refused] == [
        ("not-canonical", None, None)
    ]
    assert "surrogate" in refused[0]["detail"]
    table = run("admin", "admin", "requests").out
    assert "refused: not-canonical" in table

    pulled = run("admin", "sync", "--json").json()
    assert [r["reason"] for r in pulled["refused"]] == ["not-canonical"]
    hits = run("admin", "recall", "deploys Tuesdays", "--json").json()
    hits = hits["hits"] if isinstance(hits, dict) else hits
    assert [h["content"] for h in hits] == ["deploys go out on Tuesdays"]
