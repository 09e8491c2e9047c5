"""Hub load benchmark: N members doing signed pull/push cycles against one real hub.

Run from the repository root (not collected by pytest)::

    python tests/bench/bench_hub.py                    # N = 10, 50, 200; 10 s each
    python tests/bench/bench_hub.py --members 20 --seconds 5
    python tests/bench/bench_hub.py --backend pg-s3 --replicas 2 --seconds 5
    python tests/bench/bench_hub.py --http h11 httptools   # the two HTTP stacks, side by side
    python tests/bench/bench_hub.py --members 200 --paths fast plain --burn 2 --rounds 3

``--backend sqlite`` (default) is the embedded hub: SQLite + a blob directory.
``--backend pg-s3`` starts a real PostgreSQL (Debian's binaries, as in the
tests: ``tests/support/postgres.py``) and moto's S3 server, and runs
``--replicas`` hub processes over one database and one bucket; members are
spread over the replicas (member i talks to replica i mod R).  ``--http``
names the HTTP stacks to measure (each is a separate hub run in the same
invocation): ``httptools`` (llhttp + uvloop, the default) and ``h11`` (the pure
Python stack before).  ``--paths`` names the hub's paths to measure, each a hub
run of its own: ``fast`` (the default: the direct routes, reads on the event loop
while it keeps up, else the hub's own threads, and group commit) and ``plain``
(``sealmem hub serve --plain``: Starlette's router and thread pool); with ``--rounds`` the paths
alternate at each N, and a last table sets each path's p99 beside the fast one's.
``--burn N`` starts N busy-loop processes for the whole run (the CPU contention
of a shared machine, on purpose).  Beside the Python client's figures, ``wrk`` (a compiled
load generator, ``apt-get install wrk``) measures the ``/healthz`` ceiling of
one hub process; without it that column is skipped.

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
is VmRSS / VmHWM from ``/proc/<pid>/status`` (the largest replica).  Hub CPU
is summed over the replica processes from ``/proc/<pid>/stat``; "hub ms/req" is
that CPU time divided by the requests served; "backing CPU" is PostgreSQL's
processes plus moto's.  Errors are HTTP statuses >= 400 (a 429 that the
transport retried counts too) and failed cycles.  Client and hub share the
machine's cores, so the figures are for the pair; each row carries the 1-minute
load average at its end.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sealmem.client.sync.hub import HubTransport
from sealmem.crypto import SUITE, ContentKey, MemberKey, random_bytes
from sealmem.hub.http.server import free_port
from sealmem.protocol.errors import SealmemError
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.keyring import build_keyring
from sealmem.protocol.manifest import peek
from sealmem.protocol.record import Record, new_memory_id
from sealmem.protocol.roster import Grant, Member, Roster
from sealmem.protocol.snapshot import PreviousSnapshot, build_snapshot

PROJECT = "bench"
RECORDS = 8
PULLS_PER_CYCLE = 2
#: The hub's per-member request limit (50/s, bursts of 400) is a guard against a
#: runaway client, not a cost: a member cycling as fast as this bench drives it passes
#: it (10 members at ~110 requests/s each), and its 429s with ``Retry-After: 1`` then
#: idle the load for seconds.  This hub is run with the limit out of the way (each
#: request still takes its token); the baseline hub of ``--baseline`` has no such
#: option and stays below its same limit at its own speed (its rows show no 429).
UNLIMITED = ["--member-rate", "1000000", "--member-burst", "1000000"]

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
    #: the same latencies by request kind ("GET seqs", "PUT manifest", ...)
    kinds: dict[str, list[float]] = field(default_factory=dict)
    errors: int = 0
    why: Counter[str] = field(default_factory=Counter)
    cycles: int = 0
    hub_cpu: float = 0.0  # CPU seconds per second over the measured window
    client_cpu: float = 0.0
    backing_cpu: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _measuring(self) -> bool:
        return self.started <= time.monotonic() <= self.until

    def add(self, seconds: float, status: int, kind: str = "") -> None:
        if not self._measuring():
            return
        with self.lock:
            self.latencies.append(seconds)
            self.kinds.setdefault(kind, []).append(seconds)
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


#: a path's kind: the last word of its template that is not an id or a number
_KINDS = ("seqs", "manifests", "chunks", "rosters", "keyrings", "requests", "healthz")


def _kind(request: httpx.Request) -> str:
    parts = request.url.path.split("/")
    word = next((p for p in reversed(parts) if p in _KINDS), parts[-1])
    if word == "manifests" and request.method == "PUT":
        word = "manifest"
    elif word == "chunks":
        word = "chunk"
    return f"{request.method} {word}"


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
        self.recorder.add(time.perf_counter() - t0, response.status_code, _kind(request))
        return response

    def close(self) -> None:
        self._inner.close()


# -- the hub --------------------------------------------------------------------------


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU time process ``pid`` has used so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds of ``root`` and its live children (PostgreSQL's backends)."""
    total = proc_cpu_seconds(root)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == root:
            total += proc_cpu_seconds(int(stat.parent.name))
    return total


