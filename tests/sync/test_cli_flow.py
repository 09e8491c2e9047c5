"""The documented team flow through the real ``sealmem`` command, one process per call."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sealmem.client import MemoryStore
from sealmem.client.identity import member_kid
from sealmem.protocol import canonical

pytestmark = pytest.mark.slow

SEALMEM = Path(sys.executable).with_name("sealmem")


@dataclass
class Done:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Team:
    root: Path
    folder: Path
    cwd: Path

    def env(self, who: str) -> dict[str, str]:
        return {**os.environ, "SEALMEM_HOME": str(self.root / who)}

    def run(self, who: str, *args: str, check: bool = True) -> Done:
        proc = subprocess.run(
            [str(SEALMEM), *args], capture_output=True, text=True, env=self.env(who),
            cwd=self.cwd, timeout=60,
        )  # fmt: skip
        done = Done(proc.returncode, proc.stdout, proc.stderr)
        if check:
            assert done.code == 0, done
        return done

    def start(self, who: str, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [str(SEALMEM), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=self.env(who), cwd=self.cwd,
        )  # fmt: skip


def _wait_for(predicate: Callable[[], bool], timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Team:
    """One team for the whole module (processes are slow to start); tests run in order."""
    tmp_path = tmp_path_factory.mktemp("cli-team")
    folder = tmp_path / "nas"
    cwd = tmp_path / "webapp"
    folder.mkdir()
    cwd.mkdir()
    t = Team(tmp_path, folder, cwd)
    made = t.run("admin", "team", "create", "Acme", "--folder", str(folder), "--name", "root",
                 "--json").json()  # fmt: skip
    assert made["projects"] == ["shared", "webapp"]  # the cwd's project plus the shared tier
    invite = t.run("admin", "team", "invite", "--json").json()
    assert invite["root_fingerprint"] == made["root_fingerprint"]
    joined = {
        who: t.run(who, "team", "join", invite["invite"], "--name", who, "--json").json()
        for who in ("alice", "bob")
    }
    for doc in joined.values():
        assert doc["root_fingerprint"] == made["root_fingerprint"]  # compared out of band
    waiting = t.run("admin", "admin", "requests", "--json").json()["requests"]
    assert {r["name"]: r["fingerprint"] for r in waiting} == {
        who: doc["fingerprint"] for who, doc in joined.items()
    }
    approved = t.run("admin", "admin", "approve", "--yes", "--json").json()
    assert sorted(a["fingerprint"] for a in approved["approved"]) == sorted(
        doc["fingerprint"] for doc in joined.values()
    )
    return t


def test_remember_sync_recall_with_provenance_and_status(team: Team) -> None:
    before = team.run("bob", "team", "status", "--json").json()
    assert before["roster_version"] == 2  # status fetches the roster: bob sees the approval
    assert before["my_access"]["webapp"]["read"] is True
    assert before["last_sync"] is None
    team.run("alice", "remember", "never run migrations on Fridays", "--kind", "decision")
    pushed = team.run("alice", "sync")
    assert pushed.out.strip() == (
        "pushed 1 version in 1 chunk; pulled 0 new + 0 updated from 0 members; refused 0 objects"
    )
    pulled = team.run("bob", "sync", "--json").json()
    assert (pulled["pulled_new"], pulled["refused"]) == (1, [])
    hits = team.run("bob", "recall", "migrations Fridays", "--json").json()
    hit = hits["hits"][0] if isinstance(hits, dict) else hits[0]
    assert hit["content"] == "never run migrations on Fridays"
    alice_kid = member_kid(team.root / "alice")
    assert hit["provenance"]["transport"] == "folder"
    assert hit["provenance"]["signer"] == alice_kid
    assert hit["provenance"]["signer_name"] == "alice"
    assert hit["provenance"]["verified"] is True
    assert hit["provenance"]["snapshot_seq"] == 1
    status = team.run("bob", "team", "status", "--json").json()
    assert status["roster_version"] == 2
    assert sorted(m["name"] for m in status["members"]) == ["alice", "bob", "root"]
    assert status["my_access"]["webapp"] == {"read": True, "write": True, "epoch": 1, "key": True}
    assert status["alarms"] == []
    people = team.run("bob", "team", "status")
    assert "alice" in people.out
    assert "pulled 1 new" in people.out


def test_private_canary_never_reaches_the_folder(team: Team) -> None:
    canary = "CANARY-b81d-only-on-my-laptop"
    team.run("alice", "remember", canary, "--private")
    team.run("alice", "remember", "shared-marker-text for the team")
    team.run("alice", "sync")
    blobs = b"".join(p.read_bytes() for p in team.folder.rglob("*") if p.is_file())
    assert canary.encode() not in blobs
    assert b"shared-marker-text" not in blobs
    team.run("bob", "sync")
    assert canary not in team.run("bob", "list", "--json").out
    assert "shared-marker-text" in team.run("bob", "list", "--json").out


def test_sigkill_mid_push_leaves_everything_consistent(team: Team) -> None:
    alice_home = team.root / "alice"
    with MemoryStore.open(alice_home / "store.db", author=member_kid(alice_home)) as store:
        for i in range(1500):
            store.remember(f"bulk note {i} about subsystem {i % 97}", project="webapp")
    proc = team.start("alice", "sync")
    chunks = team.folder / "sealmem"
    _wait_for(lambda: any(p.parent.name == "chunks" for p in chunks.rglob("*")), 30)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    # whatever the folder holds is whole: every manifest parses and names chunks that exist
    # (a delta manifest names its changed ones)
    for manifest in chunks.rglob("manifest-*.json"):
        body = canonical.decode(manifest.read_bytes())["body"]
        for ref in body["chunks"] if "chunks" in body else body["changed"]:
            assert (manifest.parent / "chunks" / ref["id"]).is_file()
    again = team.run("alice", "sync")
    assert "refused 0 objects" in again.out
    pulled = team.run("bob", "sync", "--json").json()
    assert pulled["refused"] == []
    listed = team.run("bob", "list", "--limit", "5000", "--json").json()["memories"]
    assert sum(m["content"].startswith("bulk note ") for m in listed) == 1500


def test_sync_watch_pulls_and_pushes_on_change(team: Team) -> None:
    team.run("bob", "sync")
    watcher = team.start("bob", "sync", "--watch", "--interval", "30")
    try:
        time.sleep(1.5)
        team.run("alice", "remember", "watched note from alice")
        team.run("alice", "sync")

        def bob_has_it() -> bool:
            return "watched note from alice" in team.run("bob", "list", "--json").out

        assert _wait_for(bob_has_it), "the watcher did not pull alice's change"
        team.run("bob", "remember", "bob wrote while watching")

        def alice_gets_it() -> bool:
            team.run("alice", "sync")
            return "bob wrote while watching" in team.run("alice", "list", "--json").out

        assert _wait_for(alice_gets_it), "the watcher did not push bob's change"
    finally:
        watcher.send_signal(signal.SIGINT)
        out, err = watcher.communicate(timeout=30)
    assert "pulled 1 new" in out
    assert "Traceback" not in err
    lines = out.splitlines()  # each says when it happened (they had no time)
    assert lines
    assert all(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC pushed ", ln) for ln in lines), out


def test_admin_grant_rotate_revoke_from_the_cli(team: Team) -> None:
    granted = team.run("admin", "admin", "grant", "bob", "infra", "--no-write", "--create",
                       "--json").json()  # fmt: skip
    assert (granted["read"], granted["write"]) == (True, False)
    assert "infra" in granted["projects"]
    rotated = team.run("admin", "admin", "rotate", "webapp", "--json").json()
    assert rotated["projects"]["webapp"] == granted["projects"]["webapp"] + 1
    refused = team.run("bob", "admin", "rotate", "webapp", check=False)
    assert refused.code == 1
    assert "not an admin" in refused.err
    revoked = team.run("admin", "admin", "revoke", "alice", "--keep-data", "--json").json()
    assert revoked["roster_version"] == rotated["roster_version"] + 1
    status = team.run("bob", "team", "status", "--json").json()
    assert {m["name"]: m["revoked"] for m in status["members"]}["alice"] is True
    assert status["my_access"]["infra"] == {
        "read": True, "write": False, "epoch": 1, "key": True,
    }  # fmt: skip
    alice = team.run("alice", "sync", "--json").json()
    assert alice["pushed_versions"] == 0
    assert "revoked" in " ".join(team.run("alice", "team", "status", "--json").json()["alarms"])


def test_refused_objects_do_not_fail_the_sync_but_an_unreachable_folder_does(team: Team) -> None:
    team.run("alice", "remember", "a note before the garbage arrives")
    team.run("alice", "sync")
    slot = next(team.folder.rglob(f"{member_kid(team.root / 'alice')}/manifest-*.json")).parent
    (slot / "manifest-000000000099.json").write_bytes(b"\x00garbage\xff" * 40)
    synced = team.run("bob", "sync")
    assert "refused 1 object: not-canonical x1" in synced.out
    assert "not-canonical" in synced.err
    team.folder.rename(team.root / "nas-unmounted")
    try:
        failed = team.run("bob", "sync", check=False)
    finally:
        (team.root / "nas-unmounted").rename(team.folder)
    assert failed.code == 1
    assert "does not exist" in failed.err
    assert "Traceback" not in failed.err
