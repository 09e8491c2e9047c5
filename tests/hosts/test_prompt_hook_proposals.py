"""The prompt hook against a teammate's change to someone else's memory: the gate reads
the version that would be injected, not the proposal beside it."""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from sealmem.client.recall.api import MemoryStore
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.writer import write_version
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id
from tests.hosts.conftest import Env, Run
from tests.support.framed import framed

Script = Callable[..., Run]
NOW = 1_767_225_600_000
BOB, MALLORY = "b" * 26, "m" * 26


def _pulled(store: MemoryStore, record: Record, signer: str, name: str) -> None:
    prov = Provenance("folder", signer, name, True, NOW, 1)
    with transaction(store.connection) as conn:
        write_version(
            conn, record, provenance=prov, local_importance=0.5, seen_count=0, updated_at=NOW
        )


def test_a_proposal_that_matches_does_not_bring_in_a_line_that_does_not(
    cli: Script, env: Env, store: MemoryStore
) -> None:
    memory_id = new_memory_id(NOW, os.urandom(10))
    bob = Record(
        memory_id, "webshop", "fact", "The invoice PDF uses the Inter font.", (), 0.5,
        BOB, BOB, NOW, Hlc(NOW, 1), (),
    ).validate()  # fmt: skip
    _pulled(store, bob, BOB, "bob")
    edit = Record(
        memory_id, "webshop", "fact", "The billing service listens on port 6666.", (), 0.5,
        BOB, MALLORY, NOW, Hlc(NOW, 2), (),
    ).validate()  # fmt: skip
    _pulled(store, edit, MALLORY, "mallory")
    stdin = json.dumps(
        {"session_id": "s1", "cwd": str(env.project), "prompt": "which port does the "
         "billing service listen on?"}
    )  # fmt: skip
    run = cli("hook", "prompt", stdin=stdin)
    assert run.code == 0
    assert framed(run.out) == [], run.out
