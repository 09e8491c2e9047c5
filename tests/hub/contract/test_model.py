"""Contract, as a property: any interleaving of writes to several teams leaves each
team a dense cursor in commit order, and each slot the greatest seq it accepted."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealmem.hub.storage import KeyringBlob, StaleSeq, Storage, StoredHead

from .world import ALICE, BOB, PROJECT, T0, chunk, team

pytestmark = pytest.mark.slow

_names = itertools.count()

Op = tuple[int, str, str, int]  # (team index, kind, writer, number)
ops = st.lists(
    st.tuples(
        st.integers(0, 2),
        st.sampled_from(["manifest", "keyring"]),
        st.sampled_from([ALICE, BOB]),
        st.integers(1, 6),
    ),
    max_size=25,
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=ops)
def test_cursors_and_seqs_follow_a_simple_model(store: Storage, ops: list[Op]) -> None:
    names = [f"m{next(_names)}" for _ in range(3)]
    ids = {}
    for name in names:
        team(store, name)
        ids[name] = {w: chunk(store, name, w, f"{name}-{w}".encode()) for w in (ALICE, BOB)}
    kinds: dict[str, list[str]] = {n: ["roster"] for n in names}
    newest: dict[tuple[str, str], int] = {}
    keyrings: dict[str, int] = {}
    for index, kind, writer, number in ops:
        name = names[index]
        if kind == "manifest":
            head = StoredHead(PROJECT, writer, number, f"{number:064x}", 0)
            accepted = number > newest.get((name, writer), 0)
            try:
                with store.write(name) as tx:
                    tx.put_manifest(head, b"m", [ids[name][writer]], 3, T0)
            except StaleSeq:
                assert not accepted
            else:
                assert accepted
                newest[(name, writer)] = number
                kinds[name].append("manifest")
        else:
            version = keyrings.get(name, 0) + 1
            with store.write(name) as tx:
                tx.put_keyring(KeyringBlob(PROJECT, 1, f"kr{version}".encode(), version), T0)
            keyrings[name] = version
            kinds[name].append("keyring")
    for name in names:
        changes = store.changes(name, 0)
        assert [c.cursor for c in changes] == list(range(1, len(kinds[name]) + 1))
        assert [c.kind for c in changes] == kinds[name]
        assert store.cursor(name) == len(kinds[name])
        expected = {w: s for (n, w), s in newest.items() if n == name}
        assert store.newest_seqs(name, PROJECT) == expected