class Hub:
    """``sealmem hub serve`` in a subprocess on a free port, over ``storage`` (the
    command-line options that name it: ``--data DIR`` or ``--db URL --blobs URL``)."""

    def __init__(
        self,
        storage: Sequence[str],
        logs: Path,
        http: str,
        code: Path | None = None,
        plain: bool = False,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "SEALMEM_HUB_OPERATOR_TOKEN": TOKEN}
        command = [str(SEALMEM)]
        if code is not None:  # another revision's code, importable as sealmem (see baseline)
            env["PYTHONPATH"] = os.pathsep.join([str(code / "ns"), str(code / "src")])
            command = [sys.executable, "-c", "from sealmem.client.launch import main; main()"]
        argv = [*command, "hub", "serve", *storage, "--port", str(self.port), "--http", http]
        if code is None:  # this hub: its member rate limit out of the way (see UNLIMITED)
            argv += UNLIMITED
        if plain:
            argv.append("--plain")
        self.log = (logs / f"hub-{self.port}.log").open("wb")
        self.proc = subprocess.Popen(argv, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"the hub exited with {self.proc.returncode}; see {self.log.name}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise SystemExit("the hub did not answer /healthz within 60 s")

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
        return proc_cpu_seconds(self.proc.pid)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class Cluster:
    """The hub replicas of one run, and the backing servers' CPU (PostgreSQL, S3)."""

    def __init__(self, hubs: Sequence[Hub], backing: Callable[[], float]) -> None:
        self.hubs = list(hubs)
        self.urls = [h.url for h in self.hubs]
        self.backing = backing

    def cpu_seconds(self) -> float:
        return sum(h.cpu_seconds() for h in self.hubs)

    def memory_mb(self) -> tuple[float, float]:
        sizes = [h.memory_mb() for h in self.hubs]
        return max(r for r, _ in sizes), max(p for _, p in sizes)

    def stop(self) -> None:
        for h in self.hubs:
            h.stop()


class Backing:
    """Where the hubs keep their data: a directory per run (sqlite), or a database and a
    bucket per run on one PostgreSQL and one moto S3 server (pg-s3)."""

    def __init__(self, kind: str, workdir: Path) -> None:
        self.kind = kind
        self.workdir = workdir
        self.pg: Any = None
        self.s3: Any = None
        if kind == "pg-s3":
            from tests.support.postgres import find_bin_dir, start_postgres
            from tests.support.s3 import CREDENTIALS, start_s3

            bin_dir = find_bin_dir()
            if bin_dir is None:
                raise SystemExit("PostgreSQL is not installed: apt-get install -y postgresql")
            os.environ.update(CREDENTIALS)
            self.pg = start_postgres(bin_dir)
            self.s3 = start_s3()

    def storage(self, name: str) -> list[str]:
        if self.kind == "sqlite":
            return ["--data", str(self.workdir / name)]
        return ["--db", self.pg.new_database(), "--blobs", self.s3.url(self.s3.new_bucket(), name)]

    def cpu_seconds(self) -> float:
        if self.kind == "sqlite":
            return 0.0
        return tree_cpu_seconds(self.pg._proc.pid) + proc_cpu_seconds(self.s3.proc.pid)

    def start(
        self, name: str, replicas: int, http: str, code: Path | None = None, plain: bool = False
    ) -> Cluster:
        storage = self.storage(name)
        hubs: list[Hub] = []
        try:
            for _ in range(replicas):
                hubs.append(Hub(storage, self.workdir, http, code, plain))
        except BaseException:
            for h in hubs:
                h.stop()
            raise
        return Cluster(hubs, self.cpu_seconds)

    def close(self) -> None:
        if self.s3 is not None:
            self.s3.stop()
        if self.pg is not None:
            self.pg.stop()


def baseline(rev: str, workdir: Path) -> Path:
    """The hub code of git revision ``rev``, importable as ``sealmem`` (run with
    ``PYTHONPATH=DIR/ns:DIR/src``, as ``Hub`` does): "today's" hub, measured in the
    same run as this one."""
    root = Path(__file__).resolve().parents[2]
    out = workdir / f"baseline-{rev}"
    src, ns = out / "src", out / "ns" / "sealmem"
    src.mkdir(parents=True)
    ns.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", rev], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    for part in ("client", "hub", "crypto", "protocol"):
        (ns / part).symlink_to(src / part)
    return out


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
    ready: deque[tuple[int, bytes, dict[str, bytes]]] = field(default_factory=deque)

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

    def prebuild(self, count: int) -> None:
        """Build the next ``count`` snapshots now (outside a timed window), so that a
        push in it costs the client only its requests."""
        self.ready.extend(self.next_snapshot() for _ in range(count))

    def push(self, hub: HubTransport) -> None:
        seq, manifest, chunks = self.ready.popleft() if self.ready else self.next_snapshot()
        hub.push(PROJECT, self.key.kid, seq, manifest, chunks)

    def cycle(self, hub: HubTransport) -> None:
        seqs = hub.newest_seqs(PROJECT) or {}
        moved = [w for w, s in seqs.items() if w != self.key.kid and s > self.seen.get(w, 0)]
        for writer in moved[:PULLS_PER_CYCLE]:
            envelopes = hub.writer_manifests(PROJECT, writer)
            if envelopes:
                manifest = peek(envelopes[0])
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
    backend: str = "sqlite"
    replicas: int = 1
    http: str = "httptools"
    backing_cpu: float = 0.0
    load: float = 0.0
    #: (kind, requests, p50 ms, p99 ms) by request kind
    kinds: list[tuple[str, int, float, float]] = field(default_factory=list)


def _summary(label: str, n: int, rec: Recorder, seconds: float, hub: Cluster) -> Result:
    lat = sorted(rec.latencies)
    q = statistics.quantiles(lat, n=100, method="inclusive") if len(lat) >= 2 else [0.0] * 99
    rss, hwm = hub.memory_mb()
    p50, p99 = q[49] * 1e3, q[98] * 1e3
    return Result(
        label, n, len(lat), seconds, p50, p99, rec.errors, rss, hwm, rec.cycles,
        rec.hub_cpu, rec.client_cpu, rec.why, backing_cpu=rec.backing_cpu,
        load=os.getloadavg()[0], kinds=_by_kind(rec),
    )  # fmt: skip


def _by_kind(rec: Recorder) -> list[tuple[str, int, float, float]]:
    out = []
    for kind, values in sorted(rec.kinds.items()):
        if len(values) >= 2:
            q = statistics.quantiles(sorted(values), n=100, method="inclusive")
            out.append((kind, len(values), q[49] * 1e3, q[98] * 1e3))
    return out


Body = Callable[[int, Recorder, threading.Event], None]


def _client_cpu() -> float:
    times = os.times()
    return times.user + times.system


def _run_threads(n: int, seconds: float, warmup: float, body: Body, hub: Cluster) -> Recorder:
    rec = Recorder()
    stop = threading.Event()
    threads = [threading.Thread(target=body, args=(i, rec, stop), daemon=True) for i in range(n)]
    t0 = time.monotonic()
    rec.started, rec.until = t0 + warmup, t0 + warmup + seconds
    for t in threads:
        t.start()
    time.sleep(warmup)
    hub_cpu, client_cpu, backing_cpu = hub.cpu_seconds(), _client_cpu(), hub.backing()
    time.sleep(seconds)
    rec.hub_cpu = (hub.cpu_seconds() - hub_cpu) / seconds
    rec.client_cpu = (_client_cpu() - client_cpu) / seconds
    rec.backing_cpu = (hub.backing() - backing_cpu) / seconds
    stop.set()
    for t in threads:
        t.join(timeout=60)
    return rec


# -- the compiled load generator ----------------------------------------------------------

WRK = shutil.which("wrk")
_WRK_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


def _wrk_ms(text: str, label: str) -> float:
    found = re.search(rf"^\s*{label}\s+([0-9.]+)(us|ms|s|m)\b", text, re.MULTILINE)
    return float(found.group(1)) * _WRK_UNITS[found.group(2)] if found else math.nan


def run_wrk(n: int, hub: Hub, seconds: float, connections: int) -> Result | None:
    """``wrk`` against ``/healthz`` of one hub process: the ceiling without a Python client."""
    if WRK is None:
        return None
    argv = [WRK, "-t2", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency",
            hub.url + "/healthz"]  # fmt: skip
    cpu0, t0 = hub.cpu_seconds(), time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - t0
    cpu = (hub.cpu_seconds() - cpu0) / elapsed
    text = done.stdout
    total = re.search(r"(\d+) requests in ([0-9.]+)(s|m)", text)
    if done.returncode != 0 or total is None:
        print(f"wrk failed ({done.returncode}): {done.stderr.strip()}", file=sys.stderr)
        return None
    requests = int(total.group(1))
    wall = float(total.group(2)) * (60 if total.group(3) == "m" else 1)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    socket_errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text
    )
    n_errors = int(errors.group(1)) if errors else 0
    if socket_errors:
        n_errors += sum(int(x) for x in socket_errors.groups())
    rss, hwm = hub.memory_mb()
    return Result(
        "healthz wrk", n, requests, wall, _wrk_ms(text, "50%"), _wrk_ms(text, "99%"), n_errors,
        rss, hwm, 0, cpu, math.nan, Counter(), load=os.getloadavg()[0],
    )  # fmt: skip


