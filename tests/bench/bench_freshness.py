"""Freshness costs: the checkpoint's size and verify time, and the floor pre-pass per writer.

    python tests/bench/bench_freshness.py          # 1, 100, 1000 projects

1. **Checkpoint**: an admin's checkpoint of a team with P projects (each with its keyring):
   envelope bytes, and the median time a member takes to accept it (parse, signature,
   cited roster and keyrings, monotone against the previous one).
2. **Floors**: what the pre-pass of a pull adds per writer that moved
   (:func:`sealmem.protocol.witness.learn` on its newest manifest, which accepts it
   once against the state), beside accepting that manifest alone.

Per sync a member also asks the transport once for the checkpoint (one small GET on a
hub, one directory listing and one file read on a folder); an admin writes one about
twice a day (half the warn age) or when the team's state changed.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sealmem.crypto import SUITE, ContentKey
from sealmem.protocol.checkpoint import accept_checkpoint, build_checkpoint
from sealmem.protocol.keyring import build_keyring
from sealmem.protocol.state import TrustedState
from sealmem.protocol.verify import accept_keyring, accept_manifest, accept_roster
from sealmem.protocol.witness import learn
from tests.protocol.vectorgen.generate import (
    ALICE,
    BASE,
    BOB,
    NOW,
    PROJECT,
    R1_ROSTER,
    ROOT,
    TEAM,
    nxt,
    record,
    snap,
)


def median_ms(fn: Callable[[], object], n: int = 50) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def team_with(projects: int) -> TrustedState:
    state = TrustedState.pin(SUITE, TEAM, ROOT.sign_public)
    state, _ = accept_roster(SUITE, state, BASE[0][1])
    names = {PROJECT: 1, **{f"p{i}": 1 for i in range(projects - 1)}}
    roster = nxt(R1_ROSTER, projects=names)
    state, _ = accept_roster(SUITE, state, roster.sign(ROOT))
    for name in names:
        keyring = build_keyring(ContentKey.generate(), roster, name).sign(ROOT)
        state, _ = accept_keyring(SUITE, state, keyring)
    return state


def checkpoints(sizes: list[int]) -> None:
    print("checkpoint: projects, envelope bytes, accept ms (median of 50)")
    for n in sizes:
        state = team_with(n)
        previous = build_checkpoint(SUITE, state, seq=1, now_ms=NOW)
        data = build_checkpoint(SUITE, state, seq=2, now_ms=NOW + 1).sign(ROOT)
        ms = median_ms(partial(accept_checkpoint, SUITE, state, data, previous, now_ms=NOW + 2))
        print(f"  {n:5d} projects  {len(data):8d} bytes  {ms:7.2f} ms")


def floors() -> None:
    state = TrustedState.pin(SUITE, TEAM, ROOT.sign_public)
    for kind, data in BASE:
        state, _ = {"roster": accept_roster, "keyring": accept_keyring}[kind](SUITE, state, data)
    a1 = snap(ALICE, [record(ALICE, 1)])
    bob = snap(BOB, [record(BOB, 1)], heads=[a1.manifest.head(SUITE)]).envelope
    alone = median_ms(lambda: accept_manifest(SUITE, state, bob, project=PROJECT), 200)
    both = median_ms(lambda: learn(SUITE, state, PROJECT, [(BOB.kid, bob)]), 200)
    print(f"floors: accept one manifest {alone:.3f} ms; the pre-pass on it {both:.3f} ms")


if __name__ == "__main__":
    checkpoints([int(a) for a in sys.argv[1:]] or [1, 100, 1000])
    floors()
