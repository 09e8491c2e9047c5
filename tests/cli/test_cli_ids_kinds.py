"""Ids and kinds as people type them: printed suffixes, ambiguous prefixes, typo'd kinds.

Memories written in the same millisecond (a fixed clock through the Python API,
same ``SEALMEM_HOME``) share the timestamp that starts their UUIDv7 ids, so an
8-digit prefix is ambiguous on purpose; everything else runs through the CLI.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store.ids import short_id
from tests.cli.conftest import Run

CliFn = Callable[..., Run]

SAME_MS = 1_750_000_000_000


def remember(cli: CliFn, *args: str) -> dict[str, object]:
    run = cli("remember", *args, "--json")
    assert run.code == 0, run.err
    memory: dict[str, object] = run.json()["memory"]
    return memory


def same_minute(cli: CliFn, *texts: str) -> list[str]:
    cli("init")
    with MemoryStore.open(clock=lambda: SAME_MS) as store:
        return [store.remember(text, project="webshop").memory.id for text in texts]


@pytest.mark.slow
def test_the_printed_suffix_works_for_show_forget_and_supersedes(cli: CliFn) -> None:
    first = str(remember(cli, "The API listens on port 8000.")["id"])
    suffix = short_id(first)
    assert len(suffix) == 12
    assert suffix in first

    assert cli("show", suffix, "--json").json()["id"] == first
    assert cli("show", suffix, "--history").code == 0
    newer = remember(cli, "The API listens on port 9000.", "--supersedes", suffix)
    assert newer["supersedes"] == [first]
    forgot = cli("forget", suffix, "--reason", "moved", "--json")
    assert forgot.code == 0, forgot.err
    assert forgot.json()["id"] == first


@pytest.mark.slow
def test_an_ambiguous_prefix_lists_the_candidates_and_the_way_out(cli: CliFn) -> None:
    a, b = same_minute(cli, "deploys go out on Tuesdays", "deploys freeze on Fridays")
    assert a[:8] == b[:8]

    for command in (["show", a[:8]], ["forget", a[:8], "--reason", "x"]):
        run = cli(*command)
        assert run.code == 1
        assert a in run.err
        assert b in run.err
        assert "last 12" in run.err  # and how to pick one
    refused = cli("remember", "correction", "--supersedes", a[:8])
    assert refused.code == 1
    assert a in refused.err
    assert b in refused.err
    assert cli("show", a[:8] + a[9:13]).code == 1  # still the shared timestamp
    assert cli("show", short_id(b), "--json").json()["id"] == b
    assert len(cli("list", "--json").json()["memories"]) == 2  # nothing was stored


def test_too_short_and_non_hex_ids_say_what_is_accepted(cli: CliFn) -> None:
    memory_id = str(remember(cli, "something worth keeping")["id"])
    short = cli("show", memory_id[-6:])
    assert short.code == 1
    assert "at least 8" in short.err
    garbage = cli("show", "not-an-id")
    assert garbage.code == 1
    assert "is not a memory id" in garbage.err
    missing = cli("show", "ffffffffffff")
    assert missing.code == 1
    assert "no memory" in missing.err


def test_a_typo_in_a_kind_is_refused_with_a_suggestion(cli: CliFn) -> None:
    run = cli("remember", "We chose Postgres.", "--kind", "decisoin")
    assert run.code == 1
    assert "did you mean 'decision'" in run.err
    assert "--kind-new" in run.err
    assert cli("list", "--json").json()["memories"] == []  # nothing was stored


def test_a_new_kind_on_purpose_is_then_known(cli: CliFn) -> None:
    assert cli("remember", "Rotate the keys in May.", "--kind", "runbook").code == 1
    made = remember(cli, "Rotate the keys in May.", "--kind", "runbook", "--kind-new")
    assert made["kind"] == "runbook"
    again = remember(cli, "Restart the hub after upgrades.", "--kind", "runbook")
    assert again["kind"] == "runbook"  # used before in this store: accepted


@pytest.mark.parametrize(("first", "second"), [("decision", "warning"), ("warning", "note")])
def test_the_same_text_with_another_kind_makes_a_version_of_that_kind(
    cli: CliFn, first: str, second: str
) -> None:
    old = remember(cli, "Never deploy on Fridays.", "--kind", first)
    run = cli("remember", "Never deploy on Fridays.", "--kind", second, "--json")
    assert run.code == 0, run.err
    doc = run.json()
    assert doc["merged"] is True
    assert doc["memory"]["id"] == old["id"]
    assert doc["memory"]["kind"] == second
    assert f"stored as a {first}" in run.err  # said, not silent
    shown = cli("show", str(old["id"]), "--history", "--json").json()
    assert shown["memory"]["kind"] == second
    assert [v["kind"] for v in shown["history"]] == [first]


def test_the_same_text_without_a_kind_keeps_the_kind(cli: CliFn) -> None:
    old = remember(cli, "Never deploy on Fridays.", "--kind", "warning")
    again = remember(cli, "Never deploy on Fridays.")
    assert again["id"] == old["id"]
    assert again["kind"] == "warning"
