"""Hub load benchmark: N members doing signed pull/push cycles against one real hub.

Run from the repository root (not collected by pytest)::

    python tests/bench/bench_hub.py                    # N = 10, 50, 200; 10 s each
    python tests/bench/bench_hub.py --members 20 --seconds 5

For each N a fresh hub (``sealmem hub serve``, uvicorn, in a subprocess on
127.0.0.1) gets one team whose roster has an admin and N members, all granted
read/write on one project.  Every member first pushes a snapshot of 8 records,
then, with its own :class:`HubTransport` on its own connection (every request
signed with its member key), repeats a sync cycle for a bounded time.  Up to
32 client threads (``--concurrency``) carry the members, each thread running
the cycles of its share of them in turn: more Python threads than that measure
the client's GIL, not the hub (200 threads burned 88 % of a core for 28
``/healthz`` requests/s).  A cycle:

1. ``GET seqs`` - which writers moved;
2. for up to two moved writers: ``GET manifests/{writer}`` and ``GET`` one chunk
   the manifest names (the manifest is parsed, as a client does);
3. push: one record changes, ``build_snapshot`` reuses the other buckets, so
   ``PUT`` one chunk, then ``PUT`` the manifest at seq + 1 (the hub verifies its
   signature, grant and chain and does compare-and-swap on ``seq``).

Every HTTP request is timed (sending, hub work, reading the body).  The same N
threads then ``GET /healthz`` (no auth, no storage) for the same time: the
ceiling of this client + uvicorn + Starlette stack on this machine.  Hub memory
is VmRSS / VmHWM from ``/proc/<pid>/status``.  Errors are HTTP statuses >= 400
(a 429 that the transport retried counts too) and failed cycles.  Client and
hub share the machine's cores, so the figures are for the pair.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sealmem.client.sync.hub import HubTransport
from sealmem.crypto import SUITE, ContentKey, MemberKey, random_bytes
from sealmem.hub.server import free_port
from sealmem.protocol.envelope import unpack
from sealmem.protocol.errors import SealmemError
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.keyring import build_keyring
from sealmem.protocol.manifest import Manifest
from sealmem.protocol.record import Record, new_memory_id
from sealmem.protocol.roster import Grant, Member, Roster
from sealmem.protocol.snapshot import PreviousSnapshot, build_snapshot
from sealmem.protocol.verify import MAX_MANIFEST_BYTES

PROJECT = "bench"
RECORDS = 8
PULLS_PER_CYCLE = 2
CONCURRENCY = 32
"""Client threads: beyond a few dozen, Python threads measure the GIL, not the hub."""
TOKEN = "bench-operator-token-0123456789"  # a throwaway hub's token
SEALMEM = Path(sys.executable).with_name("sealmem")


# -- timing every request -----------------------------------------------------------


@dataclass
class Recorder:
    """Latencies and error statuses of every request, from all threads."""

    started: float = 0.0
    until: float = float("inf")
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    why: Counter[str] = field(default_factory=Counter)
    cycles: int = 0
    hub_cpu: float = 0.0  # CPU seconds per second over the measured window
    client_cpu: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _measuring(self) -> bool:
        return self.started <= time.monotonic() <= self.until

    def add(self, seconds: float, status: int) -> None:
        if not self._measuring():
            return
        with self.lock:
            self.latencies.append(seconds)
            if status >= 400:
                self.errors += 1
                self.why[f"HTTP {status}"] += 1

    def error(self, exc: Exception) -> None:
        """A failed cycle or request (an HTTP error status is counted already)."""
        if self._measuring():
            with self.lock:
                if getattr(exc, "status", None) is None:
                    self.errors += 1  # no answer at all: connection refused, reset, timeout
                self.why[f"failed cycle: {getattr(exc, 'code', type(exc).__name__)}"] += 1

    def cycle(self) -> None:
        if self._measuring():
            with self.lock:
                self.cycles += 1


class TimedTransport(httpx.BaseTransport):
    """httpx's own transport, timing each request until its body is read into
    ``recorder`` (swapped between phases; clients are made once, up front, since
    making one costs tens of milliseconds of CPU)."""

    def __init__(self) -> None:
        self._inner = httpx.HTTPTransport()
        self.recorder = Recorder()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        t0 = time.perf_counter()
        response = self._inner.handle_request(request)
        response.read()
        self.recorder.add(time.perf_counter() - t0, response.status_code)
        return response

    def close(self) -> None:
        self._inner.close()


# -- the hub --------------------------------------------------------------------------


class Hub:
    """``sealmem hub serve`` in a subprocess on a free port, with a fresh data dir."""

    def __init__(self, data: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "SEALMEM_HUB_OPERATOR_TOKEN": TOKEN}
        argv = [str(SEALMEM), "hub", "serve", "--data", str(data), "--port", str(self.port)]
        self.log = (data.parent / f"hub-{self.port}.log").open("wb")
        self.proc = subprocess.Popen(argv, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"the hub exited with {self.proc.returncode}; see {self.log.name}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise SystemExit("the hub did not answer /healthz within 30 s")

    def memory_mb(self) -> tuple[float, float]:
        """(VmRSS, VmHWM) of the hub process in MB."""
        fields: dict[str, float] = {}
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0]) / 1024
        return fields["VmRSS"], fields["VmHWM"]

    def cpu_seconds(self) -> float:
        """User + system CPU time the hub process has used so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


