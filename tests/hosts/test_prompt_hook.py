"""The prompt hook: corrected memories are replaced, keywords count in the relevance gate."""

from __future__ import annotations

import json
from collections.abc import Callable

from sealmem.client.recall.api import MemoryStore
from tests.hosts.conftest import Env, Run
from tests.support.framed import framed, q

Script = Callable[..., Run]


def _prompt(cli: Script, env: Env, prompt: str) -> list[str]:
    stdin = json.dumps({"session_id": "s1", "cwd": str(env.project), "prompt": prompt})
    run = cli("hook", "prompt", stdin=stdin)
    assert run.code == 0
    return framed(run.out)


def test_a_superseded_memory_is_replaced_by_its_correction(
    cli: Script, env: Env, store: MemoryStore
) -> None:
    old = store.remember("The billing service listens on port 8080.", project="webshop").memory
    store.remember(
        "Billing moved to 9090 behind the new proxy.", project="webshop", supersedes=[old.id]
    )
    lines = _prompt(cli, env, "which port does the billing service listen on?")
    assert lines == [
        q("note, replaces an older memory", "Billing moved to 9090 behind the new proxy.")
    ]


def test_a_memory_and_its_correction_are_not_shown_side_by_side(
    cli: Script, env: Env, store: MemoryStore
) -> None:
    old = store.remember("The billing service listens on port 8080.", project="webshop").memory
    store.remember(
        "The billing service listens on port 9090 since the proxy moved.",
        project="webshop",
        supersedes=[old.id],
    )
    lines = _prompt(cli, env, "which port does the billing service listen on?")
    assert lines == [q("note", "The billing service listens on port 9090 since the proxy moved.")]


def test_keywords_count_in_the_relevance_gate(cli: Script, env: Env, store: MemoryStore) -> None:
    store.remember(
        "Use the staging cluster for load tests.",
        keywords=["k6", "benchmark"],
        project="webshop",
    )
    store.remember("The invoice PDF uses the Inter font.", kind="fact", project="webshop")
    lines = _prompt(cli, env, "run the k6 benchmark for checkout")
    assert lines == [q("note", "Use the staging cluster for load tests.")]


def test_a_memory_that_shares_only_names_is_not_injected(
    cli: Script, env: Env, store: MemoryStore
) -> None:
    # Ben's turn, as a transcript import writes it: the speaker and the author are names
    with MemoryStore.open(author="ben") as ben:
        ben.remember("Ana: Ben!", project="webshop", origin="import")
        ben.remember("Ben: the kafka upgrade waits for the new disks", project="webshop")
    lines = _prompt(cli, env, "what did Ana tell Ben about the kafka upgrade")
    assert lines == [q("note", "Ben: the kafka upgrade waits for the new disks")]
