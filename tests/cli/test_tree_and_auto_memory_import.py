"""``sealmem import --from agents-md|claude-md`` over a whole repository, and
``--from claude-auto-memory`` from the folder Claude Code keeps, over real files.

A repository in a tmp dir holds AGENTS.md files at several depths, copies under
``node_modules``, a virtualenv and ``build``, a link loop and a file too large; Claude
Code's auto memory sits under ``$HOME/.claude/projects/<encoded root>/memory`` (the
tests' HOME is a tmp dir) and is found from a subfolder and from a real linked git
worktree.  Every run previews, applies, applies again; the sources keep their bytes.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.test_markdown_import import _digest, _memories
from tests.support.cli import Run

CliFn = Callable[..., Run]


def _tree(root: Path) -> None:
    files = {
        "AGENTS.md": "# Webshop\n\n- Use pnpm, never npm.\n",
        "packages/api/AGENTS.md": "# API\n\n- Run the tests with pnpm test.\n",
        "packages/web/AGENTS.md": "# Web\n\n- Run the tests with pnpm test.\n",
        "packages/web/src/legacy/AGENTS.md": "- Do not touch the jQuery code.\n",
        "node_modules/left-pad/AGENTS.md": "- Someone else's rule.\n",
        "env/AGENTS.md": "- A virtualenv's copy.\n",
        "build/AGENTS.md": "- A build output copy.\n",
        ".git/AGENTS.md": "- Inside git's own folder.\n",
        "packages/web/README.md": "- Not a rules file.\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "packages" / "huge").mkdir()
    (root / "packages" / "huge" / "AGENTS.md").write_text("- x\n" * 300_000)
    (root / "packages" / "api" / "loop").symlink_to("..", target_is_directory=True)


def test_every_agents_md_of_a_repository_scoped_to_its_folder(
    cli: CliFn, home: Path, tmp_path: Path
) -> None:
    root = tmp_path / "webshop"
    _tree(root)
    before = _digest(root)

    preview = cli("import", "--from", "agents-md", ".", "--json")
    assert preview.code == 0, preview
    doc = preview.json()
    assert [(m["where"], m["content"], m["keywords"][:2]) for m in doc["memories"]] == [
        ("AGENTS.md:3", "Use pnpm, never npm.", ["agents-md", "webshop"]),
        (
            "packages/api/AGENTS.md:3",
            "In packages/api/: Run the tests with pnpm test.",
            ["agents-md", "packages/api"],
        ),
        (
            "packages/web/AGENTS.md:3",
            "In packages/web/: Run the tests with pnpm test.",
            ["agents-md", "packages/web"],
        ),
        (
            "packages/web/src/legacy/AGENTS.md:1",
            "In packages/web/src/legacy/: Do not touch the jQuery code.",
            ["agents-md", "packages/web/src/legacy"],
        ),
    ]
    assert {m["status"] for m in doc["memories"]} == {"new"}
    assert doc["refused"] == [
        {"where": "packages/api/loop", "why": "a symbolic link, not followed"},
        {"where": "packages/huge/AGENTS.md", "why": "it is over 1024 KiB"},
    ]
    assert _memories(home) == []

    applied = cli("import", "--from", "agents-md", ".", "--apply")
    assert applied.code == 0, applied
    assert "created 4 private memories in project webshop" in applied.out
    assert "refused packages/huge/AGENTS.md: it is over 1024 KiB" in applied.err
    stored = _memories(home)
    assert {(vis, src, origin) for _, vis, src, origin, _ in stored} == {
        ("private", "import", "import")
    }
    again = cli("import", "--from", "agents-md", ".", "--apply", "--json").json()
    assert again["created"] == 0
    assert {m["status"] for m in again["memories"]} == {"stored"}
    assert _memories(home) == stored
    assert _digest(root) == before


def test_nested_claude_md_and_the_dot_claude_file(cli: CliFn, home: Path, tmp_path: Path) -> None:
    root = tmp_path / "webshop"
    (root / ".claude").mkdir()
    (root / ".claude" / "CLAUDE.md").write_text("- Prefer small modules.\n")
    (root / "docs" / ".claude").mkdir(parents=True)
    (root / "docs" / ".claude" / "CLAUDE.md").write_text("```sh\nmake docs\n```\n")
    (root / "AGENTS.md").write_text("- Not read as CLAUDE.md.\n")
    (root / ".claude" / "rules" / "frontend").mkdir(parents=True)
    (root / ".claude" / "rules" / "testing.md").write_text(
        '---\npaths:\n  - "tests/**/*.py"\n---\n# Tests\n\n- Never mock the database.\n'
    )
    (root / ".claude" / "rules" / "frontend" / "react.md").write_text(
        "- Use function components.\n"
    )
    (root / "apps" / "web" / ".claude" / "rules").mkdir(parents=True)
    (root / "apps" / "web" / ".claude" / "rules" / "css.md").write_text("- No inline styles.\n")
    (root / "docs" / "rules").mkdir()
    (root / "docs" / "rules" / "guide.md").write_text("- Not a rules file of Claude Code.\n")
    done = cli("import", "--from", "claude-md", str(root), "--json").json()
    assert [(m["where"], m["content"], m["keywords"]) for m in done["memories"]] == [
        (".claude/CLAUDE.md:1", "Prefer small modules.", ["claude-md"]),
        (
            ".claude/rules/testing.md:7",
            "Never mock the database.",
            ["claude-md", "testing", "tests/**/*.py", "tests"],
        ),
        (".claude/rules/frontend/react.md:1", "Use function components.", ["claude-md", "react"]),
        (
            "apps/web/.claude/rules/css.md:1",
            "In apps/web/: No inline styles.",
            ["claude-md", "apps/web", "css"],
        ),
        ("docs/.claude/CLAUDE.md:1", "In docs/:\n```sh\nmake docs\n```", ["claude-md", "docs"]),
    ]


def test_nested_cursor_rules_folders_are_scoped_to_their_folder(
    cli: CliFn, home: Path, tmp_path: Path
) -> None:
    root = tmp_path / "webshop"
    for where, text in {
        ".cursor/rules/style.mdc": "---\ndescription: Style\n---\nPrefer small modules.\n",
        "apps/admin/.cursor/rules/forms.mdc": "Never submit a form twice.\n",
        "node_modules/x/.cursor/rules/theirs.mdc": "Someone else's rule.\n",
        "docs/notes.mdc": "Not in a rules folder.\n",
    }.items():
        (root / where).parent.mkdir(parents=True, exist_ok=True)
        (root / where).write_text(text, encoding="utf-8")
    done = cli("import", "--from", "cursor-rules", ".", "--json").json()
    assert [(m["where"], m["content"], m["keywords"][:2]) for m in done["memories"]] == [
        (".cursor/rules/style.mdc", "Style\n\nPrefer small modules.", ["cursor-rules", "style"]),
        (
            "apps/admin/.cursor/rules/forms.mdc",
            "In apps/admin/: Never submit a form twice.",
            ["cursor-rules", "apps/admin"],
        ),
    ]
    folder = cli("import", "--from", "cursor-rules", str(root / ".cursor" / "rules"), "--json")
    assert [m["where"] for m in folder.json()["memories"]] == ["style.mdc"]


def test_a_claude_md_linked_to_agents_md_is_refused_naming_its_target(
    cli: CliFn, home: Path, tmp_path: Path
) -> None:
    root = tmp_path / "webshop"
    (root / "AGENTS.md").write_text("- Never push to main.\n")
    (root / "CLAUDE.md").symlink_to("AGENTS.md")
    done = cli("import", "--from", "claude-md", ".")
    assert done.code == 0, done
    assert "refused CLAUDE.md: it is a symbolic link (to AGENTS.md), not followed" in done.err
    assert "would create 0 private memories" in done.out
    agents = cli("import", "--from", "agents-md", ".", "--json").json()
    assert [m["content"] for m in agents["memories"]] == ["Never push to main."]


def test_a_folder_that_cannot_be_listed_is_refused_by_name(
    cli: CliFn, home: Path, tmp_path: Path
) -> None:
    """A folder nested past the system's path limit cannot be read (as root too, where
    permissions would not stop it; the import stopped with an OSError): it is named,
    and the rest is read."""
    root = tmp_path / "webshop"
    (root / "AGENTS.md").write_text("- Never push to main.\n")
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(20):  # 20 x 250 characters: past PATH_MAX (4096)
            os.mkdir("d" * 250, dir_fd=fd)
            inner = os.open("d" * 250, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    done = cli("import", "--from", "agents-md", ".", "--json").json()
    assert [m["content"] for m in done["memories"]] == ["Never push to main."]
    [refused] = done["refused"]
    assert refused["where"].startswith("d" * 250 + "/")
    assert refused["why"] == "it cannot be read (File name too long)"


def test_a_repository_without_the_file_is_refused_by_name(cli: CliFn, tmp_path: Path) -> None:
    (tmp_path / "webshop" / "node_modules").mkdir()
    (tmp_path / "webshop" / "node_modules" / "AGENTS.md").write_text("- theirs\n")
    refused = cli("import", "--from", "agents-md", ".")
    assert refused.code == 1
    assert "no AGENTS.md in . or below it" in refused.err


def _encoded(root: Path) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", str(root))


def _auto_memory(root: Path) -> Path:
    """Claude Code's auto memory of the repository ``root``, as Claude Code lays it out."""
    folder = Path(os.environ["HOME"]) / ".claude" / "projects" / _encoded(root) / "memory"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text(
        "# Memory index\n\n"
        "- [No mocks](./feedback_testing.md) — integration tests hit a real database\n"
        "- [Gone](missing.md) — the deploy freeze starts on 2026-03-05\n"
        "- The staging deploy takes about 4 minutes.\n",
        encoding="utf-8",
    )
    (folder / "feedback_testing.md").write_text(
        "---\nname: testing-no-mocks\ndescription: Integration tests hit a real database\n"
        "type: feedback\n---\nNever mock the database in tests.\n\n"
        "**Why:** mocks hid a broken migration.\n",
        encoding="utf-8",
    )
    (folder / "user_role.md").write_text(
        "---\nname: role\ndescription: Ten years of Go, new to React\ntype: user\n---\n",
        encoding="utf-8",
    )
    (folder / "debugging.md").write_text(
        "# Debugging\n\n- CORS errors locally come from the Vite proxy.\n", encoding="utf-8"
    )
    return folder


