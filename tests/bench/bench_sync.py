"""Team sync over a shared folder: time and bytes moved, first sync vs one change, team growth.

    python tests/bench/bench_sync.py                   # 5 x 10k, growth 2..20 x 200
    python tests/bench/bench_sync.py --quick           # 3 x 1k, growth 2..5 x 100

Real members (own home, SQLite store, member key) over one real temp folder,
each syncing through the real engine (:func:`sealmem.client.sync.engine.sync`).  Every
transport call is counted: bytes *moved* are bytes read from plus bytes written
to the folder.  A "round" is every member syncing once, in turn; the first full
sync takes two rounds (the first member to sync has nothing to pull yet).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sealmem.client import MemoryStore
from sealmem.client.clock import now_ms
from sealmem.client.identity import load_member_key
from sealmem.client.store.connection import transaction
from sealmem.client.sync import pull
from sealmem.client.sync.engine import sync
from sealmem.client.sync.session import Team
from sealmem.client.sync.transport import Transport
from sealmem.client.team.admin import create_team, invite
from sealmem.client.team.approval import approve
from sealmem.client.team.invite import read_invite
from sealmem.client.team.join import join_team

PROJECT = "webapp"
from vocab import WORDS  # noqa: E402 - tests/bench is on sys.path when run as a script


class Counting(Transport):
    """Forwards to a real transport and counts the bytes that cross it."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.read = 0
        self.written = 0

    @property
    def location(self) -> str:
        return self.inner.location

    def _in(self, items: list[bytes]) -> list[bytes]:
        self.read += sum(len(b) for b in items)
        return items

    def rosters(self, after_version: int) -> list[bytes]:
        return self._in(self.inner.rosters(after_version))

    def put_roster(self, version: int, data: bytes) -> None:
        self.written += len(data)
        self.inner.put_roster(version, data)

    def keyrings(self, project: str) -> list[bytes]:
        return self._in(self.inner.keyrings(project))

    def put_keyring(self, project: str, epoch: int, data: bytes) -> None:
        self.written += len(data)
        self.inner.put_keyring(project, epoch, data)

    def manifests(self, project: str) -> dict[str, list[bytes]]:
        out = self.inner.manifests(project)
        self._in([b for items in out.values() for b in items])
        return out

    def newest_seqs(self, project: str) -> dict[str, int] | None:
        return self.inner.newest_seqs(project)

    def writer_manifests(self, project: str, writer: str) -> list[bytes]:
        return self._in(self.inner.writer_manifests(project, writer))

    def newest_manifest(self, project: str, writer: str) -> bytes | None:
        data = self.inner.newest_manifest(project, writer)
        self.read += len(data or b"")
        return data

    def chunk(self, project: str, writer: str, chunk_id: str) -> bytes | None:
        data = self.inner.chunk(project, writer, chunk_id)
        self.read += len(data or b"")
        return data

    def push(
        self, project: str, writer: str, seq: int, manifest: bytes, chunks: Mapping[str, bytes]
    ) -> None:
        self.written += len(manifest) + sum(len(c) for c in chunks.values())
        self.inner.push(project, writer, seq, manifest, chunks)

    def collect(self, project: str, writer: str, keep: set[str], grace_ms: int) -> int:
        return self.inner.collect(project, writer, keep, grace_ms)

    def damaged_chunks(self, project: str, writer: str, chunk_ids: Iterable[str]) -> set[str]:
        return self.inner.damaged_chunks(project, writer, chunk_ids)

    def report_holes(self, project: str, writer: str, reader: str, ids: Sequence[str]) -> None:
        self.inner.report_holes(project, writer, reader, ids)

    def post_request(self, kid: str, data: bytes) -> None:
        self.written += len(data)
        self.inner.post_request(kid, data)

    def requests(self) -> dict[str, bytes]:
        return self.inner.requests()

    def remove_request(self, kid: str) -> None:
        self.inner.remove_request(kid)


@dataclass
class Member:
    name: str
    store: MemoryStore
    team: Team
    wire: Counting


def _text(i: int, member: int) -> str:
    words = [WORDS[(i * 7 + k * 13 + member) % len(WORDS)] for k in range(12)]
    return f"member {member} note {i}: " + " ".join(words) + f" (ticket {i * 31 + member})"


