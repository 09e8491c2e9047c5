"""The review queue with a teammate's memory and another teammate's proposal to edit it:
both have the memory's id, so accepting by that id alone must not pick one behind the
person's back (CLI ``sealmem captured``; the viewer posts the same names)."""

from __future__ import annotations

import os
from collections.abc import Callable

from sealmem.client.recall.api import MemoryStore
from sealmem.client.store import trust_rows
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.writer import write_version
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id
from tests.hosts.conftest import Env, Run

Script = Callable[..., Run]
NOW = 1_767_225_600_000
BOB, CAROL = "b" * 26, "c" * 26


def _pulled(store: MemoryStore, record: Record, signer: str, name: str) -> None:
    with transaction(store.connection) as conn:
        write_version(
            conn, record, provenance=Provenance("folder", signer, name, True, NOW, 1),
            local_importance=0.5, seen_count=0, updated_at=NOW,
        )  # fmt: skip


def _queue(store: MemoryStore) -> tuple[str, Record, Record]:
    memory_id = new_memory_id(NOW, os.urandom(10))
    bob = Record(
        memory_id, "webshop", "note", "Releases are cut on Tuesdays.", (), 0.5, BOB, BOB,
        NOW, Hlc(NOW, 1), (),
    ).validate()  # fmt: skip
    carol = Record(
        memory_id, "webshop", "note", "Releases are cut whenever; skip the checklist.", (),
        0.5, BOB, CAROL, NOW, Hlc(NOW, 2), (),
    ).validate()  # fmt: skip
    with transaction(store.connection) as conn:
        trust_rows.save_member_state(conn, BOB, "review", NOW)
        trust_rows.save_member_state(conn, CAROL, "review", NOW)
    _pulled(store, bob, BOB, "bob")
    _pulled(store, carol, CAROL, "carol")
    return memory_id, bob, carol


def test_an_id_naming_a_memory_and_a_proposal_is_refused(
    cli: Script, env: Env, store: MemoryStore
) -> None:
    memory_id, bob, carol = _queue(store)
    listed = cli("captured", "--json").json()["teammates"]
    assert sorted((t["id"], t["action"]) for t in listed) == [
        (memory_id, "edit"), (memory_id, "memory")
    ]  # fmt: skip

    refused = cli("captured", "accept", memory_id)
    assert refused.code != 0
    assert "names 2 teammates' versions" in refused.err
    assert "nothing was changed" in refused.err
    assert trust_rows.verdicts(store.connection) == {}

    bobs = next(t["ref"] for t in listed if t["action"] == "memory")
    done = cli("captured", "accept", bobs)
    assert done.code == 0, done.err
    assert trust_rows.verdicts(store.connection) == {trust_rows.version_key(bob): "accepted"}
    table = cli("captured").out
    assert f"@{CAROL[:8]}" not in table  # one left: its id alone names it
    kept = cli("captured", "discard", memory_id)
    assert kept.code == 0, kept.err
    assert trust_rows.verdicts(store.connection)[trust_rows.version_key(carol)] == "dismissed"


def test_the_list_names_each_version_when_an_id_names_two(
    cli: Script, env: Env, store: MemoryStore
) -> None:
    _queue(store)
    table = cli("captured").out
    assert f"@{BOB[:8]}" in table
    assert f"@{CAROL[:8]}" in table


def test_a_teammates_agent_written_memory_is_no_capture_of_ours(
    cli: Script, env: Env, store: MemoryStore
) -> None:
    """Bob's agent wrote a memory he shared (trusted, nothing waits): accepting or
    discarding it here is refused, not reported as done."""
    shared = Record(
        new_memory_id(NOW, os.urandom(10)), "webshop", "note", "Bob's agent noted this.", (),
        0.5, BOB, BOB, NOW, Hlc(NOW, 1), (), source="agent",
    ).validate()  # fmt: skip
    _pulled(store, shared, BOB, "bob")
    for verb in ("accept", "discard"):
        refused = cli("captured", verb, shared.id)
        assert refused.code != 0, refused.out
        assert "is a teammate's version" in refused.err
    assert not store.get(shared.id).deleted
