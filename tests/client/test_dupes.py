"""Near-duplicates (:mod:`sealmem.client.recall.dupes`): one lesson written twice groups,
two memories on one subject do not, and grouping keeps every result in rank order."""

from __future__ import annotations

import json
from pathlib import Path

from sealmem.client.recall.dupes import group, near_duplicates, shown

DATA = json.loads((Path(__file__).parents[1] / "bench" / "data" / "dupes.json").read_text())


def test_a_reworded_repeat_and_a_teammates_wording_are_near_duplicates() -> None:
    assert near_duplicates(
        "Redis 7 holds the session cookies; flushing it logs everyone out",
        "Session cookies live in Redis 7, so a flush of Redis logs every user out",
    )
    assert near_duplicates(
        "Never run migrations by hand on production; the deploy job runs them",
        "Production migrations are run by the deploy job, never by hand",
    )


def test_memories_on_one_subject_are_not() -> None:
    assert not near_duplicates(
        "Redis 7 holds the session cookies; flushing it logs everyone out",
        "Redis 7 also backs the rate limiter counters",
    )
    assert not near_duplicates("deploy on Tuesdays", "deploy on Tuesdays only")  # too short
    assert not near_duplicates("", "(forgotten)")


def test_other_numbers_or_opposite_words_keep_two_memories_apart() -> None:
    assert not near_duplicates(
        "The API rate limit is 100 requests per minute",
        "The API rate limit is 500 requests per minute since v2",
    )
    assert not near_duplicates(
        "Run the database migrations before the deploy",
        "Run the database migrations after the deploy",
    )
    assert near_duplicates(  # the same numbers, other words: one lesson
        "Our Python version is 3.11; 3.12 breaks the grpc wheels",
        "Stay on Python 3.11, the grpc wheels break on 3.12",
    )
    # a number one names and the other does not: notes written from one template differ
    assert not near_duplicates("bulk note 3 about subsystem 3", "bulk note 100 about subsystem 3")


def test_most_written_repeats_group_and_no_same_topic_pair_does() -> None:
    repeats = [near_duplicates(a, b) for a, b in DATA["repeats"]]
    assert sum(repeats) >= 0.9 * len(repeats)
    assert not [pair for pair in DATA["same_topic"] if near_duplicates(*pair)]


def test_grouping_keeps_every_result_and_the_best_ranked_leads() -> None:
    ranked = [
        "Session cookies live in Redis 7, so a flush of Redis logs every user out",
        "Passwords are hashed with argon2id, never bcrypt",
        "Redis 7 holds the session cookies; flushing it logs everyone out",
        "We hash passwords with argon2id; bcrypt is not used",
        "Redis 7 also backs the rate limiter counters",
    ]
    groups = group(ranked, lambda text: text)
    assert [g.members for g in groups] == [
        [ranked[0], ranked[2]],
        [ranked[1], ranked[3]],
        [ranked[4]],
    ]
    assert sorted(m for g in groups for m in g.members) == sorted(ranked)


def test_a_superseded_memory_stays_apart_from_its_correction() -> None:
    ranked = [
        "The API rate limit is 500 requests per minute since v2.",
        "The API rate limit is 100 requests per minute.",
        "The API rate limit is 500 requests per minute since v2 shipped.",
    ]
    groups = group(ranked, lambda text: text, alone=lambda text: text == ranked[1])
    assert [g.members for g in groups] == [[ranked[0], ranked[2]], [ranked[1]]]


def test_a_recall_of_k_shows_k_groups_of_matches_then_every_related_group() -> None:
    """The rule every surface (CLI, MCP, viewer) shows a recall by: near-duplicate
    matches fold into one group, k groups of matches, then the related ones."""
    items = [
        ("the deploy needs the vault token from ops", False),
        ("the deploy needs the vault token from the ops team", False),  # folds into the first
        ("the staging database is restored nightly", False),
        ("grafana alerts page the on-call engineer", False),
        ("lunch is at noon", True),
    ]
    groups = group(items, lambda item: item[0])
    assert len(groups) == 4
    out = shown(groups, 2, lambda item: item[1])
    assert [g.leader[0] for g in out] == [items[0][0], items[2][0], "lunch is at noon"]
    assert [o[0] for o in out[0].others] == [items[1][0]]
    assert shown(groups, 5, lambda item: item[1]) == groups