def _members(
    n: int, hub: Cluster
) -> tuple[list[Writer], list[TimedTransport], list[httpx.Client], list[HubTransport]]:
    """A team of ``n`` members on ``hub``, each with its own timed connection and key,
    each having pushed its first snapshot (outside any timed window)."""
    admin = MemberKey.generate()
    keys = [MemberKey.generate() for _ in range(n)]
    team, version, content_key = register_team(hub.urls[0], admin, keys)
    writers = [Writer(k, content_key, team, version) for k in keys]
    timers = [TimedTransport() for _ in writers]
    # member i talks to replica i mod R
    urls = [hub.urls[i % len(hub.urls)] for i in range(n)]
    clients = [
        httpx.Client(base_url=u, transport=t, timeout=60) for u, t in zip(urls, timers, strict=True)
    ]
    hubs = [
        HubTransport(u, team, w.key, client=c)
        for u, w, c in zip(urls, writers, clients, strict=True)
    ]
    for w, h in zip(writers, hubs, strict=True):
        w.push(h)
    return writers, timers, clients, hubs


def run_level(
    n: int,
    args: argparse.Namespace,
    http: str,
    backing: Backing,
    use_wrk: bool,
    code: Path | None = None,
    path: str = "fast",
) -> list[Result]:
    label = f"{http} @{args.baseline}" if code is not None else _label(http, path)
    name = f"hub-{n}-{http}-{path}-{code is not None}-{time.monotonic_ns()}"
    hub = backing.start(name, args.replicas, http, code, plain=path == "plain")
    try:
        writers, timers, clients, hubs = _members(n, hub)
        workers = min(n, args.concurrency)

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
            loads = [("sync", member_loop), ("healthz", health)][: 1 if args.sync_only else 2]
            results = [
                _summary(
                    label, n, _run_threads(workers, args.seconds, args.warmup, body, hub),
                    args.seconds, hub,
                )
                for label, body in loads
            ]  # fmt: skip
            if use_wrk:
                ceiling = run_wrk(n, hub.hubs[0], args.seconds, args.concurrency)
                if ceiling is not None:
                    results.append(ceiling)
        finally:
            for c in clients:
                c.close()
        for r in results:
            r.backend, r.replicas, r.http = args.backend, len(hub.hubs), label
        return results
    finally:
        hub.stop()


