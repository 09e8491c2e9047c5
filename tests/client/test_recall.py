"""Recall ranking against a real store: a SQLite file in tmp_path, written through MemoryStore."""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.mcp.tools import MemoryTools
from sealmem.client.recall.ranking import (
    QueryTerm,
    RankingWeights,
    analyse_query,
    date_spans,
    is_session_origin,
    stems_of,
)
from sealmem.client.recall.search import Pool, pool_plan, search
from sealmem.protocol.errors import InputError

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
T0 = int(datetime(2025, 5, 10, 12, tzinfo=UTC).timestamp() * 1000)


class Clock:
    """A settable clock: reads do not move it."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def recall_clock() -> Clock:
    return Clock()


@pytest.fixture
def mem(tmp_path: Path, recall_clock: Clock) -> Iterator[MemoryStore]:
    store = MemoryStore.open(tmp_path / "store.db", author="tester", clock=recall_clock)
    yield store
    store.close()


def remember(
    store: MemoryStore, clock: Clock, text: str, *, at: int | None = None, **kw: object
) -> str:
    if at is not None:
        clock.now = at
    result = store.remember(text, project=kw.pop("project", "app"), **kw)  # type: ignore[arg-type]
    return result.memory.record.id


def ids(store: MemoryStore, query: str, **kw: object) -> list[str]:
    return [h.memory.record.id for h in store.recall(query, project=kw.pop("project", "app"), **kw)]  # type: ignore[arg-type]


def test_stop_words_alone_find_nothing(mem: MemoryStore, recall_clock: Clock) -> None:
    remember(mem, recall_clock, "what is it that they were doing here and there")
    assert mem.recall("what was it they did there", project="app") == []


def test_stop_words_do_not_rank(mem: MemoryStore, recall_clock: Clock) -> None:
    # different sessions, so that session context does not link them
    chatter = remember(mem, recall_clock, "it is what it is and all there is to it", origin="t:s1")
    deploy = remember(mem, recall_clock, "deploy target is the staging cluster", origin="t:s2")
    assert ids(mem, "what is the deploy target") == [deploy]
    assert chatter not in ids(mem, "what is it")


def test_stemming_matches_other_forms(mem: MemoryStore, recall_clock: Clock) -> None:
    target = remember(mem, recall_clock, "We are deploying the services on Fridays")
    remember(mem, recall_clock, "Unrelated lunch notes")
    assert ids(mem, "when was the service deployed?")[0] == target


def test_agent_keywords_weigh_more_than_content(mem: MemoryStore, recall_clock: Clock) -> None:
    in_content = remember(mem, recall_clock, "We changed the schema migrations for billing")
    in_keywords = remember(
        mem, recall_clock, "We changed the schema layout for billing", keywords=["migrations"]
    )
    hits = mem.recall("migrations", project="app")
    assert [h.memory.record.id for h in hits] == [in_keywords, in_content]
    assert hits[0].why["bm25"] > hits[1].why["bm25"]


def test_importance_breaks_ties(mem: MemoryStore, recall_clock: Clock) -> None:
    low = remember(mem, recall_clock, "cache invalidation rule alpha", importance=0.1)
    high = remember(mem, recall_clock, "cache invalidation rule beta", importance=0.9)
    hits = mem.recall("cache invalidation", project="app")
    assert [h.memory.record.id for h in hits] == [high, low]
    assert hits[0].why["importance"] > 0 > hits[1].why["importance"]


def test_recent_memory_ranks_above_an_old_one(mem: MemoryStore, recall_clock: Clock) -> None:
    old = remember(mem, recall_clock, "flaky test in the parser suite", at=T0 - 200 * DAY_MS)
    new = remember(mem, recall_clock, "flaky test in the lexer suite", at=T0)
    hits = mem.recall("flaky test", project="app")
    assert [h.memory.record.id for h in hits] == [new, old]
    assert hits[0].why["recency"] > hits[1].why["recency"]


def test_superseded_is_demoted_but_present(mem: MemoryStore, recall_clock: Clock) -> None:
    old = remember(mem, recall_clock, "the API port is 8080")
    new = remember(mem, recall_clock, "the API port is 9090 since the move", supersedes=[old])
    hits = mem.recall("API port", project="app")
    by_id = {h.memory.record.id: h for h in hits}
    assert set(by_id) == {old, new}
    assert by_id[old].why["superseded"] < 0
    assert by_id[new].why["superseded"] == 0
    assert by_id[old].why["bm25"] > by_id[new].why["bm25"]  # the old, shorter text matches best
    assert hits[0].memory.record.id == new  # yet the correction comes first
    assert [m.record.id for m in by_id[old].superseded_by] == [new]


def test_project_scope_shared_tier_and_all_projects(mem: MemoryStore, recall_clock: Clock) -> None:
    mine = remember(mem, recall_clock, "release checklist for alpha", project="alpha")
    other = remember(mem, recall_clock, "release checklist for beta", project="beta")
    team = remember(mem, recall_clock, "release checklist for everyone", project="shared")
    assert set(ids(mem, "release checklist", project="alpha")) == {mine, team}
    assert set(ids(mem, "release checklist", project="beta")) == {other, team}
    everything = mem.recall("release checklist", all_projects=True)
    assert {h.memory.record.id for h in everything} == {mine, other, team}


def test_tombstones_never_come_back(mem: MemoryStore, recall_clock: Clock) -> None:
    gone = remember(mem, recall_clock, "the secret rotation happens monthly", origin="t:s1")
    recall_clock.now += 1000
    kept = remember(mem, recall_clock, "rotation is handled by the ops team", origin="t:s1")
    mem.forget(gone, reason="wrong")
    found = ids(mem, "secret rotation monthly", k=10)
    assert gone not in found
    assert found == [kept]


def test_include_history_matches_older_text(mem: MemoryStore, recall_clock: Clock) -> None:
    memory_id = remember(mem, recall_clock, "use the blue deployment pipeline")
    document = copy.deepcopy(mem.export())
    (entry,) = [e for e in document["memories"] if e["record"]["id"] == memory_id]
    entry["record"]["content"] = "use the green release process"
    entry["record"]["hlc"] = [entry["record"]["hlc"][0] + 10, 0]
    mem.import_(document)
    assert mem.get(memory_id).record.content == "use the green release process"
    assert ids(mem, "blue pipeline") == []
    hits = mem.recall("blue pipeline", project="app", include_history=True)
    assert [h.memory.record.id for h in hits] == [memory_id]
    assert "history" in hits[0].why
    assert ids(mem, "green release", include_history=True) == [memory_id]


def test_why_holds_every_component_and_sums_to_score(mem: MemoryStore, recall_clock: Clock) -> None:
    remember(mem, recall_clock, "we decided to pin numpy in May 2025")
    (hit,) = mem.recall("numpy pin in May 2025", project="app")
    assert {"bm25", "coverage", "context", "date", "recency", "importance", "superseded"} <= set(
        hit.why
    )
    assert hit.score == pytest.approx(sum(hit.why.values()))
    assert hit.why["date"] > 0


def test_session_neighbour_is_found_through_context(mem: MemoryStore, recall_clock: Clock) -> None:
    question = remember(mem, recall_clock, "which database do we use for queues?", origin="t:s-1")
    recall_clock.now += 5_000
    answer = remember(mem, recall_clock, "Redis, with persistence switched on", origin="t:s-1")
    recall_clock.now += 2 * DAY_MS
    elsewhere = remember(mem, recall_clock, "Redis cluster sizing notes", origin="t:s-2")
    hits = mem.recall("database for queues", project="app")
    found = [h.memory.record.id for h in hits]
    assert found[:2] == [question, answer]
    assert hits[1].why["bm25"] == 0
    assert hits[1].why["context"] > 0
    assert elsewhere not in found


def test_neighbours_are_limited_to_one_session(mem: MemoryStore, recall_clock: Clock) -> None:
    remember(mem, recall_clock, "postgres vacuum schedule", origin="t:s-1")
    recall_clock.now += 5_000
    other_origin = remember(mem, recall_clock, "lunch menu", origin="t:s-2")
    recall_clock.now += 3 * HOUR_MS
    too_late = remember(mem, recall_clock, "dinner menu", origin="t:s-1")
    found = ids(mem, "postgres vacuum", k=10)
    assert other_origin not in found
    assert too_late not in found


@pytest.mark.slow
@pytest.mark.parametrize("origin", ["cli", "mcp", "api", "demo", "cli:", ":abc", "mcp:  "])
def test_an_origin_without_a_session_has_no_neighbours_beyond_the_gap(
    mem: MemoryStore, recall_clock: Clock, origin: str
) -> None:
    # two CLI commands two hours apart are not one session (tests/client/test_sessions.py
    # has the time-gap rule that links memories written close together)
    hit = remember(mem, recall_clock, "which database do we use for queues?", origin=origin)
    recall_clock.now += 2 * HOUR_MS
    unrelated = remember(mem, recall_clock, "the office plants need water", origin=origin)
    hits = mem.recall("database for queues", project="app", k=10)
    assert [h.memory.record.id for h in hits] == [hit]
    assert hits[0].why["context"] == 0
    assert unrelated not in [h.memory.record.id for h in hits]
    assert not is_session_origin(origin)


def test_a_session_origin_links_only_its_own_session(mem: MemoryStore, recall_clock: Clock) -> None:
    assert is_session_origin("mcp:3f2a9c01b7de")
    assert is_session_origin("locomo:session_4")
    question = remember(mem, recall_clock, "which queue broker?", origin="mcp:aaaa")
    recall_clock.now += 1_000
    other = remember(mem, recall_clock, "the office plants need water", origin="mcp:bbbb")
    recall_clock.now += 1_000
    answer = remember(mem, recall_clock, "RabbitMQ, clustered", origin="mcp:aaaa")
    hits = mem.recall("queue broker", project="app", k=10)
    found = [h.memory.record.id for h in hits]
    assert found == [question, answer]
    assert other not in found
    assert hits[1].why["context"] > 0


def test_the_mcp_server_remembers_with_a_per_process_session(
    mem: MemoryStore, recall_clock: Clock
) -> None:
    first, second = MemoryTools(lambda: mem, "app"), MemoryTools(lambda: mem, "app")
    assert re.fullmatch(r"mcp:[0-9a-f]{12}", first.origin)
    assert first.origin != second.origin
    made = [
        asyncio.run(tools.remember(text)).id
        for tools, text in ((first, "deploy freeze starts friday"), (second, "lunch at noon"))
    ]
    assert [mem.get(i).record.origin for i in made] == [first.origin, second.origin]
    assert ids(mem, "deploy freeze", k=10) == made[:1]  # the other session is no neighbour


def test_a_named_month_prefers_memories_written_then(mem: MemoryStore, recall_clock: Clock) -> None:
    june = int(datetime(2025, 6, 15, tzinfo=UTC).timestamp() * 1000)
    may = int(datetime(2025, 5, 3, tzinfo=UTC).timestamp() * 1000)
    in_june = remember(mem, recall_clock, "upgraded the build image", at=june)
    in_may = remember(mem, recall_clock, "upgraded the build image again", at=may)
    recall_clock.now = june + DAY_MS
    assert ids(mem, "what did we upgrade in May?")[0] == in_may
    assert ids(mem, "what did we upgrade in June?")[0] == in_june


def test_kinds_filter(mem: MemoryStore, recall_clock: Clock) -> None:
    note = remember(mem, recall_clock, "timeouts on the payment gateway", kind="note")
    warning = remember(mem, recall_clock, "payment gateway timeouts lose orders", kind="warning")
    assert ids(mem, "payment gateway", kinds=["warning"]) == [warning]
    assert set(ids(mem, "payment gateway")) == {note, warning}


def test_recall_refuses_a_bad_k(mem: MemoryStore) -> None:
    for k in (0, 101, True):
        with pytest.raises(InputError, match=f"k={k}"):
            mem.recall("x", k=k)


def test_query_analysis_and_dates() -> None:
    terms = analyse_query("What did Caroline's team deploy, and when did they deploy it?")
    assert [t.stem for t in terms] == ["carolin", "team", "deploi"]
    assert [t.entity for t in terms] == [True, False, False]
    assert stems_of("Résumé RUNNING") == frozenset({"resum", "run"})
    may = date_spans("what happened in May 2023?", T0)
    assert len(may) == 1
    assert datetime.fromtimestamp(may[0].start / 1000, UTC) == datetime(2023, 5, 1, tzinfo=UTC)
    assert date_spans("you may want this", T0) == []
    (yesterday,) = date_spans("what broke yesterday", T0)
    assert yesterday.end - yesterday.start == DAY_MS
    assert yesterday.end <= T0


def test_a_partial_word_finds_the_longer_one(mem: MemoryStore, recall_clock: Clock) -> None:
    target = remember(mem, recall_clock, "Orders live in PostgreSQL 16 on the db host")
    recall_clock.now += 2 * HOUR_MS  # another session
    remember(mem, recall_clock, "Lunch is at noon on Fridays")
    (hit,) = mem.recall("postgres", project="app")
    assert hit.memory.record.id == target
    assert hit.why["coverage"] == pytest.approx(RankingWeights().prefix)  # half a match
    exact = search(
        mem.connection, "postgres", k=5, projects=["app"], include_history=False, kinds=None,
        now_ms=T0, weights=RankingWeights(prefix=0.0),
    )  # fmt: skip
    assert exact == []


def test_proper_nouns_of_the_query_count_as_entities(mem: MemoryStore, recall_clock: Clock) -> None:
    for i in range(6):  # "Alice" and "Bob" are common here, so their IDF is low
        remember(mem, recall_clock, f"Alice and Bob paired on ticket {i}", origin=f"t:{i}")
    alice = remember(mem, recall_clock, "Alice rotated the staging certificates", origin="t:a")
    bob = remember(mem, recall_clock, "Bob rotated the production certificates", origin="t:b")
    hits = mem.recall("Which certificates did Alice rotate?", project="app", k=3)
    by_id = {h.memory.record.id: h for h in hits}
    assert hits[0].memory.record.id == alice
    assert by_id[alice].why["entity"] == pytest.approx(RankingWeights().entity)
    assert by_id[bob].why["entity"] == 0
    assert "entity" not in mem.recall("certificates rotated", project="app")[0].why


def test_new_memories_are_found_by_a_recall_that_ran_before(
    tmp_path: Path, recall_clock: Clock
) -> None:
    # the term statistics are cached per connection; a write here or in another
    # connection (another process) must invalidate them
    path = tmp_path / "shared.db"
    with (
        MemoryStore.open(path, author="a", clock=recall_clock) as one,
        MemoryStore.open(path, author="b", clock=recall_clock) as two,
    ):
        assert one.recall("zebra crossing", project="app") == []
        theirs = remember(two, recall_clock, "a second zebra crossing was painted")
        assert ids(one, "zebra crossing") == [theirs]
        assert one.recall("giraffe", project="app") == []
        mine = remember(one, recall_clock, "the giraffe enclosure sensor is flaky")
        assert ids(one, "giraffe") == [mine]


def _terms(*stems: str) -> list[QueryTerm]:
    return [QueryTerm(s, s, False) for s in stems]


def test_the_candidate_pools_stay_within_the_postings_budget() -> None:
    weights = RankingWeights(pool_postings=500, common_share=0.1)
    terms = _terms("rare", "mid", "big", "huge")
    df = {"rare": 40, "mid": 300, "big": 900, "huge": 5000}
    phrases = [f'"{t.word}"' for t in terms]
    plan = pool_plan(terms, phrases, df, 10_000, weights)
    assert plan == [  # OR of what fits, AND of all eligible (never "huge": > 10 %)
        Pool(('"rare"', '"mid"')),
        Pool(('"rare"', '"mid"', '"big"'), every=True),
    ]
    assert plan[1].expression == '"rare" AND "mid" AND "big"'
    over = pool_plan(_terms("big"), ['"big"'], {"big": 900}, 10_000, weights)
    assert over == [Pool(('"big"',), newest=True)]  # nothing fits: newest matches
    assert pool_plan(_terms("gone"), ['"gone"'], {"gone": 0}, 10_000, weights) == []
    # words in most memories: no AND (it would read their long posting lists)
    everywhere = pool_plan(
        _terms("a", "b"), ['"a"', '"b"'], {"a": 9000, "b": 8000}, 10_000, weights
    )
    assert everywhere == [Pool(('"b"',), newest=True)]
    joint = pool_plan(_terms("a", "b"), ['"a"', '"b"'], {"a": 900, "b": 700}, 10_000, weights)
    assert joint == [Pool(('"b"', '"a"'), every=True, newest=True), Pool(('"b"',), newest=True)]
