"""The team flows of the CLI with ``--hub URL`` instead of ``--folder PATH``, end to end:
a real uvicorn hub on 127.0.0.1, each member a real ``sealmem`` process with its own home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sealmem.hub.config import HubConfig
from sealmem.hub.http.server import BackgroundHub, free_port

TOKEN = "operator-token-for-cli-tests-42"
CLI = [sys.executable, "-m", "sealmem.client.cli"]

pytestmark = pytest.mark.slow


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[BackgroundHub]:
    config = HubConfig(data_dir=tmp_path / "hub-data", port=free_port(), operator_token=TOKEN)
    with BackgroundHub(config) as running:
        yield running


def run(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SEALMEM_HOME": str(home)}
    env.pop("SEALMEM_HUB_OPERATOR_TOKEN", None)
    proc = subprocess.run(
        [*CLI, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"sealmem {' '.join(args)} failed: {proc.stderr}")
    return proc


def j(proc: subprocess.CompletedProcess[str]) -> dict[str, object]:
    doc = json.loads(proc.stdout)
    assert isinstance(doc, dict)
    return doc


def test_create_join_sync_recall_over_the_hub(hub: BackgroundHub, tmp_path: Path) -> None:
    admin, alice, bob = (tmp_path / n for n in ("admin", "alice", "bob"))
    refused = run(admin, "team", "create", "acme", "--hub", hub.url, "-p", "webapp", check=False)
    assert refused.returncode == 1
    assert "Traceback" not in refused.stderr
    assert "operator" in refused.stderr.lower()

    created = j(
        run(admin, "team", "create", "acme", "--hub", hub.url, "--operator-token", TOKEN,
            "-p", "webapp", "--json")
    )  # fmt: skip
    assert created["transport"] == "hub"
    assert created["location"] == hub.url
    invite = str(j(run(admin, "team", "invite", "--json"))["invite"])
    for home, name in ((alice, "alice"), (bob, "bob")):
        joined = j(run(home, "team", "join", invite, "--name", name, "--json"))
        assert joined["team"] == created["team"]
    pending = run(alice, "sync")  # the hub shows a pending joiner its request's state only
    assert "waiting for an admin to approve" in pending.stdout + pending.stderr
    waiting = run(admin, "admin", "requests").stdout
    assert "alice" in waiting
    assert "bob" in waiting
    run(admin, "admin", "approve", "--yes")

    mem = j(
        run(alice, "remember", "Deploys freeze on Fridays after 15:00", "--kind", "warning",
            "-p", "webapp", "--json")
    )  # fmt: skip
    memory_id = mem["memory"]["id"]  # type: ignore[index]
    assert "pushed 1 version in" in run(alice, "sync").stdout
    assert "pulled 1 new" in run(bob, "sync").stdout
    hits = j(run(bob, "recall", "deploy freeze friday", "-p", "webapp", "--json"))["hits"]
    assert isinstance(hits, list)
    assert hits[0]["id"] == memory_id
    assert hits[0]["written_by"] == "alice"
    assert hits[0]["written_here"] is False
    assert hits[0]["provenance"]["transport"] == "hub"
    assert hits[0]["provenance"]["verified"] is True

    status = j(run(bob, "team", "status", "--json"))
    assert status["team"] == created["team"]
    data = b"".join(p.read_bytes() for p in hub.config.data_dir.rglob("*") if p.is_file())
    assert b"Fridays" not in data
    assert memory_id.encode() not in data


def test_watch_follows_the_hub_change_feed(hub: BackgroundHub, tmp_path: Path) -> None:
    admin, alice, bob = (tmp_path / n for n in ("admin", "alice", "bob"))
    run(admin, "team", "create", "acme", "--hub", hub.url, "--operator-token", TOKEN,
        "-p", "webapp")  # fmt: skip
    invite = str(j(run(admin, "team", "invite", "--json"))["invite"])
    run(alice, "team", "join", invite, "--name", "alice")
    run(bob, "team", "join", invite, "--name", "bob")
    run(admin, "admin", "requests")  # an approval is bound to what was shown
    run(admin, "admin", "approve", "alice", "bob")
    run(alice, "sync")
    run(bob, "sync")

    env = {**os.environ, "SEALMEM_HOME": str(bob)}
    watcher = subprocess.Popen(
        [*CLI, "sync", "--watch", "--interval", "600"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        time.sleep(2.0)  # the watcher's first sync and its first feed request
        run(alice, "remember", "The cache TTL is 300 seconds", "-p", "webapp")
        run(alice, "sync")
        deadline = time.monotonic() + 30
        found = False
        while time.monotonic() < deadline and not found:
            time.sleep(0.5)
            out = run(bob, "list", "-p", "webapp", "--json").stdout
            found = "cache TTL" in out
        assert found, "the watcher did not pull alice's change from the hub feed"
    finally:
        watcher.terminate()
        watcher.communicate(timeout=20)


def test_join_without_a_name_uses_the_login_name(hub: BackgroundHub, tmp_path: Path) -> None:
    admin, carol = tmp_path / "admin", tmp_path / "carol"
    run(admin, "team", "create", "acme", "--hub", hub.url, "--operator-token", TOKEN)
    invite = str(j(run(admin, "team", "invite", "--json"))["invite"])
    env_user = {"USER": "carol-login", "LOGNAME": "carol-login"}
    proc = subprocess.run(
        [*CLI, "team", "join", invite, "--json"],
        env={**os.environ, "SEALMEM_HOME": str(carol), **env_user},
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert json.loads(proc.stdout)["name"] == "carol-login"
    assert "carol-login" in run(admin, "admin", "requests").stdout


def test_a_stranger_posting_after_admin_requests_still_waits(
    hub: BackgroundHub, tmp_path: Path
) -> None:
    admin, alice, mallory = (tmp_path / n for n in ("admin", "alice", "mallory"))
    run(admin, "team", "create", "acme", "--hub", hub.url, "--operator-token", TOKEN,
        "-p", "webapp")  # fmt: skip
    invite = str(j(run(admin, "team", "invite", "--json"))["invite"])
    joined = j(run(alice, "team", "join", invite, "--name", "alice", "--json"))
    shown = run(admin, "admin", "requests").stdout
    assert "alice" in shown
    assert str(joined["fingerprint"]) in shown
    stranger = j(run(mallory, "team", "join", invite, "--name", "mallory", "--json"))

    done = j(run(admin, "admin", "approve", "--yes", "--json"))
    assert [a["kid"] for a in done["approved"]] == [joined["kid"]]  # type: ignore[union-attr]
    assert done["left_waiting"] == [{"kid": stranger["kid"], "name": "mallory"}]
    waiting = j(run(admin, "admin", "requests", "--json"))["requests"]
    assert [r["kid"] for r in waiting] == [stranger["kid"]]  # type: ignore[union-attr]
    members = j(run(admin, "team", "status", "--json"))["members"]
    assert stranger["kid"] not in [m["kid"] for m in members]  # type: ignore[union-attr]
    run(alice, "sync")
    assert j(run(alice, "team", "status", "--json"))["my_access"]["webapp"]["key"]  # type: ignore[index]
    refused = j(run(mallory, "team", "status", "--json"))
    assert refused["roster_version"] is None  # a pending joiner reads no roster history
    assert "waiting for an admin to approve" in str(refused["alarms"])
    gone = run(admin, "admin", "reject", "mallory").stdout
    assert f"removed the join request of mallory ({stranger['kid']})" in gone
    assert j(run(admin, "admin", "requests", "--json"))["requests"] == []
