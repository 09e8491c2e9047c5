"""``sealmem forget`` as a real process: once it returns, the text is nowhere to be found."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import SEALMEM, Run
from tests.support.traces import CONTENT, KEYWORD, LATER, MARKERS, traces

pytestmark = pytest.mark.skipif(not SEALMEM.exists(), reason="console script not installed")

Sealmem = Callable[..., Run]


def ok(run: Run) -> Run:
    assert run.code == 0, run.err
    return run


@pytest.mark.slow
def test_forget_removes_the_text_of_every_version(sealmem: Sealmem, home: Path) -> None:
    text = f"the vpn password is {CONTENT}"
    memory_id = ok(sealmem("remember", text, "-k", KEYWORD, "--json")).json()["memory"]["id"]
    ok(sealmem("remember", text, "-k", LATER, "--json"))  # a second version
    older = ok(sealmem("show", memory_id, "--history", "--json")).json()["history"]
    assert [v["content"] for v in older] == [text]
    store = home / "store.db"
    assert traces(store)

    done = ok(sealmem("forget", memory_id, "--reason", "a password", "--json")).json()
    assert (done["deleted"], done["content"], done["delete_reason"]) == (True, "", "a password")

    assert traces(store) == []
    shown = ok(sealmem("show", memory_id, "--history")).out
    assert [m for m in MARKERS if m in shown] == []
    assert "a password" in shown  # the reason stays
    assert ok(sealmem("show", memory_id, "--history", "--json")).json()["history"] == []
    exported = ok(sealmem("export")).out
    assert memory_id in exported
    assert [m for m in MARKERS if m in exported] == []
    for word in MARKERS:
        found = ok(sealmem("recall", word, "--include-history", "--json")).json()["hits"]
        assert found == []
    assert traces(store) == []
