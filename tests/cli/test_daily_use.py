"""The small things a new user meets first: version, help, completion, status, join."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from sealmem.client.sync.engine import SyncSummary
from tests.support.cli import Run

CLI = Callable[..., Run]


def test_version_prints_the_installed_version(cli: CLI) -> None:
    from importlib.metadata import version

    run = cli("--version")
    assert run.code == 0
    assert run.out == f"sealmem {version('sealmem')}\n"


def test_shell_completion_is_offered(cli: CLI) -> None:
    top = cli("--help")
    assert "--install-completion" in top.out
    assert "--show-completion" in top.out
    # The script itself depends on the shell typer detects from the process tree,
    # so only ask for one when the test runs under bash.
    shown = cli("--show-completion", "bash")
    if shown.code == 0:
        assert "_sealmem_completion" in shown.out
    else:
        assert "not supported" in shown.err


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [["remember"], ["recall"], ["install"], ["team", "join"], ["admin", "grant"], ["--help"]],
    ids=lambda c: "-".join(c),
)
def test_help_shows_readable_metavars(cli: CLI, command: list[str]) -> None:
    run = cli(*command, "--help") if command != ["--help"] else cli("--help")
    assert run.code == 0
    assert re.findall(r"<[a-z]+(?:\[[a-z]+\])?>", run.out) == []  # no <str>, <bool>, <list[str]>


def test_help_names_option_values(cli: CLI) -> None:
    out = cli("remember", "--help").out
    assert re.search(r"--kind\s+KIND\b", out)
    assert re.search(r"-k, --keyword\s+KEYWORD\b", out)
    assert re.search(r"-p, --project\s+PROJECT\b", out)


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (["sync"], [r"--interval\s+SECONDS\b", r"--max-backoff\s+SECONDS\b"]),
        (["admin", "checkpoint"], [r"--warn-after\s+HOURS\b", r"--stop-after\s+HOURS\b"]),
        (
            ["hub", "serve"],
            [
                *(r"--data\s+DIR\b", r"--db\s+URL\b", r"--blobs\s+URL\b"),
                *(r"--team-quota-mb\s+MIB\b", r"--member-rate\s+N\b", r"--member-burst\s+N\b"),
                r"--metrics-token\s+TOKEN\b",
            ],
        ),
        (["hook"], [r"--home\s+DIR\b"]),
        (["watch"], [r"--root\s+DIR\b"]),
    ],
    ids=["sync", "admin-checkpoint", "hub-serve", "hook", "watch"],
)
def test_help_names_what_a_value_is_not_the_option_again(
    cli: CLI, command: list[str], shown: list[str]
) -> None:
    out = cli(*command, "--help").out
    for pattern in shown:
        assert re.search(pattern, out), (pattern, out)


def test_status_is_a_readable_view_and_json_is_unchanged(cli: CLI, home: Path) -> None:
    assert cli("remember", "deploys go blue-green", "--kind", "decision").code == 0
    assert cli("remember", "my editor setup", "--private").code == 0
    run = cli("status")
    assert run.code == 0
    assert "stats." not in run.out  # not a flattened dict
    lines = run.out.splitlines()
    assert lines[0] == f"home:      {home}"
    assert "memories:  2 (1 private), 0 forgotten, 0 older versions" in lines
    assert "  by kind:    decision 1, note 1" in lines
    assert "  by project: webshop 2" in lines
    assert lines[-2] == "periods:   review 7 days (default), stale 180 days (default)"
    assert lines[-1] == "sync: not in a team (local only)"
    doc = cli("status", "--json").json()
    assert set(doc) == {"home", "store", "author", "project", "stats", "sync", "periods"}
    assert doc["stats"]["memories"] == 2


@pytest.mark.parametrize(
    ("versions", "chunks", "members", "refused", "line"),
    [
        (1, 1, 1, 0, "pushed 1 version in 1 chunk; pulled 0 new + 0 updated from 1 member; "
         "refused 0 objects"),
        (2, 3, 0, 1, "pushed 2 versions in 3 chunks; pulled 0 new + 0 updated from 0 members; "
         "refused 1 object: fork x1"),
    ],
)  # fmt: skip
def test_sync_summary_line_counts_in_good_english(
    versions: int, chunks: int, members: int, refused: int, line: str
) -> None:
    from sealmem.client.sync.session import Refusal

    summary = SyncSummary(
        pushed_versions=versions,
        pushed_chunks=chunks,
        members={f"m{i}" for i in range(members)},
        refused=[Refusal("fork", "manifest", "seen") for _ in range(refused)],
    )
    assert summary.line() == line


@pytest.mark.slow
def test_join_says_the_request_is_waiting_not_joined(
    cli: CLI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "nas"
    folder.mkdir()
    monkeypatch.setenv("SEALMEM_HOME", str(tmp_path / "admin"))
    made = cli("team", "create", "Acme", "--folder", str(folder), "--name", "root")
    assert made.code == 0, made.err
    invite = cli("team", "invite", "--json").json()["invite"]
    monkeypatch.setenv("SEALMEM_HOME", str(tmp_path / "bob"))
    run = cli("team", "join", invite, "--name", "bob")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    (fingerprint,) = [ln.split()[2] for ln in lines if ln.startswith("your fingerprint:")]
    first = lines[0]
    assert first == (
        f"join request posted; waiting for an admin to approve it (fingerprint {fingerprint})"
    )
    assert "joined" not in run.out
