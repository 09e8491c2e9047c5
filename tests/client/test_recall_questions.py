"""Session context from a question: the memory written just after a matching question answers it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.recall.ranking import RankingWeights
from sealmem.client.recall.search import search

T0 = 1_746_878_400_000  # 2025-05-10 12:00 UTC
DAY_MS = 86_400_000


@pytest.fixture
def dialogue(tmp_path: Path) -> Iterator[tuple[MemoryStore, dict[str, str]]]:
    """Two sessions.  In the first, a question about painting and its answer (which
    does not say "paint"); in the second, a statement that says "paint" more strongly
    than the question, and a reply that is about nothing in particular."""
    now = [T0]
    store = MemoryStore.open(tmp_path / "store.db", author="tester", clock=lambda: now[0])
    turns = [
        ("asked", "t:s-1", "Melanie: what did you paint last weekend?"),
        ("answer", "t:s-1", "Caroline: a sunset over the lake, with the kids"),
        ("said", "t:s-2", "Caroline: I paint, I paint every day"),
        ("reply", "t:s-2", "Melanie: that sounds lovely, good for you"),
    ]
    made: dict[str, str] = {}
    for i, (name, origin, text) in enumerate(turns):
        now[0] = T0 + (i // 2) * 2 * DAY_MS + (i % 2) * 1_000
        made[name] = store.remember(text, project="app", origin=origin).memory.record.id
    yield store, made
    store.close()


def _order(store: MemoryStore, weights: RankingWeights) -> list[str]:
    found = search(
        store.connection, "what did she paint", k=10, projects=["app"], include_history=False,
        kinds=None, now_ms=T0 + 5 * DAY_MS, weights=weights,
    )  # fmt: skip
    return [s.id for s in found]


def test_the_answer_to_a_matching_question_ranks_above_a_plain_neighbour(
    dialogue: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, made = dialogue
    hits = store.recall("what did she paint", project="app", k=10)
    found = [h.memory.record.id for h in hits]
    assert found.index(made["answer"]) < found.index(made["reply"])
    why = {h.memory.record.id: h.why for h in hits}
    assert why[made["answer"]]["bm25"] == why[made["reply"]]["bm25"] == 0
    assert why[made["answer"]]["context"] > why[made["reply"]]["context"]
    # without the question's credit, the stronger statement's neighbour wins: the
    # order above comes from the question, not from the rest of the score
    plain = _order(store, RankingWeights(context_question=0.0))
    assert plain.index(made["reply"]) < plain.index(made["answer"])


def test_a_question_that_does_not_match_gives_no_credit(tmp_path: Path) -> None:
    now = [T0]
    with MemoryStore.open(tmp_path / "s.db", author="tester", clock=lambda: now[0]) as store:
        store.remember("Melanie: how was the lake?", project="app", origin="t:s-1")
        now[0] += 1_000
        said = store.remember("Caroline: I paint there on sundays", project="app", origin="t:s-1")
        hits = store.recall("what did she paint", project="app", k=10)
        hit = hits[0]
        assert hit.memory.record.id == said.memory.record.id
        weights = RankingWeights()
        # coverage of the one query word, its own BM25, no context from the question
        expected = weights.bm25 + weights.coverage
        assert hit.why["context"] == 0
        assert hit.why["bm25"] + hit.why["coverage"] == pytest.approx(expected)


def test_the_turn_before_a_question_is_not_its_answer(tmp_path: Path) -> None:
    now = [T0]
    with MemoryStore.open(tmp_path / "s.db", author="tester", clock=lambda: now[0]) as store:
        before = store.remember("Caroline: back from the lake", project="app", origin="t:s-1")
        now[0] += 1_000
        store.remember("Melanie: what did you paint there?", project="app", origin="t:s-1")
        now[0] += 1_000
        after = store.remember("Caroline: the boats at dawn", project="app", origin="t:s-1")
        query = "what did she paint"
        why = {h.memory.record.id: h.why for h in store.recall(query, project="app", k=10)}
        plain = search(
            store.connection, query, k=10, projects=["app"], include_history=False,
            kinds=None, now_ms=now[0], weights=RankingWeights(context_question=0.0),
        )  # fmt: skip
        without = {s.id: s.why for s in plain}
        # the same neighbour, one step away on either side: only the answer gains
        assert why[before.memory.record.id] == without[before.memory.record.id]
        assert why[after.memory.record.id]["context"] > why[before.memory.record.id]["context"]
