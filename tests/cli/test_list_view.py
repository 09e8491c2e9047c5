"""``list`` as a person reads it, and ``import`` progress: run through the real CLI."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from tests.cli.conftest import SEALMEM, Run

CliFn = Callable[..., Run]

LONG = (
    "Builds need Node 18 because the lockfile pins it and the CI image ships it; "
    "upgrading means regenerating the lockfile and bumping the image tag together."
)


def remember(cli: CliFn, *args: str) -> str:
    run = cli("remember", *args, "--json")
    assert run.code == 0, run.err
    return str(run.json()["memory"]["id"])


def rows(table: str) -> list[str]:
    """The table without its header line."""
    lines = table.rstrip("\n").splitlines()
    assert lines[0].split() == ["ID", "UPDATED", "KIND", "AUTHOR", "CONTENT"]
    return lines[1:]


@pytest.fixture
def pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Output goes to a pipe with no width known: nothing is wrapped."""
    monkeypatch.delenv("COLUMNS", raising=False)


def test_list_shows_the_whole_first_line_in_a_pipe(cli: CliFn, pipe: None) -> None:
    memory_id = remember(cli, LONG)
    (row,) = rows(cli("list").out)
    assert row.startswith(memory_id[-12:] + "  ")  # the short id every command accepts
    assert row.endswith(LONG)  # not cut at 60 characters


def test_list_wraps_the_content_under_its_column(
    cli: CliFn, monkeypatch: pytest.MonkeyPatch
) -> None:
    remember(cli, LONG)
    monkeypatch.setenv("COLUMNS", "100")
    lines = rows(cli("list").out)
    assert len(lines) > 1
    assert all(len(line) <= 100 for line in lines)
    column = lines[0].index("Builds")
    assert all(line[:column].strip() == "" for line in lines[1:])
    assert " ".join(line[column:] for line in lines) == LONG


def test_a_narrow_terminal_puts_the_content_under_the_row(
    cli: CliFn, monkeypatch: pytest.MonkeyPatch
) -> None:
    remember(cli, LONG)
    monkeypatch.setenv("COLUMNS", "50")
    head, *content = rows(cli("list").out)
    assert "Builds" not in head
    assert all(len(line) <= 50 and line.startswith("    ") for line in content)
    assert " ".join(line.strip() for line in content) == LONG


def test_list_shows_the_first_line_and_full_shows_every_line(cli: CliFn, pipe: None) -> None:
    remember(cli, "Release checklist\n\n1. tag the commit\n2. push the tag\n")
    (row,) = rows(cli("list").out)
    assert row.endswith("Release checklist …")
    assert "tag the commit" not in row
    full = rows(cli("list", "--full").out)
    column = full[0].index("Release")
    assert [line[column:] for line in full] == [
        "Release checklist",
        "",
        "1. tag the commit",
        "2. push the tag",
    ]


def test_list_marks_a_superseded_memory(cli: CliFn, pipe: None) -> None:
    old = remember(cli, "Builds need Node 18")
    new = remember(cli, "Builds need Node 20", "--supersedes", old)
    by_id = {line.split()[0]: line for line in rows(cli("list").out)}
    assert by_id[old[-12:]].endswith(f"(superseded by {new[-12:]}) Builds need Node 18")
    assert "superseded" not in by_id[new[-12:]]
    assert cli("show", new[-12:]).code == 0  # the short id in the mark resolves


def test_list_forgotten_marks_tombstones(cli: CliFn, pipe: None) -> None:
    kept = remember(cli, "The wiki moved to docs.example.com")
    gone = remember(cli, "The staging password rotates weekly")
    assert cli("forget", gone, "--reason", "not true any more").code == 0
    assert [line.split()[0] for line in rows(cli("list").out)] == [kept[-12:]]
    listed = {line.split()[0]: line for line in rows(cli("list", "--forgotten").out)}
    assert listed[gone[-12:]].endswith("(forgotten: not true any more)")
    assert "forgotten" not in listed[kept[-12:]]
    docs = cli("list", "--forgotten", "--json").json()["memories"]
    assert {d["id"]: d["deleted"] for d in docs} == {kept: False, gone: True}


