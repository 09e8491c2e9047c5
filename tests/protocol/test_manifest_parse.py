"""The manifest's quick chunk-list parse accepts exactly what the item-by-item rules accept."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealmem.crypto import SUITE
from sealmem.protocol.encoding import object_hash
from sealmem.protocol.envelope import seal
from sealmem.protocol.errors import Rejected
from sealmem.protocol.manifest import MAX_CHUNK_BYTES, ChunkRef, _chunk, _chunks

from .team_world import World, make_record

BUCKETS = 8
HEX = "0123456789abcdef"


def _slow(items: list[Any]) -> tuple[ChunkRef, ...] | str:
    try:
        return tuple(_chunk(c, f"manifest.chunks[{i}]", BUCKETS) for i, c in enumerate(items))
    except Rejected as exc:
        return f"{exc.reason}: {exc.detail}"


def _fast(items: list[Any]) -> tuple[ChunkRef, ...] | str:
    try:
        return _chunks(items, BUCKETS)
    except Rejected as exc:
        return f"{exc.reason}: {exc.detail}"


good_id = st.text(HEX, min_size=64, max_size=64)
near_id = st.one_of(
    good_id,
    st.text(HEX + "ABCDEFg \n", min_size=62, max_size=66),
    st.integers(),
    st.none(),
)
number = st.one_of(
    st.integers(min_value=-2, max_value=BUCKETS + 1),
    st.sampled_from([MAX_CHUNK_BYTES, MAX_CHUNK_BYTES + 1, 0, 1]),
    st.booleans(),
    st.floats(allow_nan=False),
    st.text(max_size=2),
)
ref = st.one_of(
    st.fixed_dictionaries({"bucket": number, "id": near_id, "size": number}),
    st.fixed_dictionaries(
        {"bucket": number, "id": near_id, "size": number}, optional={"extra": st.integers()}
    ),
    st.dictionaries(st.sampled_from(["bucket", "id", "size"]), number),
    st.lists(st.integers(), max_size=3),
    st.integers(),
)
good_ref = st.fixed_dictionaries(
    {
        "bucket": st.integers(0, BUCKETS - 1),
        "id": good_id,
        "size": st.integers(1, MAX_CHUNK_BYTES),
    }
)


@pytest.mark.slow
@settings(deadline=None, max_examples=300)
@given(st.lists(st.one_of(good_ref, good_ref, ref), max_size=6))
def test_quick_parse_equals_the_item_rules(items: list[Any]) -> None:
    assert _fast(items) == _slow(items)


@settings(deadline=None)
@given(st.lists(good_ref, min_size=1, max_size=6))
def test_well_formed_refs_parse_to_the_same_values(items: list[Any]) -> None:
    parsed = _fast(items)
    assert parsed == tuple(ChunkRef(c["bucket"], c["id"], c["size"]) for c in items)


def test_one_bad_id_among_good_ones_is_named_by_its_index() -> None:
    items = [{"bucket": i, "id": "a" * 64, "size": 10} for i in range(4)]
    items[2] = {"bucket": 2, "id": "A" * 64, "size": 10}
    assert _fast(items) == _slow(items)
    assert "manifest.chunks[2].id" in str(_fast(items))


def test_signing_from_one_encoding_equals_the_envelope_and_object_hash() -> None:
    world = World()
    snap = world.snapshot(world.alice, [make_record(world.alice, i) for i in range(300)])
    m = snap.manifest
    signer = world.alice
    envelope, digest = m.sign_and_hash(SUITE, signer)
    assert envelope == seal(m.to_body(), "manifest", signer) == m.sign(signer)
    assert digest == object_hash(SUITE, "manifest", m.to_body()) == m.hash(SUITE)
    assert snap.hash == digest