def test_claude_auto_memory_found_from_a_subfolder_of_the_repository(
    cli: CliFn, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "webshop"
    (root / ".git").mkdir()
    (root / "src" / "app").mkdir(parents=True)
    folder = _auto_memory(root)
    before = _digest(folder)
    monkeypatch.chdir(root / "src" / "app")

    preview = cli("import", "--from", "claude-auto-memory", "--json")
    assert preview.code == 0, preview
    doc = preview.json()
    assert doc["path"] == str(folder)
    assert [(m["where"], m["kind"], m["keywords"]) for m in doc["memories"]] == [
        ("MEMORY.md:4", "note", ["claude-auto-memory", "memory index"]),
        ("MEMORY.md:5", "note", ["claude-auto-memory", "memory index"]),
        ("debugging.md:3", "note", ["claude-auto-memory", "debugging"]),
        ("feedback_testing.md", "warning", ["claude-auto-memory", "feedback", "testing-no-mocks"]),
        ("user_role.md", "preference", ["claude-auto-memory", "user", "role"]),
    ]
    assert doc["memories"][0]["content"].startswith("[Gone](missing.md)")
    assert doc["memories"][3]["content"] == (
        "Integration tests hit a real database\n\nNever mock the database in tests.\n\n"
        "**Why:** mocks hid a broken migration."
    )
    assert _memories(home) == []

    applied = cli("import", "--from", "claude-auto-memory", "--apply")
    assert applied.code == 0, applied
    assert applied.out.splitlines()[0] == f"Claude Code auto memory: {folder}"
    assert "created 5 private memories in project webshop" in applied.out
    stored = _memories(home)
    assert {(vis, src, origin) for _, vis, src, origin, _ in stored} == {
        ("private", "import", "import")
    }
    waiting = cli("captured", "--json").json()["captured"]
    assert len(waiting) == 5
    again = cli("import", "--from", "claude-auto-memory", str(folder), "--apply", "--json")
    assert again.json()["created"] == 0
    assert _memories(home) == stored
    assert _digest(folder) == before


def test_a_repository_given_as_path_is_not_read_as_notes(
    cli: CliFn, home: Path, tmp_path: Path
) -> None:
    """Given the project (not its memory folder), the import reads the project's auto
    memory, not the project's own Markdown; a memory folder that is a link (a shared
    folder linked in, as users of several worktrees do) is read."""
    other = tmp_path / "elsewhere"
    (other / ".git").mkdir(parents=True)
    (other / "README.md").write_text("- The project's own README, not a memory.\n")
    kept = tmp_path / "shared-memory"
    kept.mkdir()
    (kept / "MEMORY.md").write_text("- Payments run in a separate worker.\n")
    projects = Path(os.environ["HOME"]) / ".claude" / "projects" / _encoded(other)
    projects.mkdir(parents=True)
    (projects / "memory").symlink_to(kept, target_is_directory=True)
    for given in (other, projects, projects / "memory"):
        done = cli("import", "--from", "claude-auto-memory", str(given), "--json")
        assert done.code == 0, done
        assert [m["content"] for m in done.json()["memories"]] == [
            "Payments run in a separate worker."
        ]
    gone = cli("import", "--from", "claude-auto-memory", str(tmp_path / "nowhere"))
    assert gone.code == 1
    assert "nowhere does not exist" in gone.err


@pytest.mark.slow
def test_claude_auto_memory_of_a_linked_worktree_is_the_main_checkout_s(
    cli: CliFn, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main = tmp_path / "webshop"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q", str(main)], check=True)
    subprocess.run([*git, "-C", str(main), "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    linked = tmp_path / "webshop-feature"
    subprocess.run([*git, "-C", str(main), "worktree", "add", "-q", str(linked)], check=True)
    _auto_memory(main)
    monkeypatch.chdir(linked)
    done = cli("import", "--from", "claude-auto-memory", "--json")
    assert done.code == 0, done
    assert len(done.json()["memories"]) == 5


def test_claude_auto_memory_setting_and_missing_folder(
    cli: CliFn, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "webshop"
    missing = cli("import", "--from", "claude-auto-memory")
    assert missing.code == 1
    expected = Path(os.environ["HOME"]) / ".claude" / "projects" / _encoded(root) / "memory"
    assert f"{expected} does not exist" in missing.err
    assert "--from claude-auto-memory PATH" in missing.err

    moved = tmp_path / "kept-memory"
    moved.mkdir()
    (moved / "MEMORY.md").write_text("- Releases go out on Tuesdays.\n")
    (root / ".claude").mkdir()
    hostile = tmp_path / "not-memory"
    hostile.mkdir()
    (hostile / "MEMORY.md").write_text("- A committed setting must not choose this.\n")
    (root / ".claude" / "settings.json").write_text(f'{{"autoMemoryDirectory": "{hostile}"}}')
    assert cli("import", "--from", "claude-auto-memory").code == 1  # committed file ignored
    (root / ".claude" / "settings.local.json").write_text(f'{{"autoMemoryDirectory": "{moved}"}}')
    done = cli("import", "--from", "claude-auto-memory", "--json").json()
    assert [m["content"] for m in done["memories"]] == ["Releases go out on Tuesdays."]


def test_import_without_a_file_says_what_to_give(cli: CliFn) -> None:
    plain = cli("import")
    assert plain.code == 1
    assert "give the export file to import" in plain.err
    rules = cli("import", "--from", "agents-md")
    assert rules.code == 1
    assert "--from agents-md reads a file or folder: give its path" in rules.err
