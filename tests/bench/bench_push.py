"""Push side and snapshot codec: one change in a large store, build/open rates, zlib levels, codec.

    python tests/bench/bench_push.py                 # stores of 1k, 10k, 100k memories
    python tests/bench/bench_push.py 1000 10000      # other sizes
    python tests/bench/bench_push.py --no-stores     # codec, zlib and snapshot rates only
    python tests/bench/bench_push.py --store-cache /tmp/sealmem-bench 100000  # build once, reuse

Every figure is printed beside its limit (the target of issue 11) or a baseline
measured in the same run, with the load average (the machine is shared).

1. **One change**: two real members (own home, SQLite store, key) over one temp
   folder, each holding N memories of its own and the other's, synced.  The writer
   reinforces one memory; then the writer's sync (pull + push) and the reader's sync
   are timed, and the bytes the writer wrote are set against its first full push.
   Baseline in the same stores: the same change pushed through a full rebuild (every
   bucket read and re-encoded, as before the dirty-bucket log), forced by logging
   every bucket dirty.  Median of 5 changes.
2. **Snapshot build and open** of 10k synthetic records (``bench_snapshot.py``'s),
   records/s, beside the AEAD alone over the same bytes.
3. **zlib levels** 1/3/6/9 on those records' bucket plaintexts: compress and inflate
   rates and padded chunk bytes (readers accept any level).
4. **Canonical codec**: ``canonical.encode``/``decode`` on bucket plaintexts beside
   ``json.dumps``/``json.loads`` and the strict decoder (the decoder before this change).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_snapshot import READER_NOW, build, make_records, trusting
from bench_sync import PROJECT, Counting, Member, build_team, change_one

from sealmem.client import MemoryStore
from sealmem.client.identity import load_member_key
from sealmem.client.store.connection import transaction
from sealmem.client.store.derived import EVERY_BUCKET
from sealmem.client.sync.engine import sync
from sealmem.client.sync.session import Team
from sealmem.crypto import SUITE
from sealmem.protocol import canonical, snapshot
from sealmem.protocol.chunks import open_snapshot
from sealmem.protocol.record import Record
from sealmem.protocol.snapshot import _ZLIB_LEVEL
from sealmem.protocol.state import TrustedState
from sealmem.protocol.verify import accept_manifest
from tests.support.honest_world import World, build_world

T = TypeVar("T")


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f} / {five:.2f}"


def timed(fn: Callable[[], T], clock: Callable[[], float] = time.perf_counter) -> tuple[T, float]:
    start = clock()
    value = fn()
    return value, clock() - start


def cpu(fn: Callable[[], T]) -> tuple[T, float]:
    """CPU seconds of this process: steadier than wall time on a shared, loaded machine
    (the codec and snapshot work is one thread of pure computation)."""
    return timed(fn, time.process_time)


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


# -- 1. one change -----------------------------------------------------------------------


def _sync(member: Member) -> tuple[float, float]:
    """(wall ms, CPU ms) of one sync: wall includes fsyncs and waiting for a core."""
    start = time.process_time()
    summary, seconds = timed(lambda: sync(member.team))
    if summary.refused:
        raise SystemExit(f"unexpected refusal: {summary.refused}")
    return seconds * 1000, (time.process_time() - start) * 1000


def _change(writer: Member, reader: Member, n: int, *, full: bool) -> list[float]:
    if full:  # the old cost: every bucket read and encoded again
        with transaction(writer.store.connection):
            writer.store.connection.execute(
                "INSERT INTO push_dirty (project, id) VALUES (?, ?)", (PROJECT, EVERY_BUCKET)
            )
    change_one(writer, n)
    before = writer.wire.written
    moved = writer.wire.read + writer.wire.written + reader.wire.read + reader.wire.written
    w_wall, w_cpu = _sync(writer)
    written = writer.wire.written - before
    r_wall, r_cpu = _sync(reader)
    moved = writer.wire.read + writer.wire.written + reader.wire.read + reader.wire.written - moved
    return [w_wall, w_cpu, r_wall, r_cpu, written, moved]


def _reopen(root: Path) -> list[Member]:
    """The two members of a team built by :func:`build_team` under ``root``, opened again."""
    out = []
    for i in range(2):
        home = root / f"m{i}"
        key = load_member_key(home)
        store = MemoryStore.open(home / "store.db", author=key.kid)
        team = Team.open(home, store, key)
        wire = Counting(team.transport)
        out.append(Member(f"m{i}", store, dataclasses.replace(team, transport=wire), wire))
    return out


def _built(n: int, tmp: Path, cache: Path | None) -> tuple[list[Member], float, int, int]:
    """(writer and reader after their first full sync, setup s, the writer's snapshot bytes,
    the first sync's bytes moved).  With ``cache``, the synced team is kept there and
    copied back on later runs (the folder's path is in each team.json, so always to the
    same place): a 100k team takes minutes to build."""
    pristine = None if cache is None else cache / f"pristine{n}"
    root = tmp if cache is None else cache / f"work{n}"
    if pristine is not None and pristine.exists():
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(pristine, root, symlinks=True)
        figures = json.loads((root / "figures.json").read_text())
        return _reopen(root), 0.0, int(figures["first"]), int(figures["moved"])
    if cache is not None:
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
    (writer, reader), setup = timed(lambda: build_team(root, 2, n))
    _sync(writer)
    first = writer.wire.written  # the writer's whole snapshot
    _sync(reader)
    _sync(writer)
    _sync(reader)
    moved = sum(m.wire.read + m.wire.written for m in (writer, reader))
    if pristine is None:
        return [writer, reader], setup, first, moved
    (root / "figures.json").write_text(json.dumps({"first": first, "moved": moved}))
    writer.store.close()
    reader.store.close()
    shutil.copytree(root, pristine, symlinks=True)
    return _reopen(root), setup, first, moved


def one_change(n: int, cache: Path | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (writer, reader), setup, first, first_moved = _built(n, Path(tmp), cache)
        for i in range(2):  # the first push after the build carries the pulled ids' log
            _change(writer, reader, 90 + i, full=False)
        runs: dict[bool, list[list[float]]] = {False: [], True: []}
        for i in range(10):  # interleaved: incremental, full rebuild, incremental, ...
            full = i % 2 == 1
            runs[full].append(_change(writer, reader, 100 + i, full=full))

        def med(full: bool, col: int) -> float:
            return statistics.median(r[col] for r in runs[full])

        w, r = med(False, 0), med(False, 2)
        rewrite = 100 * med(False, 4) / first
        moved = 100 * med(False, 5) / first_moved
        bytes_ok = f" ({verdict(moved < 1)})" if n >= 10_000 else ""  # the target is for 10k
        print(
            f"| {n:>7,} | {w:6.1f} ({verdict(w <= 50)}) / {med(False, 1):5.1f} | "
            f"{med(True, 0):7.1f} / {med(True, 1):7.1f} | "
            f"{r:5.1f} ({verdict(r <= 20)}) / {med(False, 3):5.1f} | "
            f"{med(True, 2):5.1f} / {med(True, 3):5.1f} | {rewrite:.2f} % | "
            f"{moved:.2f} %{bytes_ok} | {setup:4.0f} s | {load()} |"
        )
        writer.store.close()
        reader.store.close()


# -- 2. snapshot build and open -----------------------------------------------------------


@contextlib.contextmanager
def as_before() -> Iterator[None]:
    """The codec paths before issue 11, kept in the code as fallbacks and references: the
    stdlib encoder, the strict decoder, the field-by-field ``from_wire``, zlib level 6."""
    saved = (canonical._ORJSON, canonical.decode, Record.from_wire, snapshot._ZLIB_LEVEL)
    canonical._ORJSON = False
    canonical.decode = canonical._decode_strict  # type: ignore[assignment]
    Record.from_wire = Record._from_wire_checked  # type: ignore[method-assign]
    snapshot._ZLIB_LEVEL = 6
    try:
        yield
    finally:
        canonical._ORJSON, canonical.decode, Record.from_wire, snapshot._ZLIB_LEVEL = saved


def _rates(world: World, state: TrustedState, records: list[Record]) -> tuple[float, float]:
    n = len(records)
    key = world.content_keys[("app", 3)]
    builds, opens = [], []
    for _ in range(3):
        snap, t = cpu(lambda: build(world, records))
        builds.append(t)
        _, manifest = accept_manifest(SUITE, state, snap.envelope)
        opened, t = cpu(
            lambda: open_snapshot(SUITE, key, manifest, snap.new_chunks, now_ms=READER_NOW)  # noqa: B023
        )
        opens.append(t)
        assert len(opened) == n
    return n / min(builds), n / min(opens)


def snapshot_rates(n: int = 10_000) -> list[bytes]:
    world = build_world()
    state = trusting(world)
    records = make_records(world.kid("alice"), n)
    key = world.content_keys[("app", 3)]
    b, o = _rates(world, state, records)
    with as_before():
        b_old, o_old = _rates(world, state, records)
    plain = [canonical.encode([r.to_wire() for r in records[i : i + 40]]) for i in range(0, n, 40)]
    total = sum(map(len, plain))
    _, t_aead = cpu(lambda: [key.encrypt(p, b"x" * 120) for p in plain])
    print(f"| build | {b:>9,.0f} | 40,000 ({verdict(b >= 40_000)}) | {b_old:>9,.0f} | "
          f"AEAD alone {n / t_aead:,.0f} |")  # fmt: skip
    print(f"| open  | {o:>9,.0f} | 30,000 ({verdict(o >= 30_000)}) | {o_old:>9,.0f} | "
          f"{load()} |")  # fmt: skip
    print(f"({n:,} records, {total / 1e6:.1f} MB of canonical JSON; CPU time, best of 3; "
          f"zlib level {_ZLIB_LEVEL})")  # fmt: skip
    return plain


# -- 3. zlib levels ---------------------------------------------------------------------------


def zlib_levels(plain: list[bytes], n: int) -> None:
    levels = (1, 3, 6, 9)
    best: dict[int, list[float]] = {level: [1e9, 1e9] for level in levels}
    sizes: dict[int, int] = {}
    for _ in range(3):  # interleaved, best of 3: the machine is shared
        for level in levels:
            comp, tc = cpu(lambda: [zlib.compress(p, level) for p in plain])  # noqa: B023
            _, td = cpu(lambda: [zlib.decompress(c) for c in comp])  # noqa: B023
            best[level] = [min(best[level][0], tc), min(best[level][1], td)]
            sizes[level] = sum(len(SUITE.pad(c)) for c in comp)
    for level in levels:
        tc, td = best[level]
        mark = " (chosen)" if level == _ZLIB_LEVEL else ""
        print(f"| {level}{mark} | {n / tc:>10,.0f} | {n / td:>10,.0f} | {sizes[level]:>11,} | "
              f"{100 * sizes[level] / sizes[6] - 100:+.1f} % |")  # fmt: skip
    print(load())


# -- 4. canonical codec -------------------------------------------------------------------


def codec(plain: list[bytes]) -> None:
    values = [json.loads(p) for p in plain]
    mb = sum(map(len, plain)) / 1e6

    def dumps() -> None:
        for v in values:
            json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

    def loads() -> None:
        for p in plain:
            json.loads(p)

    def check() -> None:
        for v in values:
            canonical._fast_check(v)

    def orjson_alone() -> None:
        for v in values:
            orjson.dumps(v, option=orjson.OPT_SORT_KEYS)

    rows = [
        ("type check", check, "orjson encoding alone", orjson_alone),
        ("encode", lambda: [canonical.encode(v) for v in values], "json.dumps", dumps),
        ("decode", lambda: [canonical.decode(p) for p in plain], "json.loads", loads),
        ("decode", lambda: [canonical.decode(p) for p in plain], "strict decoder (before)",
         lambda: [canonical._decode_strict(p) for p in plain]),
    ]  # fmt: skip
    for name, fn, base_name, base in rows:
        t = min(cpu(fn)[1] for _ in range(5))
        tb = min(cpu(base)[1] for _ in range(5))
        print(f"| {name} | {mb / t:7.1f} MB/s | {base_name} {mb / tb:7.1f} MB/s | "
              f"x{tb / t:.2f} |")  # fmt: skip
    print(load())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 10_000, 100_000])
    parser.add_argument("--no-stores", action="store_true", help="skip the one-change part")
    parser.add_argument(
        "--store-cache",
        type=Path,
        help="keep the synced teams here and reuse them on later runs (a 100k team takes "
        "minutes to build); one-change runs then start from the same stores",
    )
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores, {load()}\n")
    if not args.no_stores:
        print("One change, ms wall / CPU (median of 5; baseline: the same change through a "
              "full rebuild); bytes: the writer's new bytes / its snapshot, and bytes moved "
              "/ the first full sync's (2 members)")  # fmt: skip
        print("| memories | writer | writer, full rebuild | reader | reader, full rebuild "
              "| rewrite | moved | setup | load |")  # fmt: skip
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for n in args.sizes:
            one_change(n, args.store_cache)
        print()
    print("Snapshot build and open (records/s; limit from issue 11; before: the previous "
          "codec paths, in this run)")  # fmt: skip
    print("| phase | records/s | limit | before | beside |")
    print("|---|---:|---:|---:|---|")
    plain = snapshot_rates()
    print("\nzlib levels on the same bucket plaintexts (records/s; padded chunk bytes)")
    print("| level | compress | inflate | padded bytes | vs level 6 |")
    print("|---|---:|---:|---:|---:|")
    zlib_levels(plain, 10_000)
    print("\nCanonical codec on the same plaintexts")
    print("| | canonical | baseline | speed-up |")
    print("|---|---:|---:|---:|")
    codec(plain)


if __name__ == "__main__":
    main()
