"""Export and import: lossless round trip, idempotence, last-write-wins, refusal of bad input."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealmem.client import MemoryStore
from sealmem.protocol.errors import InputError

from .conftest import OpenStore


def populate(store: MemoryStore) -> dict[str, str]:
    a = store.remember("alpha fact", kind="fact", keywords=["a"], importance=0.9, project="p")
    b = store.remember("beta note", project="p", private=True).memory
    c = store.remember("gamma replaces beta", project="p", supersedes=[b.id]).memory
    store.remember("alpha fact", keywords=["again"], project="p")  # merge -> history
    d = store.remember("delta, soon gone", project="q").memory
    store.forget(d.id, reason="it was wrong")
    return {"a": a.memory.id, "b": b.id, "c": c.id, "d": d.id}


def comparable(document: dict[str, Any]) -> dict[str, Any]:
    """What must survive a round trip: records, local state, history records, links."""
    return {
        "memories": [(m["record"], m["local"]) for m in document["memories"]],
        "history": sorted(json.dumps([h["record"], h["local"]]) for h in document["history"]),
        "supersedes": document["supersedes"],
    }


def test_export_document_shape(store: MemoryStore) -> None:
    ids = populate(store)
    doc = store.export()
    assert doc["format"] == "sealmem-export"
    assert doc["version"] == 1
    assert {m["record"]["id"] for m in doc["memories"]} == set(ids.values())
    tomb = next(m for m in doc["memories"] if m["record"]["id"] == ids["d"])
    assert tomb["record"]["deleted"] is True
    assert tomb["record"]["delete_reason"] == "it was wrong"
    assert len(doc["history"]) == 1  # the merged alpha (forget purged delta's text)
    assert doc["supersedes"] == [[ids["b"], ids["c"]]]
    json.dumps(doc)  # JSON-able


def test_round_trip_is_lossless_and_idempotent(
    store: MemoryStore, open_store: OpenStore, tmp_path: Path
) -> None:
    populate(store)
    doc = json.loads(json.dumps(store.export()))
    other = open_store(tmp_path / "other.db", author="bob")
    seen: list[tuple[int, int]] = []
    first = other.import_(doc, progress=lambda done, total: seen.append((done, total)))
    assert (first.added, first.updated, first.unchanged, first.skipped) == (4, 0, 0, 0)
    total = len(doc["memories"]) + len(doc["history"])
    assert seen == [(i, total) for i in range(1, total + 1)]
    assert comparable(other.export()) == comparable(doc)
    for m in other.recent(all_projects=True):
        assert m.provenance.transport == "import"
        assert not m.provenance.verified

    second = other.import_(doc)
    assert (second.added, second.updated, second.unchanged) == (0, 0, 4)
    assert comparable(other.export()) == comparable(doc)
    assert other.stats()["history_versions"] == store.stats()["history_versions"]

    # And back again into the original store: nothing changes there either.
    back = store.import_(other.export())
    assert (back.added, back.updated) == (0, 0)
    assert comparable(store.export()) == comparable(doc)


def test_import_moves_the_clock_forward(
    store: MemoryStore, open_store: OpenStore, tmp_path: Path
) -> None:
    populate(store)
    doc = store.export()
    newest = max(tuple(m["record"]["hlc"]) for m in doc["memories"])
    behind = newest[0] - 24 * 60 * 60 * 1000  # a clock a day behind (within the bound)
    other = open_store(tmp_path / "other.db", clock=lambda: behind)
    other.import_(doc)
    fresh = other.remember("written after the import").memory
    assert tuple(fresh.record.hlc) > newest


def test_newer_version_wins_and_older_goes_to_history(
    store: MemoryStore, open_store: OpenStore, tmp_path: Path
) -> None:
    original = store.remember("the build uses make", keywords=["build"], project="p").memory
    older_doc = store.export()
    store.remember("the build uses make", keywords=["ci"], importance=0.9, project="p")
    newer_doc = store.export()

    other = open_store(tmp_path / "other.db")
    assert other.import_(older_doc).added == 1
    result = other.import_(newer_doc)
    assert (result.added, result.updated) == (0, 1)
    assert other.get(original.id).record.keywords == ("build", "ci")
    assert [m.record.keywords for m in other.history(original.id)] == [("build",)]

    # Importing the older document again cannot roll the record back.
    again = other.import_(older_doc)
    assert again.updated == 0
    assert other.get(original.id).record.keywords == ("build", "ci")


def test_importance_floor_on_import(
    store: MemoryStore, open_store: OpenStore, tmp_path: Path
) -> None:
    memory = store.remember("floor me", importance=0.2).memory
    doc = store.export()
    doc["memories"][0]["local"]["local_importance"] = 0.95
    other = open_store(tmp_path / "other.db")
    other.import_(doc)
    lowered = copy.deepcopy(doc)
    lowered["memories"][0]["local"]["local_importance"] = 0.1
    other.import_(lowered)
    value = other.connection.execute(
        "SELECT local_importance FROM memories WHERE id = ?", (memory.id,)
    ).fetchone()[0]
    assert value == 0.95


def test_record_of_another_project_is_skipped(
    store: MemoryStore, open_store: OpenStore, tmp_path: Path
) -> None:
    memory = store.remember("project-bound", project="alpha").memory
    doc = store.export()
    doc["memories"][0]["record"]["project"] = "beta"
    doc["memories"][0]["record"]["hlc"][0] += 1000
    result = store.import_(doc)
    assert result.skipped == 1
    assert any("project" in w for w in result.warnings)
    assert store.get(memory.id).project == "alpha"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(format="something-else"), "not a sealmem export"),
        (lambda d: d.update(version=99), "upgrade sealmem"),
        (lambda d: d.update(memories="nope"), "must be a list"),
        (lambda d: d["memories"][1]["record"].update(id="bad"), r"memories\[1\].*UUIDv7"),
        (lambda d: d["memories"][1]["record"].update(extra=1), "unknown fields"),
        (lambda d: d["memories"][0]["local"].update(local_importance=7), "local_importance"),
        (lambda d: d["history"][0].pop("replaced_at"), "replaced_at"),
    ],
)
def test_bad_document_changes_nothing(
    store: MemoryStore, open_store: OpenStore, tmp_path: Path, mutate: Any, message: str
) -> None:
    populate(store)
    doc = copy.deepcopy(store.export())
    mutate(doc)
    other = open_store(tmp_path / "other.db")
    other.remember("already here")
    before = other.export()
    with pytest.raises(InputError, match=message):
        other.import_(doc)
    after = other.export()
    assert comparable(after) == comparable(before)


def test_secret_in_an_imported_record_is_redacted(store: MemoryStore) -> None:
    memory = store.remember("innocent").memory
    doc = store.export()
    key = "sk-" + "ant-api03-" + "Zz9" * 10
    doc["memories"][0]["record"]["content"] = f"leaked {key}"
    doc["memories"][0]["record"]["hlc"][0] += 1
    result = store.import_(doc)
    assert result.updated == 1
    assert any("anthropic_api_key" in w for w in result.warnings)
    assert key not in store.get(memory.id).content


texts = st.text(
    alphabet=st.characters(codec="utf-8", categories=["L", "N", "P", "Zs"]), min_size=1, max_size=60
).filter(lambda s: s.strip() != "")


@pytest.mark.slow
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    items=st.lists(
        st.tuples(texts, st.sampled_from(["note", "fact", "warning"]), st.integers(0, 1000)),
        min_size=1,
        max_size=6,
    )
)
def test_round_trip_property(open_store: OpenStore, tmp_path_factory: Any, items: Any) -> None:
    where = tmp_path_factory.mktemp("prop")
    source = open_store(where / "a.db", author="alice")
    for content, kind, importance in items:
        source.remember(content, kind=kind, importance=importance / 1000, project="p")
    doc = json.loads(json.dumps(source.export()))
    target = open_store(where / "b.db", author="bob")
    target.import_(doc)
    assert comparable(target.export()) == comparable(doc)
    assert target.import_(doc).added == 0
