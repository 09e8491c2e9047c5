"""`sealmem recall` says "nothing close" when no memory shares a word with the query, and
labels a related result (a session neighbour that matches none of the words)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from tests.cli.conftest import Run
from tests.support.related_store import write_queue_stack

CliFn = Callable[..., Run]


def test_no_match_says_nothing_close(cli: CliFn) -> None:
    assert cli("remember", "Staging deploys need the VPN.").code == 0
    run = cli("recall", "kubernetes ingress")
    assert run.code == 0
    assert "nothing close to 'kubernetes ingress'" in run.out
    assert cli("recall", "kubernetes ingress", "--json").json()["hits"] == []


def test_a_related_result_is_labelled_and_last(cli: CliFn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEALMEM_SESSION", "s1")
    assert cli("remember", "which queue carries the order events?").code == 0
    assert cli("remember", "RabbitMQ with quorum replicas").code == 0
    assert os.environ["SEALMEM_SESSION"] == "s1"
    run = cli("recall", "queue for order events")
    assert run.code == 0
    first, second = run.out.split("\n\n")
    assert "which queue carries" in first
    assert "related" not in first
    assert "related, matches none of your words" in second
    assert "RabbitMQ" in second
    hits = cli("recall", "queue for order events", "--json").json()["hits"]
    assert [h["related"] for h in hits] == [False, True]


def test_a_recall_of_k_takes_its_related_results_from_the_best_k(home: Path, cli: CliFn) -> None:
    """The CLI asks the store for 2k to fold near-duplicates; a related result still comes
    from the best k ranks, as the store's own recall of k has it (a recall of 1 showed a
    session neighbour ranked 2nd, one of 2 the neighbour ranked 3rd)."""
    write_queue_stack(home / "store.db", "cli")
    shown = {}
    for k in (1, 2):
        run = cli("recall", "kafka redis nginx", "--k", str(k), "--json")
        assert run.code == 0, run.err
        shown[k] = [(h["content"], h["related"]) for h in run.json()["hits"]]
    assert shown[1] == [("kafka redis nginx make up the queue stack", False)]
    assert [related for _, related in shown[2]] == [False, False, True]
    with MemoryStore.open(home / "store.db", author="ana") as store:
        for k in (1, 2):
            own = store.recall("kafka redis nginx", k=k, project="webshop")
            assert shown[k] == [(h.memory.content, h.related) for h in own]


def test_a_related_near_duplicate_is_labelled_related(
    cli: CliFn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A near-duplicate shown under its group's leader says it is related, as the leader
    does (it was shown unlabelled)."""
    monkeypatch.setenv("SEALMEM_SESSION", "s1")
    for text in (
        "which queue carries the order events?",
        "RabbitMQ with quorum replicas carries them, three nodes",
        "RabbitMQ with quorum replicas on three nodes",
    ):
        assert cli("remember", text).code == 0
    run = cli("recall", "queue for order events")
    assert run.code == 0
    first, second = run.out.split("\n\n")
    assert "related, matches none of your words" in second
    [also] = [line for line in second.splitlines() if "also written by" in line]
    assert "(related)" in also
    assert "quorum replicas" in also
    assert "(related)" not in first


def test_a_query_of_only_common_words_says_so(cli: CliFn) -> None:
    assert cli("remember", "Staging deploys need the VPN.").code == 0
    run = cli("recall", "what is the")
    assert run.code == 0
    assert "nothing close to 'what is the': it has only common words" in run.out
    assert "shares a word" not in run.out
    run = cli("recall", "kubernetes ingress")
    assert "nothing close to 'kubernetes ingress': no memory shares a word with it" in run.out


@pytest.mark.parametrize("query", ["\U0001f525", "\u3131", "\u732b"])
def test_a_query_of_one_emoji_jamo_or_character_is_a_word(cli: CliFn, query: str) -> None:
    """An emoji, a Hangul jamo and one CJK character are searched (the index holds
    them): finding nothing, recall says no memory holds them, not that the query holds
    no word."""
    assert cli("remember", "Staging deploys need the VPN.").code == 0
    run = cli("recall", query)
    assert run.code == 0
    assert "no memory shares a word with it" in run.out
    assert "no word to look for" not in run.out
