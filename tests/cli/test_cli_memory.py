"""The local-memory commands, run in-process through ``main()`` on a real store."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import Run

CliFn = Callable[..., Run]


def remember(cli: CliFn, *args: str) -> str:
    run = cli("remember", *args, "--json")
    assert run.code == 0, run.err
    return str(run.json()["memory"]["id"])


def test_remember_then_recall_round_trip(cli: CliFn) -> None:
    run = cli(
        "remember",
        "Use pnpm, not npm, for the frontend workspace.",
        "--kind",
        "decision",
        "-k",
        "pnpm",
        "-k",
        "frontend",
        "--importance",
        "0.9",
        "--json",
    )
    assert run.code == 0, run.err
    stored = run.json()
    assert stored["created"] is True
    assert stored["merged"] is False
    memory = stored["memory"]
    assert memory["project"] == "webshop"  # the cwd's name
    assert memory["kind"] == "decision"
    assert memory["keywords"] == ["pnpm", "frontend"]
    assert memory["importance"] == 0.9
    assert memory["origin"] == "cli"

    hits = cli("recall", "which package manager for the frontend", "--json").json()["hits"]
    assert [h["id"] for h in hits] == [memory["id"]]
    assert hits[0]["provenance"]["transport"] == "local"
    assert hits[0]["author"] == memory["author"]
    assert hits[0]["score"] > 0
    assert hits[0]["why"]


def test_recall_for_people_shows_why_and_who(cli: CliFn) -> None:
    remember(cli, "Staging deploys need the VPN.", "--kind", "warning")
    run = cli("recall", "staging deploy")
    assert run.code == 0
    assert "Staging deploys need the VPN." in run.out
    assert "why:" in run.out
    assert "via local" in run.out
    assert "warning" in run.out


def test_content_from_stdin(cli: CliFn) -> None:
    run = cli("remember", "-", "--json", stdin="The cache TTL is 300 seconds.\n")
    assert run.code == 0, run.err
    memory_id = run.json()["memory"]["id"]
    shown = cli("show", memory_id, "--json").json()
    assert shown["content"].strip() == "The cache TTL is 300 seconds."


def test_same_content_merges(cli: CliFn) -> None:
    first = remember(cli, "Run the linter before pushing.", "-k", "lint")
    run = cli("remember", "Run the linter before pushing.", "-k", "ci", "--json")
    doc = run.json()
    assert doc["merged"] is True
    assert doc["memory"]["id"] == first
    assert sorted(doc["memory"]["keywords"]) == ["ci", "lint"]
    assert "merged into existing memory" in cli("remember", "Run the linter before pushing.").out


def test_project_scope_and_all_projects(cli: CliFn) -> None:
    remember(cli, "Payments use Stripe webhooks.", "--project", "billing")
    assert cli("recall", "stripe webhooks", "--json").json()["hits"] == []
    scoped = cli("recall", "stripe webhooks", "--project", "billing", "--json").json()
    everywhere = cli("recall", "stripe webhooks", "--all-projects", "--json").json()
    assert len(scoped["hits"]) == 1
    assert [h["project"] for h in everywhere["hits"]] == ["billing"]


def test_supersede_demotes_and_links(cli: CliFn) -> None:
    old = remember(cli, "The API rate limit is 100 requests per minute.", "-k", "ratelimit")
    new = remember(
        cli,
        "The API rate limit is 500 requests per minute since v2.",
        "-k",
        "ratelimit",
        "--supersedes",
        old,
    )
    hits = cli("recall", "API rate limit", "--json").json()["hits"]
    assert [h["id"] for h in hits] == [new, old]
    assert [m["id"] for m in hits[1]["superseded_by"]] == [new]
    assert "superseded by" in cli("recall", "API rate limit").out


def test_unknown_supersedes_stores_nothing(cli: CliFn) -> None:
    missing = "01900000-0000-7000-8000-000000000000"
    run = cli("remember", "orphan correction", "--supersedes", missing)
    assert run.code == 1
    assert missing in run.err
    assert cli("list", "--json").json()["memories"] == []


def test_redaction_warning_and_ids_people_can_copy(cli: CliFn) -> None:
    run = cli("remember", "CI token ghp_abcdefghijklmnopqrstuvwxyz0123456789 expires soon")
    assert run.code == 0
    assert run.err.startswith("warning: redacted")
    assert "ghp_abcdef" not in run.err
    memory_id = run.out.split()[1]
    recalled = cli("recall", "CI token expires")
    assert memory_id in recalled.out  # the full id, usable with show/forget
    assert "ghp_abcdef" not in recalled.out
    assert cli("show", memory_id[:13]).code == 0  # a unique prefix will do


def test_import_from_stdin(cli: CliFn, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    memory_id = remember(cli, "shipped through a pipe")
    exported = cli("export").out
    monkeypatch.setenv("SEALMEM_HOME", str(tmp_path / "piped-home"))
    run = cli("import", "-", "--json", stdin=exported)
    assert run.code == 0, run.err
    assert run.json()["added"] == 1
    assert cli("show", memory_id, "--json").json()["content"] == "shipped through a pipe"


def test_show_and_unknown_id(cli: CliFn) -> None:
    memory_id = remember(cli, "Docs live in the wiki.")
    run = cli("show", memory_id)
    assert run.code == 0
    assert memory_id in run.out
    assert "Docs live in the wiki." in run.out
    missing = cli("show", "01900000-0000-7000-8000-000000000000")
    assert missing.code == 1
    assert missing.out == ""
    assert len(missing.err.strip().splitlines()) == 1


@pytest.mark.slow
def test_list_newest_first_with_limit(cli: CliFn) -> None:
    ids = [remember(cli, f"fact number {n}") for n in range(3)]
    listed = cli("list", "--json").json()["memories"]
    assert [m["id"] for m in listed] == list(reversed(ids))
    assert len(cli("list", "--limit", "2", "--json").json()["memories"]) == 2
    table = cli("list").out
    assert table.splitlines()[0].split() == ["ID", "UPDATED", "KIND", "AUTHOR", "CONTENT"]
    assert ids[0][-12:] in table  # the short id: room for the content


@pytest.mark.slow
def test_forget_requires_reason_and_keeps_it(cli: CliFn) -> None:
    memory_id = remember(cli, "The staging password rotates weekly.")
    no_reason = cli("forget", memory_id)
    assert no_reason.code == 1
    assert "--reason" in no_reason.err
    assert len(no_reason.err.strip().splitlines()) == 1
    blank = cli("forget", memory_id, "--reason", "  ")
    assert blank.code == 1
    assert "reason" in blank.err
    assert cli("show", memory_id, "--json").json()["deleted"] is False

    done = cli("forget", memory_id, "--reason", "outdated", "--json")
    assert done.code == 0, done.err
    tomb = cli("show", memory_id, "--json").json()
    assert tomb["deleted"] is True
    assert tomb["delete_reason"] == "outdated"
    assert tomb["content"] == ""
    assert cli("recall", "staging password", "--json").json()["hits"] == []


@pytest.mark.slow
def test_export_import_round_trip(
    cli: CliFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = {remember(cli, f"exported memory {n}", "-k", "export") for n in range(3)}
    dump = tmp_path / "dump.json"
    run = cli("export", "--output", str(dump))
    assert run.code == 0, run.err
    assert dump.stat().st_mode & 0o777 == 0o600
    document = json.loads(dump.read_text())
    streamed = json.loads(cli("export").out)
    assert {k: v for k, v in streamed.items() if k != "exported_at"} == {
        k: v for k, v in document.items() if k != "exported_at"
    }

    monkeypatch.setenv("SEALMEM_HOME", str(tmp_path / "other-home"))
    first = cli("import", str(dump), "--json").json()
    assert first["added"] == 3
    again = cli("import", str(dump), "--json").json()
    assert again["added"] == 0
    assert again["unchanged"] == 3
    assert {m["id"] for m in cli("list", "--json").json()["memories"]} == ids
    assert document  # the export is a non-empty document


def test_import_refuses_bad_files(cli: CliFn, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    run = cli("import", str(bad))
    assert run.code == 1
    assert "not JSON" in run.err
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    assert "not an export document" in cli("import", str(listed)).err
    assert cli("import", str(tmp_path / "missing.json")).code == 1


def test_big_import_outside_a_terminal_draws_no_progress(cli: CliFn, tmp_path: Path) -> None:
    for n in range(3):
        remember(cli, f"seed {n}")
    document = json.loads(cli("export").out)
    template = document["memories"][0]
    many = []
    for n in range(250):
        copy = json.loads(json.dumps(template))
        copy["record"]["id"] = f"01900000-0000-7000-8000-{n:012x}"
        copy["record"]["content"] = f"bulk memory {n}"
        many.append(copy)
    document["memories"] = many
    big = tmp_path / "big.json"
    big.write_text(json.dumps(document))
    run = cli("import", str(big), "--json")
    if run.code != 0:
        pytest.fail(run.err)
    assert run.json()["added"] == 250
    assert run.err == ""  # the bar is drawn on a terminal only (tests/cli/test_list_view.py)


@pytest.mark.slow
def test_stats_status_doctor(cli: CliFn, home: Path) -> None:
    remember(cli, "one memory", "--kind", "fact")
    stats = cli("stats", "--json").json()
    assert stats
    status = cli("status", "--json").json()
    assert status["store"].startswith(str(home))
    assert status["project"] == "webshop"
    assert cli("status").code == 0
    doctor = cli("doctor", "--json")
    assert doctor.code == 0, doctor.out
    assert doctor.json()["ok"] is True
    assert all(c["ok"] for c in doctor.json()["checks"])
    assert "all good" in cli("doctor").out


def test_doctor_fails_with_exit_1(cli: CliFn, home: Path) -> None:
    cli("init")
    (home / "store.db").chmod(0o644)  # memories readable by other users
    run = cli("doctor", "--json")
    assert run.code == 1
    failed = [c["name"] for c in run.json()["checks"] if not c["ok"]]
    assert failed == ["file_modes"]
    human = cli("doctor")
    assert human.code == 1
    assert "FAIL" in human.out


def test_init_creates_home(cli: CliFn, home: Path) -> None:
    doc = cli("init", "--json").json()
    assert Path(doc["store"]).is_file()
    assert doc["home"] == str(home)
    assert home.stat().st_mode & 0o777 == 0o700
    assert str(home) in cli("init").out