@dataclass
class OpenResult:
    """One open-loop run: cycles arriving at random (Poisson) at a set rate."""

    http: str
    members: int
    multiplier: float
    rate: float  # cycles/s asked
    cycles: int
    seconds: float
    requests: int
    p50_ms: float
    p99_ms: float
    errors: int
    hub_cpu: float
    client_cpu: float
    late_p99_ms: float  # how late cycles started against their arrival time (client side)
    load: float
    kinds: list[tuple[str, int, float, float]]


def _label(http: str, path: str) -> str:
    """A row's hub: its HTTP stack, and its path where it is not the fast one."""
    return http if path == "fast" else f"{http} {path}"


def run_open_level(
    n: int, args: argparse.Namespace, http: str, backing: Backing, code: Path | None = None
) -> list[OpenResult]:
    """Open loop: member cycles arrive as a Poisson process, ``n / cadence`` cycles/s
    (one per member every ``--cadence`` seconds on average) times each multiplier; a
    cycle starts at its arrival whatever the others are doing (up to 128 at once), so
    latencies are those of a hub at that load, not of a queue of 32 clients."""
    label = http if code is None else f"{http} @{args.baseline}"
    hub = backing.start(f"open-{n}-{http}-{code is not None}", args.replicas, http, code)
    out: list[OpenResult] = []
    try:
        writers, timers, clients, hubs = _members(n, hub)
        locks = [threading.Lock() for _ in writers]
        pool = ThreadPoolExecutor(max_workers=128, thread_name_prefix="member")
        try:
            for mult in args.multipliers:
                rate = n / args.cadence * mult
                expected = rate * (args.seconds + args.warmup) / n
                for w in writers:  # snapshots built before the clock starts (in seq order:
                    # one left over from the run before is the next one to push)
                    w.prebuild(max(0, math.ceil(expected * 1.5) + 2 - len(w.ready)))
                out.append(_open_run(n, mult, rate, args, label, hub, writers, timers, hubs,
                                     locks, pool))  # fmt: skip
                print(f"N={n} {label} open x{mult:g}: done", file=sys.stderr)
        finally:
            pool.shutdown(wait=True)
            for c in clients:
                c.close()
        return out
    finally:
        hub.stop()


