"""A teammate's tombstone or edit of the reader's memory is a proposal, on people's
surfaces too: ``sealmem list``, ``sealmem recall`` and the viewer's lists keep the author's
version, marked with the proposer's verified name, until a person accepts the change."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from sealmem.client.recall.api import MemoryStore
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.writer import write_version
from sealmem.client.ui import views
from sealmem.protocol.hlc import Hlc
from tests.support.cli import Run

Cli = Callable[..., Run]
BOB = "b" * 26
MINE = "Never deploy on Fridays: the on-call rota is empty at weekends."
THEIRS = "Deploy on Fridays whenever you like."
CHANGES = pytest.mark.parametrize(
    ("action", "says"), [("delete", "delete it"), ("edit", "change it")]
)


@pytest.fixture
def store(home: Path) -> Iterator[MemoryStore]:
    opened = MemoryStore.open()
    yield opened
    opened.close()


def _changed_by(store: MemoryStore, name: str, action: str = "delete") -> str:
    """The reader's warning, and a teammate's pulled tombstone (``delete``) or rewrite
    (``edit``) of it: the merge's winner."""
    mine = store.remember(MINE, kind="warning", project="webshop").memory.record
    later = Hlc(mine.hlc.wall + 1000, 0)
    if action == "delete":
        change = replace(
            mine, content="", keywords=(), editor=BOB, hlc=later, deleted=True,
            delete_reason="obsolete",
        )  # fmt: skip
    else:
        change = replace(mine, content=THEIRS, editor=BOB, hlc=later)
    at = mine.hlc.wall + 2000
    with transaction(store.connection) as conn:
        write_version(
            conn, change.validate(), provenance=Provenance("folder", BOB, name, True, at, 1),
            local_importance=0.5, seen_count=0, updated_at=at,
        )  # fmt: skip
    assert store.get(mine.id).record.editor == BOB
    return mine.id


@pytest.mark.slow
@CHANGES
def test_list_keeps_the_authors_version_marked(
    cli: Cli, store: MemoryStore, action: str, says: str
) -> None:
    memory_id = _changed_by(store, "bob", action)
    listed = cli("list")
    assert listed.code == 0, listed.err
    assert f"(bob proposes to {says}) Never deploy on Fridays" in listed.out
    assert THEIRS not in listed.out
    (doc,) = cli("list", "--json").json()["memories"]
    assert (doc["id"], doc["content"], doc["proposal"]) == (
        memory_id, MINE, f"bob proposes to {says}"
    )  # fmt: skip


@CHANGES
def test_recall_keeps_the_authors_version_marked(
    cli: Cli, store: MemoryStore, action: str, says: str
) -> None:
    memory_id = _changed_by(store, "bob", action)
    found = cli("recall", "deploy on fridays")
    assert found.code == 0, found.err
    assert MINE in found.out
    assert f"bob proposes to {says}: {memory_id}" in found.out
    (hit,) = cli("recall", "deploy on fridays", "--json").json()["hits"]
    assert (hit["id"], hit["content"], hit["deleted"]) == (memory_id, MINE, False)
    assert [p["action"] for p in hit["proposals"]] == [action]


@pytest.mark.slow
def test_an_accepted_delete_applies_everywhere(cli: Cli, store: MemoryStore) -> None:
    memory_id = _changed_by(store, "bob")
    done = cli("captured", "accept", memory_id)
    assert done.code == 0, done.err
    assert MINE not in cli("list").out
    assert cli("recall", "deploy on fridays", "--json").json()["hits"] == []


def test_the_proposers_name_is_escaped(cli: Cli, store: MemoryStore) -> None:
    _changed_by(store, "b\x1b[2Job\u202e")
    out = cli("list").out
    assert "\x1b" not in out
    assert "\u202e" not in out
    assert "proposes to delete it) Never deploy" in out


@CHANGES
def test_the_viewers_lists_keep_it_marked(store: MemoryStore, action: str, says: str) -> None:
    _changed_by(store, "bob", action)
    for query in ("", "deploy on fridays"):
        page = views.search_page(store, query, "webshop", None)
        (card,) = [r["card"] for r in page["results"]]
        assert (card.memory.content, card.proposal) == (MINE, f"bob proposes to {says}")


@pytest.mark.slow
def test_an_accepted_edit_applies_everywhere(cli: Cli, store: MemoryStore) -> None:
    memory_id = _changed_by(store, "bob", "edit")
    done = cli("captured", "accept", memory_id)
    assert done.code == 0, done.err
    listed = cli("list").out
    assert THEIRS in listed
    assert MINE not in listed
    (hit,) = cli("recall", "deploy on fridays", "--json").json()["hits"]
    assert (hit["content"], hit["proposals"]) == (THEIRS, [])


def test_the_viewer_leaves_out_a_teammates_edit_of_a_memory_its_author_deleted(
    store: MemoryStore,
) -> None:
    """The author forgot it; a teammate's later edit is a proposal on nothing that stands:
    the search page leaves it out (it answered with a traceback)."""
    mine = store.remember(MINE, kind="warning", project="webshop").memory.record
    kept = store.remember("The deploy checklist for Fridays and Mondays", project="webshop")
    gone = store.forget(mine.id, reason="wrong").record
    later = Hlc(gone.hlc.wall + 1000, 0)
    change = replace(mine, content=THEIRS, editor=BOB, hlc=later)
    pulled = Provenance("folder", BOB, "bob", True, later.wall, 1)
    with transaction(store.connection) as conn:
        write_version(
            conn, change.validate(), provenance=pulled,
            local_importance=0.5, seen_count=0, updated_at=later.wall,
        )  # fmt: skip
    page = views.search_page(store, "deploy on fridays", "webshop", None)
    assert [r["card"].memory.id for r in page["results"]] == [kept.memory.id]
