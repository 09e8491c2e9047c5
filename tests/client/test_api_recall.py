"""MemoryStore.recall builds Hits from the retrieval engine (sealmem.client.recall.search)."""

from __future__ import annotations

import pytest

from sealmem.client import SHARED_PROJECT, Hit, MemoryStore
from sealmem.protocol.errors import InputError


def test_recall_finds_and_scopes(store: MemoryStore) -> None:
    store.remember("postgres connection pool size is 20", project="shop", keywords=["db"])
    store.remember("redis is the cache", project="shop")
    store.remember("postgres runs on port 5433 in CI", project=SHARED_PROJECT)
    store.remember("postgres is not used here", project="other")
    hits = store.recall("postgres", project="shop", k=10)
    assert all(isinstance(h, Hit) for h in hits)
    contents = {h.memory.content for h in hits}
    assert "postgres connection pool size is 20" in contents
    assert "postgres runs on port 5433 in CI" in contents  # the shared tier
    assert "postgres is not used here" not in contents
    assert all(isinstance(h.score, float) and h.why for h in hits)
    everywhere = store.recall("postgres", all_projects=True, k=10)
    assert "postgres is not used here" in {h.memory.content for h in everywhere}


def test_superseded_hit_carries_its_replacement(store: MemoryStore) -> None:
    old = store.remember("the API listens on port 8000", project="p").memory
    new = store.remember("the API now listens on port 9000", project="p", supersedes=[old.id])
    hits = store.recall("API listens port", project="p", k=5)
    by_id = {h.memory.id: h for h in hits}
    assert old.id in by_id
    assert [m.id for m in by_id[old.id].superseded_by] == [new.memory.id]
    assert by_id[old.id].why.get("superseded", 0) < 0
    assert by_id[new.memory.id].superseded_by == []
    assert hits[0].memory.id == new.memory.id
    data = by_id[old.id].to_dict()
    assert data["superseded_by"][0]["id"] == new.memory.id


def test_forgotten_memories_are_not_recalled(store: MemoryStore) -> None:
    gone = store.remember("kubernetes namespace is shop-prod", project="p").memory
    store.forget(gone.id, reason="moved to nomad")
    assert store.recall("kubernetes namespace", project="p") == []


def test_kinds_filter(store: MemoryStore) -> None:
    store.remember("deploy on tuesdays", kind="decision", project="p")
    store.remember("deploy script lives in ops/", kind="fact", project="p")
    hits = store.recall("deploy", project="p", kinds=["decision"])
    assert [h.memory.kind for h in hits] == ["decision"]


@pytest.mark.parametrize(("query", "k"), [("", 5), ("   ", 5), ("x", 0), ("x", 1000)])
def test_recall_refuses_bad_arguments(store: MemoryStore, query: str, k: int) -> None:
    with pytest.raises(InputError):
        store.recall(query, k=k)
