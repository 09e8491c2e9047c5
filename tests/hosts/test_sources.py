"""Reading the files where teams keep memory: CLAUDE.md/AGENTS.md blocks, .mdc rules,
basic-memory/Obsidian notes (pure functions over text)."""

from __future__ import annotations

import pytest

from sealmem.client.hosts.sources import (
    Unreadable,
    from_cursor_rule,
    from_note,
    from_rules,
    guess_kind,
    split_front_matter,
)

CLAUDE_MD = """\
# Webshop

The shop's backend, in Python.

## Testing
- Never push to main without running the tests.
- We decided to use pytest, not unittest.
  - fixtures live in tests/fixtures
* The CI runs on every push.

```sh
# not a heading: a comment in a code block
pytest -q
```

<!-- a comment for editors, not a memory -->

### Database
1. Always run migrations with `make migrate`.
2. Use PostgreSQL 16.

## Style
Prefer small modules.
"""


def test_one_memory_per_bullet_and_paragraph_with_headings_as_keywords() -> None:
    found = from_rules(CLAUDE_MD, label="claude-md", name="CLAUDE.md")
    assert [c.content.splitlines()[0] for c in found] == [
        "The shop's backend, in Python.",
        "Never push to main without running the tests.",
        "We decided to use pytest, not unittest.",
        "The CI runs on every push.",
        "Always run migrations with `make migrate`.",
        "Use PostgreSQL 16.",
        "Prefer small modules.",
    ]
    by_line = {c.content.splitlines()[0]: c for c in found}
    nested = by_line["We decided to use pytest, not unittest."]
    assert (
        nested.content
        == "We decided to use pytest, not unittest.\n- fixtures live in tests/fixtures"
    )
    assert nested.keywords == ("claude-md", "webshop", "testing")
    assert by_line["Use PostgreSQL 16."].keywords == ("claude-md", "webshop", "testing", "database")
    assert by_line["Prefer small modules."].keywords == ("claude-md", "webshop", "style")
    # the code block joins the memory before it; its '#' line is no heading
    ci = by_line["The CI runs on every push."]
    assert "pytest -q" in ci.content
    assert "# not a heading" in ci.content
    assert not any("comment for editors" in c.content for c in found)
    assert by_line["Never push to main without running the tests."].where == "CLAUDE.md:6"


def test_kinds_are_guessed_from_the_words() -> None:
    found = {c.content.splitlines()[0]: c.kind for c in from_rules(CLAUDE_MD, label="x", name="f")}
    assert found["Never push to main without running the tests."] == "warning"
    assert found["Always run migrations with `make migrate`."] == "warning"
    assert found["We decided to use pytest, not unittest."] == "decision"
    assert found["Use PostgreSQL 16."] == "decision"
    assert found["Prefer small modules."] == "decision"
    assert found["The CI runs on every push."] == "note"
    assert guess_kind("Don’t commit .env files") == "warning"
    assert guess_kind("The user service is in svc/users") == "note"


def test_a_cursor_rule_is_one_memory_with_its_name_and_globs() -> None:
    text = '---\ndescription: "Testing conventions"\nglobs: ["tests/**/*.py", "*.py"]\n'
    text += "alwaysApply: false\n---\nNever mock the database in tests.\n"
    rule = from_cursor_rule(text, name="testing.mdc", stem="testing")
    assert rule.content == "Testing conventions\n\nNever mock the database in tests."
    assert rule.kind == "warning"
    assert rule.keywords == ("cursor-rules", "testing", "tests/**/*.py", "*.py")


def test_a_note_takes_title_tags_and_type() -> None:
    text = "---\ntitle: Auth design\ntags: [auth, '#security']\ntype: decision\n---\n"
    text += "We sign sessions with Ed25519.\n"
    note = from_note(text, name="auth.md")
    assert note.content == "Auth design\n\nWe sign sessions with Ed25519."
    assert (note.kind, note.keywords, note.importance) == ("decision", ("auth", "security"), None)
    other = from_note(
        "---\ntype: runbook\ntags: ops\nimportance: 0.9\n---\n# Deploy\nsteps", name="d"
    )
    assert (other.kind, other.keywords, other.importance) == ("note", ("ops", "runbook"), 0.9)
    plain = from_note("Just a line of text.\n", name="plain.md")
    assert (plain.content, plain.keywords) == ("Just a line of text.", ())


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("---\ntitle: [unclosed\n---\nbody", "not valid YAML"),
        ("---\n- a list\n---\nbody", "not a list of 'key: value' lines"),
        ("---\ntitle: x\nbody without an end", "no closing '---'"),
        ("---\ntitle: ''\n---\n\n", "neither a title nor a body"),
        ("---\nx: " + "a" * 70_000 + "\n---\nbody", "over 64 KiB"),
        ("---\n!!python/object:os.system {}\n---\nbody", "not valid YAML"),
    ],
)
def test_bad_front_matter_is_refused_by_reason(text: str, why: str) -> None:
    with pytest.raises(Unreadable, match=why):
        from_note(text, name="bad.md")


def test_front_matter_values_that_are_not_words_are_left_out() -> None:
    # aliases make a list that holds itself; numbers, maps and nested lists are no tags
    front, body = split_front_matter("---\ntags: &t [a, *t, {k: v}, 3, true]\n---\nx")
    assert body == "x"
    note = from_note("---\ntags: &t [a, *t, {k: v}, 3, true]\n---\nx", name="n.md")
    assert note.keywords == ("a", "3")
    assert front["tags"][0] == "a"


def test_claude_md_imports_of_other_files_are_no_memories() -> None:
    found = from_rules("# A\n@docs/a.md @b.md\n\n- ask @alice first\n", label="c", name="C")
    assert [c.content for c in found] == ["ask @alice first"]


def test_front_matter_of_a_rules_file_is_no_memory() -> None:
    text = "---\ndescription: project rules\n---\n# Rules\n- Never commit secrets.\n"
    [only] = from_rules(text, label="agents-md", name="AGENTS.md")
    assert (only.content, only.where, only.keywords) == (
        "Never commit secrets.",
        "AGENTS.md:5",
        ("agents-md", "rules"),
    )
    [rule] = from_rules("---\n- after a rule line\n", label="x", name="f")
    assert rule.where == "f:2"


def test_rules_are_cut_from_blocks_without_the_inline_parse() -> None:
    """A memory is its source lines: the inline parse is not run (on a hostile 1 MiB
    line of '[' it took 24 s of the import), and the memories are what they were."""
    from sealmem.client.hosts.sources import _parser

    heading, inline, _ = _parser().parse("# *Build* [x](y)\n")
    assert heading.type == "heading_open"
    assert inline.content == "*Build* [x](y)"
    assert not inline.children  # parsed inline it held em, text and link tokens
    found = from_rules("[" * 200 + "\n\n# *Build*\n\n- Use `uv`.\n", label="x", name="R")
    assert [(c.content, c.keywords) for c in found] == [
        ("[" * 200, ("x",)),
        ("Use `uv`.", ("x", "build")),
    ]
