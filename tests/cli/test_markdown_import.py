"""``sealmem import --from`` and ``sealmem export --format markdown`` over real files.

A CLAUDE.md, an AGENTS.md, a ``.cursor/rules`` folder and an Obsidian folder (with a
hostile file name and planted links) in tmp dirs: the preview writes nothing, apply
then apply again creates nothing new, the source keeps its bytes, the memories are
private and wait in ``sealmem captured``; an export to Markdown read back into a fresh
home gives the same texts, and never clobbers a file it did not write.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from sealmem.client.recall.api import MemoryStore
from tests.support.cli import Run

CliFn = Callable[..., Run]

CLAUDE_MD = """\
# Webshop

## Testing
- Never push to main without running the tests.
- We decided to use pytest, not unittest.
- The fixtures live in tests/fixtures.

## Style
Prefer small modules.
"""


def _digest(root: Path) -> dict[str, str]:
    """Every file below ``root`` by its hash (a link: its target's name): the source's state."""
    out = {}
    for here, _dirs, files in os.walk(root):
        for name in files:
            path = Path(here, name)
            if path.is_symlink():
                data = os.readlink(path).encode()
            else:  # a FIFO is named, never opened: a reader would wait on it
                data = path.read_bytes() if path.is_file() else b"not a file"
            out[str(path.relative_to(root))] = hashlib.sha256(data).hexdigest()
    return out


def _memories(home: Path) -> list[tuple[str, str, str, str, str]]:
    with MemoryStore.open(home / "store.db") as store:
        rows = store.connection.execute(
            "SELECT content, visibility, source, origin, kind FROM memories ORDER BY content"
        ).fetchall()
    return [tuple(r) for r in rows]


def test_claude_md_preview_apply_and_apply_again(cli: CliFn, home: Path, tmp_path: Path) -> None:
    source = tmp_path / "webshop" / "CLAUDE.md"
    source.write_text(CLAUDE_MD, encoding="utf-8")
    before = _digest(source.parent)

    preview = cli("import", "--from", "claude-md", str(source))
    assert preview.code == 0, preview
    lines = preview.out.splitlines()
    assert lines[0].split()[:2] == ["new", "warning"]
    assert "[claude-md, webshop, testing] Never push to main" in lines[0]
    assert "would create 4 private memories in project webshop" in lines[-1]
    assert _memories(home) == []  # a preview writes nothing

    applied = cli("import", "--from", "claude-md", str(source.parent), "--apply")
    assert applied.code == 0, applied
    assert "created 4 private memories" in applied.out
    stored = _memories(home)
    assert {(vis, src, origin) for _, vis, src, origin, _ in stored} == {
        ("private", "import", "import")
    }
    assert [kind for *_, kind in stored] == ["warning", "decision", "note", "decision"]

    again = cli("import", "--from", "claude-md", str(source), "--apply", "--json")
    doc = again.json()
    assert doc["created"] == 0
    assert {m["status"] for m in doc["memories"]} == {"stored"}
    assert _memories(home) == stored
    with MemoryStore.open(home / "store.db") as store:
        seen = {r[0] for r in store.connection.execute("SELECT seen_count FROM memories")}
    assert seen == {1}  # not even a repeat was counted
    assert _digest(source.parent) == before  # the source is only read


def test_imports_wait_in_captured_until_shared(cli: CliFn, home: Path, tmp_path: Path) -> None:
    (tmp_path / "webshop" / "AGENTS.md").write_text(
        "# Agents\n\n- Never edit generated files in gen/.\n", encoding="utf-8"
    )
    assert cli("import", "--from", "agents-md", ".", "--apply").code == 0
    waiting = cli("captured", "--json").json()["captured"]
    assert [(m["source"], m["visibility"]) for m in waiting] == [("import", "private")]
    accepted = cli("captured", "accept", waiting[0]["id"])
    assert accepted.code == 0, accepted
    assert _memories(home) == [
        ("Never edit generated files in gen/.", "team", "import", "import", "warning")
    ]
    assert cli("captured", "--json").json()["captured"] == []


def test_cursor_rules_folder_one_memory_per_rule(cli: CliFn, home: Path, tmp_path: Path) -> None:
    rules = tmp_path / "webshop" / ".cursor" / "rules"
    (rules / "backend").mkdir(parents=True)
    (rules / "testing.mdc").write_text(
        "---\ndescription: Tests\nglobs: tests/**\nalwaysApply: false\n---\n"
        "Always use the real database in tests.\n",
        encoding="utf-8",
    )
    (rules / "backend" / "api.mdc").write_text("We use FastAPI for the API.\n", encoding="utf-8")
    (rules / "README.txt").write_text("not a rule\n", encoding="utf-8")
    done = cli("import", "--from", "cursor-rules", str(tmp_path / "webshop"), "--json").json()
    assert [(m["where"], m["kind"]) for m in done["memories"]] == [
        (".cursor/rules/testing.mdc", "warning"),
        (".cursor/rules/backend/api.mdc", "decision"),
    ]
    assert done["memories"][0]["keywords"] == ["cursor-rules", "testing", "tests/**"]
    assert done["memories"][0]["content"] == "Tests\n\nAlways use the real database in tests."


def test_obsidian_folder_refuses_links_and_bad_files_by_name(
    cli: CliFn, home: Path, tmp_path: Path
) -> None:
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    (vault / "daily").mkdir(parents=True)
    (vault / ".obsidian").mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("a private key lives here\n", encoding="utf-8")
    (vault / ".obsidian" / "workspace.md").write_text("editor state\n", encoding="utf-8")
    (vault / "auth.md").write_text(
        "---\ntitle: Auth design\ntags: [auth, security]\ntype: decision\n---\n"
        "We sign sessions with Ed25519.\n",
        encoding="utf-8",
    )
    hostile = "\x1b[2Jevil\u202e.md"
    (vault / "daily" / hostile).write_text("Deploys \x1b[31mhappen\x1b[0m on Tuesdays.\n")
    (vault / "latin1.md").write_bytes("caf\xe9\n".encode("latin-1"))
    (vault / "bad.md").write_text("---\ntitle: [unclosed\n---\nbody\n", encoding="utf-8")
    (vault / "long.md").write_text("x" * 12_000, encoding="utf-8")
    if hasattr(os, "mkfifo"):
        os.mkfifo(vault / "pipe.md")  # a reader would wait on it forever
    (vault / "planted.md").symlink_to(outside / "secret.md")
    (vault / "linked").symlink_to(outside, target_is_directory=True)
    before = _digest(vault)

    done = cli("import", "--from", "markdown", str(vault), "--apply")
    assert done.code == 0, done
    assert "\x1b" not in done.out + done.err
    assert "\u202e" not in done.out + done.err
    assert "\\x1b[2Jevil\\u202e.md" in done.out
    for refused in (
        "bad.md: its front matter is not valid YAML",
        "latin1.md: it is not UTF-8",
        "planted.md: it is a symbolic link",
        "linked: a symbolic link",
        "long.md: content is 12000 characters",
    ):
        assert f"refused {refused}" in done.err, done.err
    texts = [content for content, *_ in _memories(home)]
    assert texts == [
        "Auth design\n\nWe sign sessions with Ed25519.",
        "Deploys \x1b[31mhappen\x1b[0m on Tuesdays.",
    ]
    assert _digest(vault) == before
    if hasattr(os, "mkfifo"):
        assert "refused pipe.md: it is not a regular file" in done.err


def test_markdown_export_round_trip_and_never_clobbers(
    cli: CliFn, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [
        "../../etc/passwd is not a path to write",
        "We decided: Postgres 16.\n\nSee `docs/db.md`: it: has: colons\n---\nand a rule line",
        "Quotes \" and ' and a #hash and - dash: all kept",
    ]
    for text in texts:
        assert cli("remember", text, "-k", "db: notes", "--importance", "0.8").code == 0
    out = tmp_path / "export"
    done = cli("export", "--format", "markdown", str(out))
    assert done.code == 0, done
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == 3
    assert all(re.fullmatch(r"[a-z0-9-]+-[0-9a-f]{12}\.md", n) for n in names), names
    assert cli("export", "--format", "markdown", str(out), "--json").json()["unchanged"] == 3

    monkeypatch.setenv("SEALMEM_HOME", str(tmp_path / "fresh"))
    back = cli("import", "--from", "markdown", str(out), "--apply", "--json").json()
    assert back["created"] == 3
    assert back["refused"] == []
    again = [(c, kind) for c, _, _, _, kind in _memories(tmp_path / "fresh")]
    assert sorted(c for c, _ in again) == sorted(texts)
    with MemoryStore.open(tmp_path / "fresh" / "store.db") as store:
        rows = store.connection.execute("SELECT keywords, importance FROM memories").fetchall()
    assert {(r[0], r[1]) for r in rows} == {("db: notes", 0.8)}

    monkeypatch.setenv("SEALMEM_HOME", str(home))
    edited = out / names[0]
    edited.write_text(edited.read_text() + "\nmy own note\n")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (out / names[1]).unlink()
    (out / names[1]).symlink_to(victim)
    refused = cli("export", "--format", "markdown", str(out))
    assert refused.code != 0
    assert "2 files in" in refused.err
    assert "--force" in refused.err
    assert "my own note" in edited.read_text()
    assert (out / names[1]).is_symlink()
    forced = cli("export", "--format", "markdown", str(out), "--force")
    assert forced.code == 0, forced
    assert "my own note" not in edited.read_text()
    assert not (out / names[1]).is_symlink()
    assert victim.read_text() == "keep me\n"


def test_the_json_export_and_import_are_unchanged(cli: CliFn, tmp_path: Path) -> None:
    assert cli("remember", "a fact to carry").code == 0
    file = tmp_path / "export.json"
    assert cli("export", "-o", str(file)).code == 0
    assert "1 unchanged" in cli("import", str(file)).out
    wrong = cli("import", str(file), "--apply")
    assert wrong.code != 0
    assert "--apply and --project go with --from" in wrong.err
    assert "--format markdown DIR" in cli("export", str(tmp_path / "dir")).err


def test_a_secret_in_the_source_is_redacted_in_the_preview_and_the_store(
    cli: CliFn, home: Path, tmp_path: Path
) -> None:
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    (tmp_path / "webshop" / "CLAUDE.md").write_text(f"- The CI token is {token}.\n")
    preview = cli("import", "--from", "claude-md", ".")
    assert preview.code == 0, preview
    assert token not in preview.out
    assert "The CI token is" in preview.out
    applied = cli("import", "--from", "claude-md", ".", "--apply")
    assert "CLAUDE.md:1:" in applied.err
    assert token not in applied.out + applied.err
    [(content, *_)] = _memories(home)
    assert token not in content


def test_export_into_a_file_or_below_one_is_refused(cli: CliFn, tmp_path: Path) -> None:
    assert cli("remember", "something to export").code == 0
    file = tmp_path / "a-file"
    file.write_text("x")
    refused = cli("export", "--format", "markdown", str(file))
    assert refused.code == 1
    assert "is a file, not a folder" in refused.err
    refused = cli("export", "--format", "markdown", str(file / "below"))
    assert refused.code == 1
    assert refused.err.startswith("error: cannot export into")


def test_the_older_cursorrules_file_is_read_like_a_rules_file(
    cli: CliFn, home: Path, tmp_path: Path
) -> None:
    (tmp_path / "webshop" / ".cursorrules").write_text(
        "# Style\n- Never use print for logging.\n- Prefer dataclasses.\n", encoding="utf-8"
    )
    done = cli("import", "--from", "cursor-rules", ".", "--json").json()
    assert [(m["where"], m["kind"], m["keywords"]) for m in done["memories"]] == [
        (".cursorrules:2", "warning", ["cursor-rules", "style"]),
        (".cursorrules:3", "decision", ["cursor-rules", "style"]),
    ]
