"""Every MUST of SPEC.md names what exercises it: vector ids or a test.

A requirement is a block of the text (a paragraph, a list item or a table row) holding
the word MUST; it carries its own marker ``[vectors: id, id-prefix-*]`` or
``[test: tests/path.py::test_name]`` (several, comma-separated) after its last MUST: a
marker elsewhere in the section does not count.  Exempt: the
subsections of "Devices and identity" that are decided but not built yet, and the
paragraph that defines the key words.  Every marker anywhere must name vectors that
exist in ``protocol/vectors/`` (a trailing ``*`` matches by prefix, at least one file)
and tests that exist.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.protocol.vectorgen.generate import VECTORS

ROOT = Path(__file__).resolve().parents[2]
SPEC = (ROOT / "protocol" / "SPEC.md").read_text("utf-8")
EXEMPT_SUBSECTIONS = (
    "Who signs admin objects",  # its MUSTs are those of invite v3: not built yet
)
MARKER = re.compile(r"\[(vectors|test): ([^\]]+)\]")
_ITEM = re.compile(r"^\s*(?:[-*]|\d+\.)\s")
_MUST = re.compile(r"\bMUST\b")


@dataclass(frozen=True)
class Block:
    line: int  # 1-based, of its first line
    section: str  # the level-2 heading it sits under
    text: str
    subsection: str = ""  # the level-3 heading it sits under, if any


def blocks(text: str) -> Iterator[Block]:
    """Paragraphs, list items and table rows, with the level-2 and level-3 headings of each."""
    section, start, lines = "", 0, []  # type: tuple[str, int, list[str]]
    subsection = ""

    def flush() -> Iterator[Block]:
        if lines:
            yield Block(start, section, "\n".join(lines), subsection)

    for n, line in enumerate(text.splitlines(), start=1):
        new_item = line.startswith("|") or _ITEM.match(line) is not None
        if not line.strip() or line.startswith("#") or new_item:
            yield from flush()
            lines = []
        if line.startswith("## "):
            section, subsection = line[3:].strip(), ""
        if line.startswith("### "):
            subsection = line[4:].strip()
        if line.strip() and not line.startswith("#"):
            if not lines:
                start = n
            lines.append(line)
            if line.startswith("|"):
                yield from flush()
                lines = []
    yield from flush()


def requirements(text: str) -> list[Block]:
    return [
        b
        for b in blocks(text)
        if _MUST.search(b.text)
        and not (b.section == "Devices and identity" and b.subsection in EXEMPT_SUBSECTIONS)
        and "The key words MUST" not in b.text
    ]


def unmarked(text: str) -> list[Block]:
    """The requirements without a marker of their own: none in the block, or none after
    its last MUST (a marker that closes one sentence does not cover a MUST after it; a
    marker in another paragraph of the section covers nothing here)."""
    out = []
    for b in requirements(text):
        last_must = [m.end() for m in _MUST.finditer(b.text)][-1]
        if not any(m.start() >= last_must for m in MARKER.finditer(b.text)):
            out.append(b)
    return out


def vector_ids() -> set[str]:
    return {p.stem for p in VECTORS.glob("*.json")}


def _test_exists(name: str) -> bool:
    path, _, func = name.partition("::")
    file = ROOT / path
    if not func or not file.is_file():
        return False
    defined = re.compile(rf"^\s*(?:async )?def {re.escape(func)}\(", re.MULTILINE)
    return defined.search(file.read_text("utf-8")) is not None


def bad_references(text: str) -> list[str]:
    """Every vector id or test a marker names that does not exist."""
    ids, bad = vector_ids(), []
    for kind, names in MARKER.findall(text):
        for name in (n.strip() for n in names.split(",")):
            if kind == "vectors":
                found = (
                    any(i.startswith(name[:-1]) for i in ids) if name.endswith("*") else name in ids
                )
            else:
                found = _test_exists(name)
            if not found:
                bad.append(f"{kind}: {name}")
    return bad


def test_the_spec_has_requirements_to_check() -> None:
    assert len(requirements(SPEC)) > 40


def test_every_must_names_its_vectors_or_test() -> None:
    missing = [f"line {b.line} ({b.section}): {b.text[:100]!r}" for b in unmarked(SPEC)]
    assert not missing, "\n".join(missing)


def test_every_named_vector_and_test_exists() -> None:
    assert not bad_references(SPEC)


@pytest.mark.parametrize(
    ("text", "unmarked_count", "bad"),
    [
        ("A reader MUST refuse it.\n", 1, []),
        ("A reader MUST refuse it [vectors: roster-fork].\n", 0, []),
        ("A reader MUST\nrefuse it [vectors: roster-*].\n", 0, []),
        ("| `x` | MUST be so [vectors: no-such-vector] |\n", 0, ["vectors: no-such-vector"]),
        ("- MUST [test: tests/protocol/test_spec_musts.py::test_nothing_here]\n", 0,
         ["test: tests/protocol/test_spec_musts.py::test_nothing_here"]),
        ("## Devices and identity\n\nA device MUST be listed.\n", 1, []),
        ("## Devices and identity\n\n### Who signs admin objects\n\nX MUST sign.\n", 0, []),
        ("| a | MUST |\n| b | MUST [vectors: roster-fork] |\n", 1, []),
        ("## S\n\nA MUST x.\n\nB MUST y [vectors: roster-fork].\n", 1, []),
        ("A MUST x.\n- B MUST y [vectors: roster-fork]\n", 1, []),
        ("A MUST x [vectors: roster-fork]. B MUST y.\n", 1, []),
        ("A MUST x [vectors: roster-fork]; B MUST y [test: tests/protocol/test_spec_musts.py"
         "::test_the_check_itself].\n", 0, []),
    ],
)  # fmt: skip
def test_the_check_itself(text: str, unmarked_count: int, bad: list[str]) -> None:
    """Removing a marker, or naming a vector or test that does not exist, fails the check."""
    assert len(unmarked(text)) == unmarked_count
    assert bad_references(text) == bad


def test_removing_a_marker_from_the_spec_fails() -> None:
    """Each requirement with one marker fails the check once its marker is removed."""
    single = [b for b in requirements(SPEC) if len(MARKER.findall(b.text)) == 1]
    assert len(single) > 20
    for block in single:
        stripped = SPEC.replace(block.text, MARKER.sub("", block.text), 1)
        assert [b.line for b in unmarked(stripped)] == [block.line], block.text[:80]
