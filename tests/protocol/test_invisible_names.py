"""Code points that render as nothing: refused in names, stripped from skeletons, escaped.

``"alic\\u034fe"`` shows as ``alice``; so do names with a variation selector after a
Latin letter, a Khmer inherent vowel, a Mongolian selector, a tag or U+2800.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sealmem.client.cli import output
from sealmem.client.cli.output import clean
from sealmem.protocol.names import FILLERS, HIDDEN_RANGES, name_problem, name_skeleton

INVISIBLE = [
    0x034F, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F, 0x2065, 0x2800, 0xFE00,
    0xFE0F, 0xFFF0, 0x1D159, 0xE0000, 0xE0002, 0xE0100, 0xE01EF, 0xE0FFF,
]  # fmt: skip


@pytest.mark.parametrize("cp", INVISIBLE, ids=[f"U+{cp:04X}" for cp in INVISIBLE])
def test_an_invisible_code_point_is_refused_stripped_and_escaped(cp: int) -> None:
    name = f"alic{chr(cp)}e"
    problem = name_problem(name)
    assert problem is not None
    assert f"U+{cp:04X}" in problem
    assert name_skeleton(name) == name_skeleton("alice")
    shown = clean(name)
    assert chr(cp) not in shown
    assert shown.startswith("alic\\")


def test_a_variation_selector_after_an_emoji_or_ideograph_stays() -> None:
    for name in ("\u2764\ufe0f", "\u845b\U000e0100 san"):
        assert name_problem(name) is None
        assert clean(name) == name


def test_one_line_escapes_newlines_and_tabs_too() -> None:
    assert output.one_line("a\nNOTICE\tb\x1b") == "a\\nNOTICE\\tb\\x1b"
    assert "\n" in clean("a\nb")  # clean keeps the lines of a memory


def test_the_spec_names_table_is_the_code_table() -> None:
    spec = (Path(__file__).parents[2] / "protocol" / "SPEC.md").read_text(encoding="utf-8")
    block = spec.split("**Names.**", 1)[1].split("except that", 1)[0]
    listed: set[int] = set()
    for first, last in re.findall(r"U\+([0-9A-F]{4,6})(?:-([0-9A-F]{4,6}))?", block):
        start = int(first, 16)
        end = int(first[: len(first) - len(last)] + last, 16) if last else start
        listed |= set(range(start, end + 1))
    coded = {cp for a, b in HIDDEN_RANGES for cp in range(a, b + 1)} | set(FILLERS)
    assert listed == coded