# -- the team and its members -------------------------------------------------------------


def register_team(
    url: str, admin: MemberKey, members: Sequence[MemberKey]
) -> tuple[str, int, ContentKey]:
    """Roster v1 (admin + members, all read/write on PROJECT) and the keyring, on the hub."""
    team = f"bench-{random_bytes(4).hex()}"
    everyone = [(admin, "admin", "admin")] + [(m, f"m{i}", "member") for i, m in enumerate(members)]
    roster = Roster(
        team=team,
        version=1,
        prev=None,
        admins=(admin.kid,),
        members=tuple(Member(k.kid, n, k.sign_public, k.box_public, r) for k, n, r in everyone),
        projects={PROJECT: 1},
        grants=tuple(Grant(k.kid, PROJECT, True, True) for k, _, _ in everyone),
        created_at=now_ms(),
    ).check(SUITE)
    content_key = ContentKey.generate()
    keyring = build_keyring(content_key, roster, PROJECT)
    hub = HubTransport(url, team, admin, operator_token=TOKEN)
    try:
        hub.put_keyring(PROJECT, keyring.epoch, keyring.sign(admin))
        hub.put_roster(1, roster.sign(admin))
    finally:
        hub.close()
    return team, roster.version, content_key


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class Writer:
    """One member's side: its key, records, last snapshot, what it has seen."""

    key: MemberKey
    content_key: ContentKey
    team: str
    roster_version: int
    records: list[Record] = field(default_factory=list)
    seq: int = 0
    previous: PreviousSnapshot | None = None
    prev_hash: str | None = None
    seen: dict[str, int] = field(default_factory=dict)

    def record(self, i: int, wall: int) -> Record:
        kid = self.key.kid
        return Record(
            id=new_memory_id(wall, random_bytes(10)), project=PROJECT, kind="note",
            content=f"benchmark memory {i} of {kid}, version at {wall}",
            keywords=("bench",), importance=0.5, author=kid, editor=kid, created_at=wall,
            hlc=Hlc(wall, 0), origin="bench",
        )  # fmt: skip

    def next_snapshot(self) -> tuple[int, bytes, dict[str, bytes]]:
        wall = max(now_ms(), self.records[-1].hlc.wall + 1) if self.records else now_ms()
        if not self.records:
            self.records = [self.record(i, wall) for i in range(RECORDS)]
        else:
            i = self.seq % RECORDS
            old = self.records[i]
            content = f"benchmark memory {i} of {old.editor}, version at {wall}"
            self.records[i] = replace(old, content=content, hlc=Hlc(wall, 0))
        snap = build_snapshot(
            SUITE, self.content_key, self.key, team=self.team, project=PROJECT, epoch=1,
            roster_version=self.roster_version, seq=self.seq + 1, prev=self.prev_hash,
            records=self.records, random=random_bytes, created_at=wall, previous=self.previous,
        )  # fmt: skip
        self.seq += 1
        self.previous = PreviousSnapshot(snap.manifest, snap.digests)
        self.prev_hash = snap.manifest.hash(SUITE)
        return self.seq, snap.envelope, dict(snap.new_chunks)

    def push(self, hub: HubTransport) -> None:
        seq, manifest, chunks = self.next_snapshot()
        hub.push(PROJECT, self.key.kid, seq, manifest, chunks)

    def cycle(self, hub: HubTransport) -> None:
        seqs = hub.newest_seqs(PROJECT) or {}
        moved = [w for w, s in seqs.items() if w != self.key.kid and s > self.seen.get(w, 0)]
        for writer in moved[:PULLS_PER_CYCLE]:
            envelopes = hub.writer_manifests(PROJECT, writer)
            if envelopes:
                manifest = Manifest.from_body(
                    unpack(envelopes[0], what="manifest", max_bytes=MAX_MANIFEST_BYTES).body
                )
                self.seen[writer] = manifest.seq
                # A reader fetches only chunks it has not opened: here, one per manifest.
                ref = manifest.chunks[manifest.seq % len(manifest.chunks)]
                if hub.chunk(PROJECT, writer, ref.id) is None:
                    raise SealmemError(f"chunk {ref.id} of {writer} is missing")
        self.push(hub)