def test_a_teammates_forget_reason_cannot_add_a_row(cli: CliFn, pipe: None) -> None:
    """A forget's reason is the forgetter's text (a teammate's, once synced): a newline
    or tab in it is shown as ``\\n``/``\\t`` on the tombstone's row, never as a row of
    its own that passes for another memory by another writer."""
    from sealmem.client.paths import store_path
    from sealmem.client.store.connection import transaction
    from sealmem.client.store.memory import Provenance
    from sealmem.client.store.writer import write_version
    from sealmem.protocol.hlc import Hlc
    from sealmem.protocol.record import Record, new_memory_id

    now, bob = 1_767_225_600_000, "b" * 26
    forged = "7777aaaa9999  2026-01-01 00:00 UTC  decision  alice   Push to main, CI is off"
    gone = new_memory_id(now, os.urandom(10))
    with MemoryStore.open(store_path(Path(os.environ["SEALMEM_HOME"]))) as store:
        record = Record(
            gone, "webshop", "note", "", (), 0.5, bob, bob, now, Hlc(now, 1), (),
            deleted=True, delete_reason=f"stale\n{forged}\tend",
        ).validate()  # fmt: skip
        with transaction(store.connection) as conn:
            write_version(
                conn, record, provenance=Provenance("folder", bob, "bob", True, now, 1),
                local_importance=0.5, seen_count=0, updated_at=now,
            )  # fmt: skip
    (row,) = rows(cli("list", "--forgotten").out)
    assert row.startswith(gone[-12:])
    assert row.endswith(f"(forgotten: stale\\n{forged}\\tend)")


def test_list_json_is_the_same_document(cli: CliFn) -> None:
    old = remember(cli, "Builds need Node 18")
    remember(cli, "Builds need Node 20", "--supersedes", old)
    docs = cli("list", "--json").json()["memories"]
    with MemoryStore.open() as store:
        assert docs == [m.to_dict() for m in store.recent(project="webshop")]


# -- import progress ----------------------------------------------------------------


def _export_file(tmp_path: Path, count: int) -> Path:
    """An export of ``count`` memories, made in a home of its own."""
    with MemoryStore.open(tmp_path / "source-home" / "store.db") as store:
        for n in range(count):
            store.remember(f"imported fact number {n}", project="webshop")
        document = store.export()
    path = tmp_path / "export.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.slow
def test_import_outside_a_terminal_prints_only_the_summary(cli: CliFn, tmp_path: Path) -> None:
    path = _export_file(tmp_path, 210)
    run = cli("import", str(path))
    assert run.code == 0, run.err
    assert run.err == ""  # no bare "importing" on a log or a pipe
    assert run.out == f"imported {path}: 210 added, 0 updated, 0 unchanged, 0 skipped\n"


def _run_with_stderr_on_a_tty(args: list[str], home: Path) -> tuple[int, str, str]:
    primary, secondary = pty.openpty()
    env = {**os.environ, "SEALMEM_HOME": str(home), "COLUMNS": "100", "TERM": "xterm"}
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=secondary, env=env, cwd=Path.cwd(), text=True
    )
    os.close(secondary)
    seen = b""
    while True:
        ready, _, _ = select.select([primary], [], [], 60)
        if not ready:
            proc.kill()
            break
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    os.close(primary)
    assert proc.stdout is not None
    with proc.stdout:
        out = proc.stdout.read()
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode("utf-8", "replace"))
    return proc.wait(timeout=60), out, plain


@pytest.mark.slow
def test_import_on_a_terminal_shows_a_progress_bar(home: Path, tmp_path: Path) -> None:
    path = _export_file(tmp_path, 210)
    code, out, err = _run_with_stderr_on_a_tty([str(SEALMEM), "import", str(path)], home)
    assert code == 0, err
    assert "importing" in err
    assert "210/210 versions" in err  # how far, not one word
    assert out == f"imported {path}: 210 added, 0 updated, 0 unchanged, 0 skipped\n"
