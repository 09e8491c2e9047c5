"""Delta manifests: a chunk list listed against a full base rebuilds to exactly the
list its writer signed, and the writer's choice between a delta and a full manifest."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealmem.crypto import SUITE
from sealmem.protocol import reasons
from sealmem.protocol.bases import rebuild
from sealmem.protocol.errors import Rejected
from sealmem.protocol.manifest import DELTA_FORMAT, ChunkRef, Manifest
from sealmem.protocol.snapshot import DELTA_SHARE, FULL_EVERY, listed_against

BUCKETS = 64
PREV = "ab" * 32


def _manifest(chunks: dict[int, ChunkRef], seq: int = 1, **kw: object) -> Manifest:
    refs = tuple(chunks[b] for b in sorted(chunks))
    args: dict[str, object] = {
        "team": "acme-team", "project": "app", "writer": "a" * 26, "seq": seq,
        "prev": PREV if seq > 1 else None, "epoch": 1, "roster_version": 1,
        "buckets": BUCKETS, "chunks": refs, "records": len(refs) + 5,
    }  # fmt: skip
    args.update(kw)
    return Manifest(**args)  # type: ignore[arg-type]


def _ref(bucket: int, n: int) -> ChunkRef:
    return ChunkRef(bucket, SUITE.blake2b(f"{bucket}/{n}".encode(), size=32).hex(), 100 + n)


lists = st.dictionaries(st.integers(0, BUCKETS - 1), st.integers(0, 3), max_size=BUCKETS).map(
    lambda d: {b: _ref(b, n) for b, n in d.items()}
)


@pytest.mark.slow
@settings(deadline=None, max_examples=200)
@given(old=lists, new=lists)
def test_a_delta_rebuilds_to_the_list_it_was_made_from(
    old: dict[int, ChunkRef], new: dict[int, ChunkRef]
) -> None:
    base = _manifest(old)
    built = _manifest(new, seq=2)
    delta = built.against(SUITE, base, base.hash(SUITE))
    # what a reader sees: the body alone, parsed, then rebuilt from the base
    parsed = Manifest.from_body(delta.to_body())
    assert parsed.to_body()["format"] == DELTA_FORMAT
    assert not parsed.complete
    assert parsed.hash(SUITE) == delta.hash(SUITE)
    again = rebuild(SUITE, parsed, [(base, base.hash(SUITE))])
    assert again.chunks == built.chunks
    assert again.complete
    assert {c.bucket for c in parsed.listed} | set(
        parsed.delta.removed if parsed.delta else ()
    ) == {b for b in old.keys() | new.keys() if old.get(b) != new.get(b)}


def test_a_changed_or_reordered_ref_no_longer_hashes_to_the_root() -> None:
    base = _manifest({b: _ref(b, 0) for b in range(10)})
    built = _manifest({**{b: _ref(b, 0) for b in range(10)}, 3: _ref(3, 1)}, seq=2)
    delta = built.against(SUITE, base, base.hash(SUITE))
    assert delta.delta is not None
    other = replace(delta.delta, changed=(_ref(3, 2),))
    forged = Manifest.from_body(replace(delta, delta=other).to_body())
    with pytest.raises(Rejected) as info:
        rebuild(SUITE, forged, [(base, base.hash(SUITE))])
    assert info.value.reason == reasons.TAMPERED


def test_the_base_is_found_by_its_hash_only() -> None:
    base = _manifest({b: _ref(b, 0) for b in range(10)})
    other = _manifest({b: _ref(b, 1) for b in range(10)})
    built = _manifest({b: _ref(b, 0) for b in range(9)}, seq=2)
    parsed = Manifest.from_body(built.against(SUITE, base, base.hash(SUITE)).to_body())
    with pytest.raises(Rejected) as info:
        rebuild(SUITE, parsed, [(other, other.hash(SUITE))])
    assert info.value.reason == reasons.MISSING_BASE
    assert rebuild(
        SUITE, parsed, [(other, other.hash(SUITE)), (base, base.hash(SUITE))]
    ).chunks == (built.chunks)


@pytest.mark.parametrize(
    ("case", "changes", "seq", "kw", "delta"),
    [
        ("one change", 1, 2, {}, True),
        ("an eighth changed", BUCKETS // DELTA_SHARE, 2, {}, True),
        ("more than an eighth", BUCKETS // DELTA_SHARE + 1, 2, {}, False),
        ("the last seq before a full one", 1, FULL_EVERY, {}, True),
        ("FULL_EVERY seqs after the base", 1, FULL_EVERY + 1, {}, False),
        ("a new chain", 1, 2, {"prev": None}, False),
        ("a new epoch", 1, 2, {"epoch": 2}, False),
        ("a new bucket count", 1, 2, {"buckets": 128}, False),
    ],
)
def test_the_writer_publishes_a_delta_only_while_it_saves(
    case: str, changes: int, seq: int, kw: dict[str, object], delta: bool
) -> None:
    base = _manifest({b: _ref(b, 0) for b in range(BUCKETS)})
    new = {b: _ref(b, 1 if b < changes else 0) for b in range(BUCKETS)}
    built = _manifest(new, seq=seq, **kw)
    out = listed_against(SUITE, built, (base, base.hash(SUITE)))
    assert (out.delta is not None) is delta, case
    assert out.chunks == built.chunks
    assert listed_against(SUITE, built, None) is built


def test_a_delta_is_never_listed_against_another_delta() -> None:
    base = _manifest({b: _ref(b, 0) for b in range(BUCKETS)})
    first = listed_against(
        SUITE,
        _manifest({**{b: _ref(b, 0) for b in range(BUCKETS)}, 0: _ref(0, 1)}, seq=2),
        (base, base.hash(SUITE)),
    )
    assert first.delta is not None
    built = _manifest({b: _ref(b, 0) for b in range(BUCKETS)}, seq=3)
    assert listed_against(SUITE, built, (first, first.hash(SUITE))).delta is None


@pytest.mark.parametrize(
    ("case", "change"),
    [
        ("a base at the delta's own seq", {"base": {"seq": 2, "hash": "cd" * 32}}),
        ("removed out of order", {"removed": [5, 4]}),
        ("removed twice", {"removed": [4, 4]}),
        ("removed past the bucket count", {"removed": [BUCKETS]}),
        ("a bucket changed and removed", {"removed": [1]}),
        ("changed out of order", {"changed": "reversed"}),
        ("a chunks list besides changed", {"chunks": []}),
        ("no chunk_root", {"chunk_root": None}),
    ],
)
def test_a_malformed_delta_is_refused_by_name(case: str, change: dict[str, object]) -> None:
    base = _manifest({b: _ref(b, 0) for b in range(8)})
    built = _manifest({**{b: _ref(b, 0) for b in range(8)}, 1: _ref(1, 1), 2: _ref(2, 1)}, seq=2)
    body = built.against(SUITE, base, base.hash(SUITE)).to_body()
    for key, value in change.items():
        if value == "reversed":
            body[key] = list(reversed(body[key]))
        elif value is None:
            del body[key]
        else:
            body[key] = value
    with pytest.raises(Rejected) as info:
        Manifest.from_body(body)
    assert info.value.reason == reasons.MALFORMED, case