def build_team(root: Path, members: int, memories: int) -> list[Member]:
    folder = root / "folder"
    folder.mkdir()
    out: list[Member] = []
    for n in range(members):
        home = root / f"m{n}"
        home.mkdir()
        key = load_member_key(home)
        store = MemoryStore.open(home / "store.db", author=key.kid)
        with transaction(store.connection):
            for i in range(memories):
                store.remember(_text(i, n), project=PROJECT, keywords=[WORDS[i % len(WORDS)]])
        if n == 0:
            team = create_team(
                home, store, key, name="bench", folder=str(folder), projects=[PROJECT],
                admin_name="m0", now=now_ms(),
            )  # fmt: skip
            inv = read_invite(invite(team, now_ms()), now=now_ms())
        else:
            join_team(home, inv, key, name=f"m{n}", now=now_ms())
            team = Team.open(home, store, key)
        wire = Counting(team.transport)
        team = dataclasses.replace(team, transport=wire)
        out.append(Member(f"m{n}", store, team, wire))
    approve(
        out[0].team,
        [m.team.me for m in out[1:]],
        projects=None,
        read=True,
        write=True,
        now=now_ms(),
    )
    return out


def round_(team: list[Member], rounds: int = 1) -> tuple[float, int]:
    """Every member syncs ``rounds`` times in turn; return (seconds, bytes moved)."""
    before = sum(m.wire.read + m.wire.written for m in team)
    start = time.perf_counter()
    for _ in range(rounds):
        for m in team:
            summary = sync(m.team)
            if summary.refused:
                raise SystemExit(f"unexpected refusal: {summary.refused}")
    seconds = time.perf_counter() - start
    return seconds, sum(m.wire.read + m.wire.written for m in team) - before


def change_one(member: Member, n: int) -> str:
    """Edit one of the member's own memories (a reinforcement: a new version, new keyword)."""
    row = member.store.connection.execute(
        "SELECT id FROM memories WHERE editor = ? ORDER BY id LIMIT 1", (member.team.me,)
    ).fetchone()
    mem = member.store.get(row[0])
    member.store.remember(mem.content, project=PROJECT, keywords=[f"changed{n}"])
    return mem.id


def check_everywhere(team: list[Member], memory_id: str, n: int) -> None:
    for m in team:
        if f"changed{n}" not in m.store.get(memory_id).record.keywords:
            raise SystemExit(f"{m.name} did not receive the change to {memory_id}")


def mb(n: int) -> str:
    return f"{n / 1e6:,.2f} MB"


def main_bench(members: int, memories: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        team = build_team(Path(tmp), members, memories)
        setup_s = time.perf_counter() - t0
        print(f"setup: {members} members x {memories:,} memories in {setup_s:.1f} s")
        cpu = time.process_time()
        first_s, first_b = round_(team, 2)
        cpu = time.process_time() - cpu
        total = members * memories
        print(f"first full sync (2 rounds): {first_s:.1f} s ({cpu:.1f} CPU s), {mb(first_b)} moved "
              f"({total:,} memories, each member ends with {total:,})")  # fmt: skip
        idle_s, idle_b = round_(team)
        print(f"idle round (nothing changed): {idle_s:.2f} s, {idle_b:,} bytes")
        changed = change_one(team[0], 1)
        one_s, one_b = round_(team)
        check_everywhere(team, changed, 1)
        print(f"one memory changed, one round: {one_s:.2f} s, {one_b:,} bytes moved = "
              f"{100 * one_b / first_b:.3f} % of the first sync (target < 2 %)")  # fmt: skip
        for m in team:
            counts = m.store.connection.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
            if counts != total:
                raise SystemExit(f"{m.name} holds {counts} memories, expected {total}")
        for m in team:
            m.store.close()


def growth(sizes: list[int], memories: int) -> None:
    print(f"\nteam growth ({memories} memories per member): cost per member")
    print("| members | first sync s | per member s | MB moved | MB per member "
          "| one-change bytes | per member |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            team = build_team(Path(tmp), n, memories)
            first_s, first_b = round_(team, 2)
            changed = change_one(team[0], 1)
            _, one_b = round_(team)
            check_everywhere(team, changed, 1)
            print(f"| {n} | {first_s:.1f} | {first_s / n:.2f} | {first_b / 1e6:.2f} | "
                  f"{first_b / n / 1e6:.2f} | {one_b:,} | {one_b // n:,} |")  # fmt: skip
            for m in team:
                m.store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=5)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--growth", default="2,5,10,20")
    parser.add_argument("--growth-memories", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="3 x 1k, growth 2,5 x 100")
    parser.add_argument(
        "--merge-batch",
        type=int,
        default=getattr(pull, "MERGE_BATCH", 1),  # 1 on code from before batching
        help="pulled versions merged per call (1: one chunk per call, as before batching)",
    )
    args = parser.parse_args()
    pull.MERGE_BATCH = args.merge_batch
    if args.quick:
        args.members, args.memories, args.growth, args.growth_memories = 3, 1000, "2,5", 100
    print(f"Python {sys.version.split()[0]}; merge batch {args.merge_batch}; "
          f"load average {os.getloadavg()}")  # fmt: skip
    main_bench(args.members, args.memories)
    print(f"load average after the main run: {os.getloadavg()}")
    if args.growth:
        growth([int(x) for x in args.growth.split(",")], args.growth_memories)


if __name__ == "__main__":
    main()
