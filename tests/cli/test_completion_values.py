"""Shell completion of kinds, memory ids and projects from the store (it completed host
names and scopes only); without a store it offers the built-in kinds and creates none."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from sealmem.client.cli import complete
from tests.support.cli import Run

from .conftest import SEALMEM


@pytest.mark.slow
def test_values_come_from_the_store(cli: Callable[..., Run], home: Path) -> None:
    assert complete.kinds("") == [
        "note", "decision", "warning", "lesson", "fact", "preference", "trace"
    ]  # fmt: skip
    assert complete.memory_ids("") == []
    assert not home.exists()  # completing never creates a store
    made = cli("remember", "Cache keys carry the schema version", "--kind", "gotcha",
               "--kind-new", "-p", "webshop", "--json")  # fmt: skip
    memory_id = made.json()["memory"]["id"]
    other = cli("remember", "Billing runs nightly", "-p", "billing", "--json").json()
    assert complete.kinds("g") == ["gotcha"]
    assert complete.kinds("W") == ["warning"]
    assert complete.projects("") == ["billing", "webshop"]
    assert complete.projects("w") == ["webshop"]
    assert sorted(complete.memory_ids("")) == sorted([memory_id[-12:], other["memory"]["id"][-12:]])
    assert complete.memory_ids(memory_id[-12:-6]) == [memory_id[-12:]]
    assert complete.memory_ids(memory_id[:-1]) == [memory_id]


def test_a_damaged_store_completes_nothing_and_says_nothing(home: Path) -> None:
    home.mkdir()
    (home / "store.db").write_bytes(b"not a database" * 100)
    assert complete.memory_ids("") == []
    assert complete.kinds("n") == ["note"]


@pytest.mark.slow
def test_the_shell_gets_them(cli: Callable[..., Run], home: Path) -> None:
    made = cli("remember", "Cache keys carry the schema version", "--kind", "gotcha",
               "--kind-new", "--json")  # fmt: skip
    short = made.json()["memory"]["id"][-12:]

    def complete_(words: str) -> list[str]:
        environ = {
            **os.environ, "_SEALMEM_COMPLETE": "complete_bash", "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
        }  # fmt: skip
        done = subprocess.run(
            [str(SEALMEM)], env=environ, capture_output=True, text=True, timeout=60, check=False
        )
        return done.stdout.split()

    assert complete_("sealmem recall x --kind go") == ["gotcha"]
    assert complete_("sealmem show ") == [short]
    assert complete_(f"sealmem forget {short[:4]}") == [short]
    assert complete_("sealmem remember x --supersedes ") == [short]
