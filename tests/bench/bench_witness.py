"""Bytes of a one-change manifest as the team grows, before and after the witness
encoding (SPEC.md "Witness encoding"), and that equivocation is still caught.

    python tests/bench/bench_witness.py [--writers 5,50,500,1000] [--records 2000] [--moved 1]

For each team size N, one writer publishes a full manifest of ``--records`` records that
witnesses the other N - 1 writers' heads, then changes one record while ``--moved`` of
those heads moved.  It prints the bytes of that one-change manifest published as a v2
delta (every head, the encoding before) and as a v3 delta (heads listed against the
base), the full manifest's bytes, the reader's accept time of each (median of 5, with the
v3 one rebuilt from the base), and whether a reader holding another hash for a head the
delta left unchanged refuses it as ``equivocation``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sealmem.crypto import SUITE
from sealmem.protocol import reasons
from sealmem.protocol.bases import rebuild
from sealmem.protocol.errors import Rejected
from sealmem.protocol.manifest import Head, Manifest
from sealmem.protocol.snapshot import PreviousSnapshot
from sealmem.protocol.state import ChainHead, TrustedState
from sealmem.protocol.verify import accept_manifest
from tests.protocol.team_world import PROJECT, World, make_record


def _kid(i: int) -> str:
    raw = hashlib.blake2b(i.to_bytes(4, "big"), digest_size=20).digest()
    return base64.b32encode(raw).decode().lower()[:26]


def _median_ms(run: Callable[[], object], times: int = 5) -> float:
    spent = []
    for _ in range(times):
        start = time.perf_counter()
        run()
        spent.append((time.perf_counter() - start) * 1000)
    return statistics.median(spent)


def _one(world: World, state: TrustedState, writers: int, records: int, moved: int) -> str:
    heads = [Head(_kid(i), PROJECT, 5, f"{i:064x}") for i in range(writers - 1)]
    recs = [make_record(world.alice, i) for i in range(records)]
    full = world.snapshot(world.alice, recs, heads=heads)
    now = [replace(h, seq=6, hash=f"{i + 7:064x}") if i < moved else h for i, h in enumerate(heads)]
    recs[1] = make_record(world.alice, 1, content="one change")
    snap = world.snapshot(
        world.alice, recs, seq=2, prev=full.hash, heads=now,
        previous=PreviousSnapshot(full.manifest, full.digests),
    )  # fmt: skip
    base = (full.manifest, full.hash or "")
    v2 = snap.manifest.against(SUITE, full.manifest, base[1], heads=False).sign(world.alice)
    v3 = snap.manifest.against(SUITE, full.manifest, base[1]).sign(world.alice)

    def rebuilt(m: Manifest) -> Manifest:
        return rebuild(SUITE, m, [base])

    t2 = _median_ms(lambda: accept_manifest(SUITE, state, v2))
    t3 = _median_ms(lambda: accept_manifest(SUITE, state, v3, rebuild=rebuilt))
    caught = "n/a"
    if writers > moved + 1:  # a head the delta left unchanged, held with another hash
        other = heads[-1]
        forked = state.evolve(heads={(other.writer, PROJECT): ChainHead(other.seq, "ee" * 32, 0)})
        try:
            accept_manifest(SUITE, forked, v3, rebuild=rebuilt)
            caught = "NO"
        except Rejected as exc:
            caught = "yes" if exc.reason == reasons.EQUIVOCATION else exc.reason
    return (
        f"| {writers:>5} | {len(v2):>9,} | {len(v3):>7,} | {len(full.envelope):>9,} "
        f"| {t2:6.2f} | {t3:6.2f} | {caught} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", default="5,50,500,1000")
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--moved", type=int, default=1)
    args = parser.parse_args()
    world = World()
    state = world.state()
    print(f"one record changed of {args.records}; {args.moved} other head(s) moved since the base")
    print(
        "| writers | v2 delta B | v3 delta B | full B | v2 accept ms | v3 accept ms "
        "| equivocation caught |"
    )
    print("|---|---|---|---|---|---|---|")
    for n in (int(x) for x in args.writers.split(",")):
        print(_one(world, state, n, args.records, args.moved))


if __name__ == "__main__":
    main()