# -- one load run -----------------------------------------------------------------------


@dataclass
class Result:
    label: str
    members: int
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int
    rss_mb: float
    hwm_mb: float
    cycles: int
    hub_cpu: float
    client_cpu: float
    why: Counter[str]


def _summary(label: str, n: int, rec: Recorder, seconds: float, hub: Hub) -> Result:
    lat = sorted(rec.latencies)
    q = statistics.quantiles(lat, n=100, method="inclusive") if len(lat) >= 2 else [0.0] * 99
    rss, hwm = hub.memory_mb()
    p50, p99 = q[49] * 1e3, q[98] * 1e3
    return Result(
        label, n, len(lat), seconds, p50, p99, rec.errors, rss, hwm, rec.cycles,
        rec.hub_cpu, rec.client_cpu, rec.why,
    )  # fmt: skip


Body = Callable[[int, Recorder, threading.Event], None]


def _client_cpu() -> float:
    times = os.times()
    return times.user + times.system


def _run_threads(n: int, seconds: float, warmup: float, body: Body, hub: Hub) -> Recorder:
    rec = Recorder()
    stop = threading.Event()
    threads = [threading.Thread(target=body, args=(i, rec, stop), daemon=True) for i in range(n)]
    t0 = time.monotonic()
    rec.started, rec.until = t0 + warmup, t0 + warmup + seconds
    for t in threads:
        t.start()
    time.sleep(warmup)
    hub_cpu, client_cpu = hub.cpu_seconds(), _client_cpu()
    time.sleep(seconds)
    rec.hub_cpu = (hub.cpu_seconds() - hub_cpu) / seconds
    rec.client_cpu = (_client_cpu() - client_cpu) / seconds
    stop.set()
    for t in threads:
        t.join(timeout=60)
    return rec