def _open_run(
    n: int, mult: float, rate: float, args: argparse.Namespace, label: str, hub: Cluster,
    writers: list[Writer], timers: list[TimedTransport], hubs: list[HubTransport],
    locks: list[threading.Lock], pool: ThreadPoolExecutor,
) -> OpenResult:  # fmt: skip
    rec = Recorder()
    for t in timers:
        t.recorder = rec
    late: list[float] = []
    rng = random.Random(n * 1000 + int(mult * 10))

    def cycle(i: int, due: float) -> None:
        with locks[i]:  # a member runs one cycle at a time
            start = time.monotonic()
            if rec.started <= due <= rec.until:
                with rec.lock:
                    late.append(start - due)
            try:
                writers[i].cycle(hubs[i])
                rec.cycle()
            except SealmemError as exc:
                rec.error(exc)

    t0 = time.monotonic()
    rec.started, rec.until = t0 + args.warmup, t0 + args.warmup + args.seconds
    due = t0
    measured = False
    hub_cpu = client_cpu = 0.0
    while due < rec.until:
        due += rng.expovariate(rate)
        if not measured and due >= rec.started:
            measured = True
            hub_cpu, client_cpu = hub.cpu_seconds(), _client_cpu()
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        pool.submit(cycle, rng.randrange(n), due)
    rec.hub_cpu = (hub.cpu_seconds() - hub_cpu) / args.seconds
    rec.client_cpu = (_client_cpu() - client_cpu) / args.seconds
    load = os.getloadavg()[0]
    while pool._work_queue.qsize():  # let the cycles still queued finish, unmeasured
        time.sleep(0.05)
    time.sleep(0.5)
    lat = sorted(rec.latencies)
    q = statistics.quantiles(lat, n=100, method="inclusive") if len(lat) >= 2 else [0.0] * 99
    lq = (
        statistics.quantiles(sorted(late), n=100, method="inclusive")
        if len(late) >= 2
        else [0.0] * 99
    )
    return OpenResult(
        label, n, mult, rate, rec.cycles, args.seconds, len(lat), q[49] * 1e3, q[98] * 1e3,
        rec.errors, rec.hub_cpu, rec.client_cpu, lq[98] * 1e3, load, _by_kind(rec),
    )  # fmt: skip


