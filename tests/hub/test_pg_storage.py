"""The PostgreSQL + S3 backend, against a real PostgreSQL and moto's S3 server.

Several :class:`PgStorage` instances over one database stand for hub replicas:
what must hold across replicas (compare-and-swap, nonces, rate limits, the
per-team cursor, the team lock, wake-ups) is checked between instances, with
threads racing where a race is the point.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest

from sealmem.crypto import SUITE, ContentKey, MemberKey
from sealmem.hub.pg_schema import MIGRATIONS, upgrade
from sealmem.hub.pg_storage import PgStorage
from sealmem.hub.s3_blobs import S3Blobs
from sealmem.hub.server import free_port
from sealmem.hub.storage import KeyringBlob, StaleSeq, StorageError, StoredHead
from sealmem.protocol.admin import genesis
from sealmem.protocol.keyring import build_keyring
from sealmem.protocol.roster import Member

TEAM = "acme-pg-team"
OTHER = "other-pg-team"


@pytest.fixture
def replicas(pg_dsn: str, s3_url: str) -> Iterator[list[PgStorage]]:
    made = [PgStorage(pg_dsn, S3Blobs(s3_url)) for _ in range(3)]
    yield made
    for store in made:
        store.close()


def _roster(team: str = TEAM) -> tuple[bytes, MemberKey, object]:
    key = MemberKey.generate()
    me = Member(key.kid, "admin", key.sign_public, key.box_public, "admin")
    roster = genesis(SUITE, team, me, created_at=1, projects=["webapp"])
    return roster.sign(key), key, roster


def _register(store: PgStorage, team: str = TEAM) -> tuple[MemberKey, object]:
    data, key, roster = _roster(team)
    store.put_roster(team, 1, data, [(key.kid, key.sign_public)], [], 1)
    return key, roster


def _race(n: int, fn: object) -> list[object]:
    """Run ``fn(i)`` for i in range(n) on n threads released at once; results or errors."""
    barrier = threading.Barrier(n)
    out: list[object] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            out[i] = fn(i)  # type: ignore[operator]
        except Exception as exc:
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_two_replicas_upgrading_at_once_make_one_schema(pg_dsn: str) -> None:
    def open_and_upgrade(_: int) -> int:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            return upgrade(conn)

    assert _race(4, open_and_upgrade) == [len(MIGRATIONS)] * 4
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(len(MIGRATIONS),)]


def test_a_database_from_a_newer_hub_is_refused(pg_dsn: str, s3_url: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        upgrade(conn)
        conn.execute("UPDATE schema_version SET version = 999")
    with pytest.raises(StorageError, match="schema version 999, newer"):
        PgStorage(pg_dsn, S3Blobs(s3_url))


def test_same_seq_through_three_replicas_is_stored_once(replicas: list[PgStorage]) -> None:
    _register(replicas[0])

    def put(i: int) -> None:
        head = StoredHead("webapp", "w" * 26, 5, f"hash-{i}", 0)
        replicas[i].put_manifest(TEAM, head, f"manifest-{i}".encode(), 3, 10)

    results = _race(3, put)
    assert sum(r is None for r in results) == 1
    assert all(isinstance(r, StaleSeq) and r.current == 5 for r in results if r is not None)
    kept = replicas[1].manifests(TEAM, "webapp")["w" * 26]
    assert len(kept) == 1
    assert [h.seq for h in replicas[2].heads(TEAM)] == [5]


def test_a_lower_seq_loses_and_old_manifests_are_trimmed(replicas: list[PgStorage]) -> None:
    a, b, _ = replicas
    _register(a)
    writer = "w" * 26
    for seq in (1, 2, 3, 4):
        (a if seq % 2 else b).put_manifest(
            TEAM, StoredHead("webapp", writer, seq, f"h{seq}", 0), b"m%d" % seq, 2, 10
        )
    with pytest.raises(StaleSeq) as lost:
        b.put_manifest(TEAM, StoredHead("webapp", writer, 3, "h", 0), b"late", 2, 10)
    assert lost.value.current == 4
    assert a.manifests(TEAM, "webapp", writer) == {writer: [b"m4", b"m3"]}
    assert a.newest_seqs(TEAM, "webapp") == {writer: 4}
    assert a.usage(TEAM) == b.usage(TEAM) > 0


def test_a_roster_version_is_stored_once(replicas: list[PgStorage]) -> None:
    data, key, _ = _roster()
    member = [(key.kid, key.sign_public)]
    results = _race(3, lambda i: replicas[i].put_roster(TEAM, 1, data, member, [], 1))
    assert sum(r is None for r in results) == 1
    assert all(isinstance(r, StaleSeq) for r in results if r is not None)
    assert replicas[0].team_count() == 1
    assert replicas[0].rosters(TEAM, 0) == [data]


def test_keyrings_are_swapped_on_roster_version(replicas: list[PgStorage]) -> None:
    a, b, _ = replicas
    key, roster = _register(a)
    content = ContentKey.generate()
    first = build_keyring(content, roster, "webapp")  # type: ignore[arg-type]
    newer = dataclasses.replace(first, roster_version=2)
    a.put_keyring(TEAM, KeyringBlob("webapp", first.epoch, first.sign(key)), 2)
    b.put_keyring(TEAM, KeyringBlob("webapp", first.epoch, newer.sign(key)), 3)
    with pytest.raises(StaleSeq):  # citing the older roster again: refused, not written
        a.put_keyring(TEAM, KeyringBlob("webapp", first.epoch, first.sign(key)), 4)
    assert [k.data for k in b.keyrings(TEAM, "webapp")] == [newer.sign(key)]


def test_the_change_cursor_is_per_team_and_gapless(replicas: list[PgStorage]) -> None:
    a, b, c = replicas
    _register(a, TEAM)
    _register(b, OTHER)
    writer = "w" * 26

    def push(i: int) -> None:
        store = replicas[i % 3]
        store.put_manifest(TEAM, StoredHead("webapp", f"{writer[:-2]}{i:02d}", 1, "h", 0),
                           b"m", 3, 10)  # fmt: skip

    assert all(r is None for r in _race(9, push))
    cursors = [ch.cursor for ch in c.changes(TEAM, 0)]
    assert cursors == list(range(1, 11))  # roster v1, then nine manifests
    assert c.cursor(TEAM) == 10
    assert [ch.cursor for ch in c.changes(OTHER, 0)] == [1]  # nothing of the other team leaks


def test_a_nonce_seen_by_one_replica_is_refused_by_another(replicas: list[PgStorage]) -> None:
    a, b, c = replicas
    assert a.remember_nonce("k" * 26, "nonce-1", 1_000, 601_000)
    assert not b.remember_nonce("k" * 26, "nonce-1", 2_000, 602_000)
    assert c.remember_nonce("j" * 26, "nonce-1", 2_000, 602_000)  # another member's nonce
    results = _race(3, lambda i: replicas[i].remember_nonce("k" * 26, "nonce-2", 3_000, 603_000))
    assert sorted(results) == [False, False, True]  # type: ignore[type-var]


def test_nonces_survive_a_restart(pg_dsn: str, s3_url: str) -> None:
    first = PgStorage(pg_dsn, S3Blobs(s3_url))
    assert first.remember_nonce("k" * 26, "n", 1_000, 601_000)
    first.close()
    again = PgStorage(pg_dsn, S3Blobs(s3_url))
    try:
        assert not again.remember_nonce("k" * 26, "n", 5_000, 605_000)
        assert again.remember_nonce("k" * 26, "n", 700_000, 1_300_000)  # expired: reusable
    finally:
        again.close()


def test_rate_limit_buckets_are_shared(replicas: list[PgStorage]) -> None:
    spent = _race(3, lambda i: [replicas[i].take_token("m:k", 1.0, 5, 100.0) for _ in range(3)])
    waits = [w for batch in spent for w in batch]  # type: ignore[attr-defined]
    assert sorted(waits)[:5] == [0.0] * 5
    assert all(w > 0 for w in sorted(waits)[5:])
    assert len(waits) == 9
    assert replicas[0].take_token("m:k", 1.0, 5, 101.0) == 0.0  # one token refilled a second on


def test_team_lock_excludes_other_replicas(replicas: list[PgStorage]) -> None:
    inside = 0
    peak = 0
    guard = threading.Lock()

    def hold(i: int) -> None:
        nonlocal inside, peak
        with replicas[i].team_lock(TEAM):
            with guard:
                inside += 1
                peak = max(peak, inside)
            time.sleep(0.05)
            with guard:
                inside -= 1

    assert _race(3, hold) == [None] * 3
    assert peak == 1
    with replicas[0].team_lock(TEAM), replicas[1].team_lock(OTHER):  # other teams: independent
        pass


def test_a_change_on_one_replica_wakes_the_others(replicas: list[PgStorage]) -> None:
    a, b, _c = replicas
    woken: list[str | None] = []
    ready = threading.Event()

    def heard(team: str | None) -> None:
        woken.append(team)
        ready.set()

    b.listen(heard)
    time.sleep(0.5)  # the listener is connected
    _register(a)
    assert ready.wait(10)
    assert woken == [TEAM]


def test_chunks_blob_first_and_collection(replicas: list[PgStorage]) -> None:
    a, b, _ = replicas
    _register(a)
    args = (TEAM, "webapp", "w" * 26)
    assert a.put_chunk(*args, "c1", b"x" * 100, 1_000)
    assert not b.put_chunk(*args, "c1", b"x" * 100, 5_000)  # already there: refreshed
    assert b.chunk(*args, "c1") == b"x" * 100
    assert a.collect(*args, set(), 4_000) == 0  # refreshed at 5000: not older than 4000
    assert a.put_chunk(*args, "c2", b"y" * 50, 1_000)
    assert a.missing_chunks(*args, ["c1", "c2", "c3"]) == ["c3"]
    assert b.collect(*args, {"c1"}, 6_000) == 1
    assert a.chunk(*args, "c2") is None
    assert a.usage(TEAM) == len(a.rosters(TEAM, 0)[0]) + 100


def test_orphans_are_collected_only_past_the_minimum_age(
    replicas: list[PgStorage], s3_url: str
) -> None:
    a, _, _ = replicas
    _register(a)
    blobs = S3Blobs(s3_url)
    blobs.put(TEAM, "webapp", "w" * 26, "orphan", b"o")  # a replica died before its row
    assert a.put_chunk(TEAM, "webapp", "w" * 26, "named", b"n", 1)
    assert a.collect_orphans(600.0) == 0  # too young: maybe another replica's commit pending
    assert a.collect_orphans(0.0) == 1
    assert blobs.get(TEAM, "webapp", "w" * 26, "orphan") is None
    assert a.chunk(TEAM, "webapp", "w" * 26, "named") == b"n"


def test_join_requests_across_replicas(replicas: list[PgStorage]) -> None:
    a, b, _ = replicas
    _register(a)
    results = _race(
        3,
        lambda i: replicas[i].offer_request(
            TEAM,
            f"{'k' * 24}{i:02d}",
            b"req",
            "1.2.3.4",
            10,
            live_after_ms=0,
            max_pending=2,
            max_per_address=5,
        ),
    )
    assert sorted(r.stored for r in results) == [False, True, True]  # type: ignore[attr-defined]
    assert len(b.requests(TEAM)) == 2
    kid = b.requests(TEAM)[0].kid
    assert a.remove_request(TEAM, kid)
    assert not b.remove_request(TEAM, kid)


def test_database_errors_name_no_password(s3_url: str) -> None:
    dsn = f"postgresql://someone:hunter2-secret@127.0.0.1:{free_port()}/hub"
    with pytest.raises(StorageError, match="cannot use the hub database") as failed:
        PgStorage(dsn, S3Blobs(s3_url))
    assert "hunter2" not in str(failed.value)
    assert "someone@127.0.0.1" in str(failed.value)