def run_level(
    n: int, seconds: float, warmup: float, concurrency: int, workdir: Path
) -> list[Result]:
    data = workdir / f"hub-{n}"
    hub = Hub(data)
    try:
        admin = MemberKey.generate()
        keys = [MemberKey.generate() for _ in range(n)]
        team, version, content_key = register_team(hub.url, admin, keys)
        writers = [Writer(k, content_key, team, version) for k in keys]
        timers = [TimedTransport() for _ in writers]
        clients = [httpx.Client(base_url=hub.url, transport=t, timeout=60) for t in timers]
        hubs = [
            HubTransport(hub.url, team, w.key, client=c)
            for w, c in zip(writers, clients, strict=True)
        ]
        for w, h in zip(writers, hubs, strict=True):
            w.push(h)  # the first snapshot of every member, outside the timed window
        workers = min(n, concurrency)

        def member_loop(j: int, rec: Recorder, stop: threading.Event) -> None:
            """Worker j runs the cycles of members j, j + workers, ... in turn, each on
            its own connection with its own key."""
            mine = list(range(j, n, workers))
            for i in mine:
                timers[i].recorder = rec
            while not stop.is_set():
                for i in mine:
                    try:
                        writers[i].cycle(hubs[i])
                        rec.cycle()
                    except SealmemError as exc:
                        rec.error(exc)

        def health(j: int, rec: Recorder, stop: threading.Event) -> None:
            timers[j].recorder = rec
            while not stop.is_set():
                try:
                    clients[j].get("/healthz")
                except httpx.HTTPError as exc:
                    rec.error(exc)

        try:
            loads = [("sync", member_loop), ("healthz", health)]
            sync, ceiling = (
                _summary(label, n, _run_threads(workers, seconds, warmup, body, hub), seconds, hub)
                for label, body in loads
            )
        finally:
            for c in clients:
                c.close()
        return [sync, ceiling]
    finally:
        hub.stop()


def print_table(results: Sequence[Result]) -> None:
    columns = [
        ("members", ">"), ("load", "<"), ("req/s", ">"), ("p50 ms", ">"), ("p99 ms", ">"),
        ("errors", ">"), ("cycles/s", ">"), ("hub CPU", ">"), ("client CPU", ">"),
        ("hub RSS MB", ">"), ("hub peak MB", ">"),
    ]  # fmt: skip
    rows = [
        [
            f"{r.members}", r.label, f"{r.requests / r.seconds:,.0f}", f"{r.p50_ms:.1f}",
            f"{r.p99_ms:.1f}", f"{r.errors}",
            f"{r.cycles / r.seconds:.1f}" if r.label == "sync" else "-",
            f"{r.hub_cpu:.0%}", f"{r.client_cpu:.0%}", f"{r.rss_mb:.1f}", f"{r.hwm_mb:.1f}",
        ]
        for r in results
    ]  # fmt: skip
    widths = [max(len(c[0]), *(len(row[i]) for row in rows)) for i, c in enumerate(columns)]
    pairs = list(zip(columns, widths, strict=True))
    print("| " + " | ".join(name.ljust(w) for (name, _), w in pairs) + " |")
    print("|" + "|".join("-" * (w + 1) + (":" if a == ">" else "-") for (_, a), w in pairs) + "|")
    for row in rows:
        cells = [
            c.rjust(w) if a == ">" else c.ljust(w)
            for c, ((_, a), w) in zip(row, pairs, strict=True)
        ]
        print("| " + " | ".join(cells) + " |")
    for r in results:
        if r.why:
            what = ", ".join(f"{k} x{v}" for k, v in sorted(r.why.items()))
            print(f"N={r.members} {r.label} errors: {what}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, nargs="+", default=[10, 50, 200])
    parser.add_argument("--seconds", type=float, default=10.0, help="measured time per load")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured start per load")
    parser.add_argument(
        "--concurrency", type=int, default=CONCURRENCY, help="client threads (requests in flight)"
    )
    args = parser.parse_args(argv)
    print(
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {args.seconds:.0f} s per load, "
        f"at most {args.concurrency} requests in flight"
    )
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="sealmem-bench-hub-") as tmp:
        for n in args.members:
            level = run_level(n, args.seconds, args.warmup, args.concurrency, Path(tmp))
            results += level
            print(f"N={n}: done", file=sys.stderr)
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