def print_open(results: Sequence[OpenResult], cadence: float) -> None:
    print(
        f"\nOpen loop: each member syncs once every {cadence:g} s on average (Poisson "
        "arrivals), times the multiplier; latency of each request from send to body read"
    )
    print(
        "| http | members | rate | cycles/s asked | cycles/s | req/s | p50 ms | p99 ms | errors "
        "| start late p99 ms | hub CPU | hub ms/req | client CPU | client ms/req | loadavg |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        per = r.requests / r.seconds if r.seconds else 0.0
        hub_ms = r.hub_cpu * r.seconds / r.requests * 1e3 if r.requests else math.nan
        client_ms = r.client_cpu * r.seconds / r.requests * 1e3 if r.requests else math.nan
        print(
            f"| {r.http} | {r.members} | x{r.multiplier:g} | {r.rate:.1f} | "
            f"{r.cycles / r.seconds:.1f} | {per:,.0f} | {r.p50_ms:.1f} | {r.p99_ms:.1f} | "
            f"{r.errors} | {r.late_p99_ms:.1f} | {r.hub_cpu:.0%} | {hub_ms:.2f} | "
            f"{r.client_cpu:.0%} | {client_ms:.2f} | {r.load:.1f} |"
        )
    print("\nOpen loop by request kind (p50 / p99 ms, requests):")
    for r in results:
        parts = [f"{k} {p50:.1f}/{p99:.1f} ({n})" for k, n, p50, p99 in r.kinds]
        print(f"  N={r.members:<4} x{r.multiplier:<3g} {r.http:<14} " + "; ".join(parts))


def print_table(results: Sequence[Result]) -> None:
    columns = [
        ("backend", "<"), ("replicas", ">"), ("http", "<"), ("members", ">"), ("load", "<"),
        ("req/s", ">"), ("p50 ms", ">"), ("p99 ms", ">"), ("errors", ">"), ("cycles/s", ">"),
        ("hub CPU", ">"), ("hub ms/req", ">"), ("backing CPU", ">"), ("client CPU", ">"),
        ("hub RSS MB", ">"), ("hub peak MB", ">"), ("loadavg", ">"),
    ]  # fmt: skip
    rows = [
        [
            r.backend, f"{r.replicas}", r.http, f"{r.members}", r.label,
            f"{r.requests / r.seconds:,.0f}", f"{r.p50_ms:.1f}", f"{r.p99_ms:.1f}",
            f"{r.errors}", f"{r.cycles / r.seconds:.1f}" if r.label == "sync" else "-",
            f"{r.hub_cpu:.0%}",
            f"{r.hub_cpu * r.seconds / r.requests * 1e3:.2f}" if r.requests else "-",
            f"{r.backing_cpu:.0%}" if r.backend != "sqlite" and r.label != "healthz wrk" else "-",
            "-" if math.isnan(r.client_cpu) else f"{r.client_cpu:.0%}",
            f"{r.rss_mb:.1f}", f"{r.hwm_mb:.1f}", f"{r.load:.1f}",
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
            print(f"{r.backend} x{r.replicas} {r.http} N={r.members} {r.label} errors: {what}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, nargs="+", default=[10, 50, 200])
    parser.add_argument("--seconds", type=float, default=10.0, help="measured time per load")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured start per load")
    parser.add_argument(
        "--concurrency", type=int, default=CONCURRENCY, help="client threads (requests in flight)"
    )
    parser.add_argument("--backend", choices=["sqlite", "pg-s3"], default="sqlite")
    parser.add_argument(
        "--replicas", type=int, default=1, help="hub processes (more than one: pg-s3 only)"
    )
    parser.add_argument(
        "--http", nargs="+", choices=["httptools", "h11"], default=["httptools"],
        help="HTTP stacks to measure, each in its own hub run (default: httptools)",
    )  # fmt: skip
    parser.add_argument(
        "--paths", nargs="+", choices=["fast", "plain"], default=["fast"],
        help="the hub's paths to measure, each in its own hub run (default: fast)",
    )  # fmt: skip
    parser.add_argument(
        "--burn", type=int, default=0, metavar="N",
        help="load the CPU: N busy-loop processes run for the whole run",
    )  # fmt: skip
    parser.add_argument("--no-wrk", action="store_true", help="skip the wrk /healthz ceiling")
    parser.add_argument(
        "--by-kind", action="store_true", help="also print p50/p99 by request kind (sync rows)"
    )
    parser.add_argument(
        "--sync-only", action="store_true", help="only the sync load (no /healthz, no wrk)"
    )
    parser.add_argument(
        "--baseline", metavar="REV", default=None,
        help="also run the hub of git revision REV on h11 at each N (\"today's\" hub, in "
        "the same run), and print this hub's speed-up per core over it",
    )  # fmt: skip
    parser.add_argument(
        "--baseline-http", choices=["httptools", "h11"], default="h11",
        help="the HTTP stack of the --baseline hub (default: h11, the stack of 1eac825)",
    )  # fmt: skip
    parser.add_argument(
        "--rounds", type=int, default=1,
        help="at each N, run the baseline and this hub alternately this many times; the "
        "speed-up compares their medians (a shared machine's load drifts between rows)",
    )  # fmt: skip
    parser.add_argument(
        "--open-loop", action="store_true",
        help="instead of the closed loop: member cycles arriving at random (Poisson) at a "
        "realistic rate, one per member every --cadence seconds, times each --multipliers",
    )  # fmt: skip
    parser.add_argument(
        "--cadence", type=float, default=10.0,
        help="open loop: mean seconds between two cycles of one member (the client syncs "
        "on change and every 60 s idle; 10 s is a busy team)",
    )  # fmt: skip
    parser.add_argument(
        "--multipliers", type=float, nargs="+", default=[1.0, 5.0, 10.0],
        help="open loop: the rates to run, as multiples of members / cadence",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.replicas < 1 or (args.replicas > 1 and args.backend != "pg-s3"):
        parser.error("--replicas above 1 needs --backend pg-s3 (SQLite is one process's file)")
    use_wrk = not (args.no_wrk or args.sync_only)
    if use_wrk and WRK is None:
        print("wrk is not installed (apt-get install wrk): the wrk /healthz ceiling is skipped")
        use_wrk = False
    print(
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {args.seconds:.0f} s per load, "
        f"at most {args.concurrency} requests in flight, backend {args.backend} x"
        f"{args.replicas}, load average at start {os.getloadavg()[0]:.1f}"
    )
    with burning(args.burn):
        return open_main(args) if args.open_loop else closed_main(args, use_wrk)


def closed_main(args: argparse.Namespace, use_wrk: bool) -> int:
    """The closed-loop runs: at each N and round, the baseline hub (if any), then each
    stack on each path."""
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="sealmem-bench-hub-") as tmp:
        backing = Backing(args.backend, Path(tmp))
        code = baseline(args.baseline, Path(tmp)) if args.baseline else None
        try:
            for n in args.members:
                for _ in range(args.rounds):
                    if code is not None:
                        results += run_level(n, args, args.baseline_http, backing, use_wrk, code)
                        print(f"N={n} {args.baseline_http} @{args.baseline}: done", file=sys.stderr)
                    for http in args.http:
                        for path in args.paths:
                            results += run_level(n, args, http, backing, use_wrk, None, path)
                            print(f"N={n} {_label(http, path)}: done", file=sys.stderr)
        finally:
            backing.close()
    print_table(results)
    if args.by_kind:
        print_kinds(results)
    if code is not None:
        print_speedup(results, args.baseline, args.baseline_http)
    if len(args.paths) > 1:
        print_paths(results, args.http, args.burn)
    return 0


@contextlib.contextmanager
def burning(processes: int) -> Iterator[None]:
    """``processes`` busy loops in child processes while the block runs."""
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)
    ]
    if burners:
        print(f"{len(burners)} busy-loop process(es) load the CPU for the whole run")
    try:
        yield
    finally:
        for b in burners:
            b.kill()
            b.wait()


def print_paths(results: Sequence[Result], stacks: Sequence[str], burn: int) -> None:
    """The sync rows' p99 on each path beside the fast path's, at each N and stack (the
    median of the rounds), with the load averages of those rows."""
    print(f"\nSync p99 by path ({burn} busy-loop process(es) beside the hub):")
    for n in sorted({r.members for r in results}):
        for http in stacks:
            cells = []
            for path in ("fast", "plain"):
                rows = [
                    r for r in results
                    if r.members == n and r.label == "sync" and r.http == _label(http, path)
                ]  # fmt: skip
                if rows:
                    p99 = statistics.median(r.p99_ms for r in rows)
                    each = "/".join(f"{r.p99_ms:.0f}" for r in rows)
                    loads = "/".join(f"{r.load:.1f}" for r in rows)
                    cells.append(f"{path} {p99:.0f} ms ({each}; loadavg {loads})")
            print(f"  N={n:<4} {http:<10} " + "; ".join(cells))


def open_main(args: argparse.Namespace) -> int:
    """The open-loop runs: at each N, the baseline hub (if any) then each stack."""
    results: list[OpenResult] = []
    with tempfile.TemporaryDirectory(prefix="sealmem-bench-hub-") as tmp:
        backing = Backing(args.backend, Path(tmp))
        code = baseline(args.baseline, Path(tmp)) if args.baseline else None
        try:
            for n in args.members:
                if code is not None:
                    results += run_open_level(n, args, args.baseline_http, backing, code)
                for http in args.http:
                    results += run_open_level(n, args, http, backing)
        finally:
            backing.close()
    print_open(results, args.cadence)
    return 0


def print_kinds(results: Sequence[Result]) -> None:
    """The sync rows' latencies by request kind: which requests make the tail."""
    print("\nSync requests by kind (p50 / p99 ms, requests):")
    for r in results:
        if r.label != "sync":
            continue
        parts = [f"{k} {p50:.0f}/{p99:.0f} ({n})" for k, n, p50, p99 in r.kinds]
        print(f"  N={r.members:<4} {r.http:<14} " + "; ".join(parts))


def _ms_per_request(r: Result) -> float:
    return r.hub_cpu * r.seconds / r.requests * 1e3 if r.requests else math.nan


def print_speedup(results: Sequence[Result], rev: str, base_http: str = "h11") -> None:
    """Signed sync requests per core against the baseline hub of the same run (the
    median of each stack's rows at one N, when there were several rounds)."""
    print(f"\nSigned sync requests, hub CPU per request against the hub of {rev} on "
          f"{base_http} (target: at most half, i.e. >= 2x per core):")  # fmt: skip
    for n in sorted({r.members for r in results}):
        rows = [r for r in results if r.members == n and r.label == "sync"]
        stacks: dict[str, list[Result]] = {}
        for r in rows:
            stacks.setdefault(r.http, []).append(r)
        base = stacks.pop(f"{base_http} @{rev}", None)
        if not base:
            continue
        base_ms = statistics.median(_ms_per_request(r) for r in base)
        base_p99 = statistics.median(r.p99_ms for r in base)
        for http, mine in stacks.items():
            ms = statistics.median(_ms_per_request(r) for r in mine)
            p50 = statistics.median(r.p50_ms for r in mine)
            p99 = statistics.median(r.p99_ms for r in mine)
            load = statistics.median(r.load for r in mine)
            rounds = f" (median of {len(mine)})" if len(mine) > 1 else ""
            print(
                f"  N={n:<4} {http:<10} {ms:.2f} ms/req against {base_ms:.2f}{rounds}: "
                f"{base_ms / ms:.2f}x per core; p50 {p50:.0f} ms, p99 {p99:.0f} ms "
                f"(baseline {base_p99:.0f} ms), load average {load:.1f}"
            )


if __name__ == "__main__":
    sys.exit(main())
