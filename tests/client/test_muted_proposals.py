"""Muting a teammate takes back what the reader accepted of theirs: an accepted edit,
delete or supersede of someone else's memory applies only while its writer is not
muted (verdicts are read, never applied to the store, so nothing needs undoing); the
author's version stands again in every surface."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store import trust_rows
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.writer import write_version
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id
from tests.support.framed import framed, q

ME, BOB = "r" * 26, "b" * 26
MINE = "Never deploy on Fridays."
THEIRS = "Deploying on Fridays is fine now."


def _pull(store: MemoryStore, record: Record) -> None:
    at = record.hlc.wall + 1
    with transaction(store.connection) as conn:
        write_version(
            conn, record, provenance=Provenance("folder", BOB, "bob", True, at, 1),
            local_importance=record.importance, seen_count=0, updated_at=at,
        )  # fmt: skip


def _proposal(store: MemoryStore, action: str) -> tuple[str, Record]:
    """The reader's warning and Bob's accepted change of it (``action``)."""
    mine = store.remember(MINE, kind="warning", project="p").memory.record
    later = Hlc(mine.hlc.wall + 1000, 0)
    if action == "supersede":
        change = Record(
            new_memory_id(later.wall, os.urandom(10)), "p", "note", THEIRS, (), 0.1, BOB,
            BOB, later.wall, later, (mine.id,),
        ).validate()  # fmt: skip
    elif action == "edit":
        change = mine.evolve(content=THEIRS, editor=BOB, hlc=later)
    else:
        change = mine.evolve(content="", keywords=(), editor=BOB, hlc=later, deleted=True,
                             delete_reason="obsolete")  # fmt: skip
    _pull(store, change)
    with transaction(store.connection) as conn:
        trust_rows.save_verdict(conn, trust_rows.version_key(change), "accepted", store.now())
    return mine.id, change


@pytest.mark.slow
@pytest.mark.parametrize("action", ["edit", "delete", "supersede"])
def test_muting_the_proposer_takes_back_an_accepted_proposal(tmp_path: Path, action: str) -> None:
    with MemoryStore.open(tmp_path / "store.db", author=ME) as store:
        memory_id, _ = _proposal(store, action)
        accepted = store.startup_context(project="p")
        assert MINE not in accepted  # accepted: the change applies
        with transaction(store.connection) as conn:
            trust_rows.save_member_state(conn, BOB, "muted", store.now())
        started = framed(store.startup_context(project="p"))
        assert started == [q("warning", MINE)]
        shown = store.reader().resolve(store.get(memory_id))
        assert shown is not None
        assert (shown.memory.content, shown.superseded, shown.proposals) == (MINE, False, [])
        (hit,) = [
            h for h in store.recall("deploy fridays", project="p") if h.memory.id == memory_id
        ]
        assert hit.why["superseded"] == 0
        listed = [m for m, _ in store.reader().for_people(store.recent(project="p"))]
        assert MINE in [m.content for m in listed]
