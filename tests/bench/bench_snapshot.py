"""Snapshot benchmark: build, verify and open snapshots; compare with raw AEAD; measure rewrites.

Run from the repository root (not collected by pytest)::

    python tests/bench/bench_snapshot.py            # 1k, 10k, 100k records
    python tests/bench/bench_snapshot.py 1000 5000  # other sizes

For each size it times, with the real ``sealmem.crypto`` suite:

* build  - ``build_snapshot``: bucket, canonical JSON, zlib, Padmé, XChaCha20-Poly1305, sign;
* verify - ``accept_manifest`` against a state that trusts the roster and keyring;
* open   - ``open_snapshot``: hash, decrypt, unpad, inflate, decode and validate every record;
* aead   - ``ContentKey.encrypt`` alone over the same plaintext byte count, in as many
  pieces as there are chunks: the floor the build cannot beat.

Throughput is over the canonical JSON bytes of the records (MB = 10**6 bytes).
Peak memory is measured in a second pass under ``tracemalloc`` (so the timings
are not slowed by it).  Last, one record of a 10k-record snapshot changes and
the next snapshot reuses the previous one: how many chunks and bytes are
rewritten (target < 2 %).
"""

from __future__ import annotations

import itertools
import random
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sealmem.crypto import SUITE
from sealmem.protocol import canonical
from sealmem.protocol.chunks import open_snapshot
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id
from sealmem.protocol.snapshot import PreviousSnapshot, Snapshot, build_snapshot
from sealmem.protocol.state import TrustedState
from sealmem.protocol.verify import accept_manifest
from tests.support.honest_world import (
    NOW,
    TEAM,
    World,
    accept_view,
    build_world,
    parse_path,
)

READER_NOW = 1_760_000_060_000  # the reader's clock: a minute after the test records

T = TypeVar("T")
_VOCAB = random.Random(0)
WORDS = tuple(
    "".join(_VOCAB.choice("etaoinshrdlucmfwypvbgkqjxz"[:20]) for _ in range(_VOCAB.randint(2, 10)))
    for _ in range(5000)
)
CUM_ZIPF = tuple(itertools.accumulate(1 / (rank + 1) for rank in range(len(WORDS))))  # as prose


def make_records(writer: str, n: int) -> list[Record]:
    rnd = random.Random(n)
    out = []
    for i in range(n):
        words = " ".join(rnd.choices(WORDS, cum_weights=CUM_ZIPF, k=40))
        out.append(
            Record(
                id=new_memory_id(NOW + i, i.to_bytes(10, "big")),
                project="app",
                kind=("note", "decision", "warning", "lesson")[i % 4],
                content=f"memory {i}: {words}",
                keywords=(WORDS[i % len(WORDS)], WORDS[(i + 3) % len(WORDS)]),
                importance=(i % 1000) / 1000,
                author=writer,
                editor=writer,
                created_at=NOW + i,
                hlc=Hlc(NOW + i, 0),
            )
        )
    return out


class Nonces:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, size: int, /) -> bytes:
        self.n += 1
        return self.n.to_bytes(size, "big")


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def peak_mb(fn: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def trusting(world: World) -> TrustedState:
    """A reader that trusts the team's rosters and keyrings, and no manifest yet."""
    keys_only = {
        p: d for p, d in world.current.items() if parse_path(p).kind in ("roster", "keyring")
    }
    return accept_view(world.suite, world.pinned(), keys_only)


def build(world: World, records: list[Record], previous: PreviousSnapshot | None = None,
          seq: int = 1) -> Snapshot:  # fmt: skip
    return build_snapshot(
        SUITE, world.content_keys[("app", 3)], world.keys["alice"], team=TEAM, project="app",
        epoch=3, roster_version=3, seq=seq, prev=None, records=records, random=Nonces(),
        created_at=NOW, previous=previous,
    )  # fmt: skip


def row(n: int, phase: str, seconds: float, nbytes: int, peak: float) -> str:
    return (
        f"| {n:>7,} | {phase:<6} | {seconds:8.3f} | {n / seconds:>12,.0f} | "
        f"{nbytes / seconds / 1e6:8.1f} | {peak:8.1f} |"
    )


def bench(world: World, state: TrustedState, n: int) -> list[str]:
    records = make_records(world.kid("alice"), n)
    plain = sum(len(canonical.encode(r.to_wire())) for r in records)
    key = world.content_keys[("app", 3)]
    snap, t_build = timed(lambda: build(world, records))
    (_, manifest), t_verify = timed(lambda: accept_manifest(SUITE, state, snap.envelope))
    opened, t_open = timed(
        lambda: open_snapshot(SUITE, key, manifest, snap.new_chunks, now_ms=READER_NOW)
    )
    if len(opened) != n:
        raise SystemExit(f"opened {len(opened)} records, built {n}")
    pieces = len(manifest.chunks)
    piece = b"\x00" * (plain // pieces)
    ad = b"x" * 120
    _, t_aead = timed(lambda: [key.encrypt(piece, ad) for _ in range(pieces)])
    chunk_bytes = sum(c.size for c in manifest.chunks)
    lines = [
        row(n, "build", t_build, plain, peak_mb(lambda: build(world, records))),
        row(
            n,
            "verify",
            t_verify,
            plain,
            peak_mb(lambda: accept_manifest(SUITE, state, snap.envelope)),
        ),
        row(
            n,
            "open",
            t_open,
            plain,
            peak_mb(
                lambda: open_snapshot(SUITE, key, manifest, snap.new_chunks, now_ms=READER_NOW)
            ),
        ),
        row(n, "aead", t_aead, plain, 0.0),
        f"|         | {pieces} chunks, {plain / 1e6:.1f} MB JSON -> {chunk_bytes / 1e6:.1f} MB "
        f"sealed; build/aead = {t_build / t_aead:.0f}x, open/aead = {t_open / t_aead:.0f}x | | | |",
    ]
    return lines


def rewrite(world: World, n: int = 10_000) -> str:
    records = make_records(world.kid("alice"), n)
    first = build(world, records)
    changed = list(records)
    changed[n // 2] = changed[n // 2].evolve(content="edited", hlc=Hlc(NOW + n + 1, 0))
    second = build(world, changed, PreviousSnapshot(first.manifest, first.digests), seq=2)
    total = sum(c.size for c in second.manifest.chunks)
    new = sum(len(c) for c in second.new_chunks.values())
    return (
        f"One record changed in a {n:,}-record snapshot: {len(second.new_chunks)} of "
        f"{len(second.manifest.chunks)} chunks rewritten, {new:,} of {total:,} bytes "
        f"({100 * new / total:.2f} %; target < 2 %); manifest {len(second.envelope):,} bytes."
    )


def main(sizes: list[int]) -> None:
    world = build_world(records_per_snapshot=1)
    state = trusting(world)
    print(f"sealmem snapshot benchmark, Python {sys.version.split()[0]}")
    print("| records | phase  |  seconds |    records/s |     MB/s | +peak MB |")
    print("|--------:|--------|---------:|-------------:|---------:|---------:|")
    for n in sizes:
        for line in bench(world, state, n):
            print(line, flush=True)
    print()
    print(rewrite(world))


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1_000, 10_000, 100_000])
