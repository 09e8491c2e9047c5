"""Rows <-> values built the fast way equal the reference way: the ``keywords_json`` a row
holds is ``json.dumps(keywords, ensure_ascii=False)`` (a join when no keyword holds a
character JSON escapes), and a record read by position (:func:`rows.record_from_values`,
what a push reads its own rows with) is the record :func:`rows.record_from_row` reads, and
both are the record written."""

from __future__ import annotations

import json
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealmem.client import MemoryStore
from sealmem.client.store import rows, writer
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.protocol.record import Record
from tests.support.versions import versions

pytestmark = pytest.mark.slow

ODD = st.sampled_from(['"', "\\", "\n", "\x00", "\x1f", "\x7f", "\u2028", "é", "\ud800", " "])
WORDS = st.lists(st.text(st.one_of(ODD, st.characters()), max_size=8), max_size=6)


@settings(max_examples=500)
@given(WORDS)
def test_keywords_json_is_the_json_encoding(words: list[str]) -> None:
    spaced = " ".join(words)
    assert rows._keywords_json(tuple(words), spaced) == json.dumps(words, ensure_ascii=False)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(versions(), max_size=6), st.lists(st.text(max_size=6), max_size=3))
def test_a_record_read_by_position_is_the_record_read_by_name(
    tmp_path_factory: pytest.TempPathFactory, records: list[Record], words: list[str]
) -> None:
    path = tmp_path_factory.mktemp("rows") / "store.db"
    store = MemoryStore.open(path, author="reader")
    conn = store.connection
    try:
        written: dict[str, Record] = {}
        with transaction(conn):
            for record in records:
                if record.id in written:
                    continue
                if words and not record.deleted:
                    record = record.evolve(keywords=tuple(w for w in words if w))
                written[record.id] = record
                writer.write_version(
                    conn, record, provenance=Provenance.local(), local_importance=0.5,
                    seen_count=1, updated_at=1,
                )  # fmt: skip
        conn.row_factory = sqlite3.Row
        by_name = [
            rows.record_from_row(r) for r in conn.execute("SELECT * FROM memories ORDER BY rowid")
        ]
        by_position = [
            rows.record_from_values(r)
            for r in conn.execute(f"SELECT {rows.RECORD_COLUMNS} FROM memories ORDER BY rowid")
        ]
        assert by_name == list(written.values())  # both read as written, not only alike
        assert by_position == by_name
        assert [r.to_wire() for r in by_position] == [r.to_wire() for r in by_name]
    finally:
        store.close()
