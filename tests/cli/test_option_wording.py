"""A bad option value is one line: which option and value, why, how to fix it (it was
typer's usage block with pydantic's words, "Input should be a valid integer, unable to
parse string as an integer")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import Run

BAD = [
    (["recall", "x", "--k", "abc"], "--k 'abc' is not a whole number: give one like --k 5"),
    (["recall", "x", "-n", "0"], "--k '0' is below 1: give 1 or more"),
    (["list", "--limit=1.5"], "--limit '1.5' is not a whole number"),
    (["remember", "hi", "--importance", "lots"], "--importance 'lots' is not a number"),
    (["remember", "hi", "--importance", "nan"], "--importance 'nan' is not a finite number"),
    (["trust", "period", "abc"], "DAYS is not a whole number: give one like 5"),
    (["list", "--limit", "\x1b[2J"], "--limit '\\x1b[2J' is not a whole number"),
    (["recall"], "Missing argument 'QUERY'"),
]


@pytest.mark.parametrize(("args", "words"), BAD)
def test_a_bad_value_is_one_clear_line(
    cli: Callable[..., Run], home: Path, args: list[str], words: str
) -> None:
    done = cli(*args)
    assert done.code == 2
    assert done.out == ""
    (line,) = done.err.splitlines()
    assert line.startswith("error: "), line
    assert words in line
    command = "trust period" if args[0] == "trust" else args[0]
    assert line.endswith(f"('sealmem {command} --help' lists the options)")
    for typer_s in ("Input should", "Invalid value", "Usage:", "\x1b"):
        assert typer_s not in line
