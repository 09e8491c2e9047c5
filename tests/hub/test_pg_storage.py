"""The PostgreSQL + S3 backend, against a real PostgreSQL and moto's S3 server.

Several :class:`PgStorage` instances over one database stand for hub replicas:
what must hold across replicas (compare-and-swap, nonces, rate limits, the
per-team cursor, the team lock, wake-ups) is checked between instances, with
threads racing where a race is the point.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest

from sealmem.crypto import SUITE, ContentKey, MemberKey
from sealmem.hub.http.server import free_port
from sealmem.hub.storage import (
    Conflict,
    KeyringBlob,
    MissingChunks,
    Quota,
    QuotaExceeded,
    StaleSeq,
    StorageError,
    StoredHead,
)
from sealmem.hub.storage.backends import open_storage, shown_url
from sealmem.hub.storage.blobs import BlobKey
from sealmem.hub.storage.feed import PgFeed
from sealmem.hub.storage.postgres import BUCKET_IDLE_MS, PgStorage
from sealmem.hub.storage.s3 import S3Blobs
from sealmem.hub.storage.schema import PG_MIGRATIONS, upgrade_pg
from sealmem.protocol.admin import genesis
from sealmem.protocol.keyring import build_keyring
from sealmem.protocol.roster import Member, Roster

TEAM = "acme-pg-team"
OTHER = "other-pg-team"
WRITER = "w" * 26


@pytest.fixture
def replicas(pg_dsn: str, s3_url: str) -> Iterator[list[PgStorage]]:
    """Three storages over one database and one bucket, as three hub replicas hold."""
    made = [PgStorage(pg_dsn, S3Blobs(s3_url)) for _ in range(3)]
    yield made
    for store in made:
        store.close()


def _roster(team: str = TEAM) -> tuple[bytes, MemberKey, Roster]:
    key = MemberKey.generate()
    me = Member(key.kid, "admin", key.sign_public, key.box_public, "admin")
    roster = genesis(SUITE, team, me, created_at=1, projects=["webapp"])
    return roster.sign(key), key, roster


def _register(store: PgStorage, team: str = TEAM) -> tuple[MemberKey, Roster]:
    data, key, roster = _roster(team)
    with store.write(team) as w:
        w.put_roster(1, data, [(key.kid, key.sign_public)], [], 1)
    return key, roster


def _manifest(store: PgStorage, seq: int, data: bytes, writer: str = WRITER, keep: int = 3) -> None:
    with store.write(TEAM) as w:
        w.put_manifest(StoredHead("webapp", writer, seq, f"h{seq}", 0), data, [], keep, 10)


def _race(n: int, fn: Callable[[int], object]) -> list[object]:
    """``fn(i)`` for i in range(n) on n threads released at once: results or errors."""
    barrier = threading.Barrier(n)
    out: list[object] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            out[i] = fn(i)
        except Exception as exc:
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


# -- schema ------------------------------------------------------------------------------


def test_replicas_upgrading_at_once_make_one_schema(pg_dsn: str) -> None:
    def open_and_upgrade(_: int) -> int:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            return upgrade_pg(conn)

    assert _race(4, open_and_upgrade) == [len(PG_MIGRATIONS)] * 4
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute("SELECT version FROM schema_version").fetchall()
    assert rows == [(len(PG_MIGRATIONS),)]


def test_a_database_from_a_newer_hub_is_refused(pg_dsn: str, s3_url: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        upgrade_pg(conn)
        conn.execute("UPDATE schema_version SET version = 999")
    with pytest.raises(StorageError, match="schema version 999, newer"):
        PgStorage(pg_dsn, S3Blobs(s3_url))


def test_opened_by_url_through_the_backend_registry(pg_dsn: str, s3_url: str) -> None:
    store = open_storage(pg_dsn, s3_url, Quota(team_bytes=10_000))
    try:
        assert isinstance(store, PgStorage)
        assert isinstance(store.blobs, S3Blobs)
        assert isinstance(store.feed(), PgFeed)
        assert store.quota.team_bytes == 10_000
    finally:
        store.close()


# -- compare-and-swap --------------------------------------------------------------------


def test_the_same_seq_through_three_replicas_is_stored_once(replicas: list[PgStorage]) -> None:
    _register(replicas[0])
    results = _race(3, lambda i: _manifest(replicas[i], 5, f"manifest-{i}".encode()))
    assert sum(r is None for r in results) == 1
    assert all(isinstance(r, StaleSeq) and r.current == 5 for r in results if r is not None)
    assert len(replicas[1].manifests(TEAM, "webapp")[WRITER]) == 1
    assert replicas[2].newest_seqs(TEAM, "webapp") == {WRITER: 5}


def test_a_lower_seq_loses_and_old_manifests_are_trimmed(replicas: list[PgStorage]) -> None:
    a, b, _ = replicas
    _register(a)
    for seq in (1, 2, 3, 4):
        _manifest(a if seq % 2 else b, seq, b"m%d" % seq, keep=2)
    with pytest.raises(StaleSeq) as lost:
        _manifest(b, 3, b"late", keep=2)
    assert lost.value.current == 4
    assert a.manifests(TEAM, "webapp", WRITER) == {WRITER: [b"m4", b"m3"]}
    assert a.newest_seqs(TEAM, "webapp") == {WRITER: 4}
    assert a.member_usage(TEAM, WRITER) == len(b"m4m3")


def test_a_manifest_needs_its_chunks_in_the_same_transaction(replicas: list[PgStorage]) -> None:
    a, b, _ = replicas
    _register(a)
    b.put_chunk(TEAM, "webapp", WRITER, "c1", b"x", 1)
    with pytest.raises(MissingChunks) as missing, a.write(TEAM) as w:
        w.put_manifest(StoredHead("webapp", WRITER, 1, "h", 0), b"m", ["c1", "c2"], 3, 2)
    assert missing.value.ids == ["c2"]
    assert a.newest_seqs(TEAM, "webapp") == {}  # nothing of the refused write stayed
    with a.write(TEAM) as w:
        w.put_manifest(StoredHead("webapp", WRITER, 1, "h", 0), b"m", ["c1"], 3, 2)
    assert b.chunk_rows_unreferenced(10**12) == []  # c1 is named by a kept manifest


def test_a_roster_version_is_stored_once(replicas: list[PgStorage]) -> None:
    data, key, _ = _roster()

    def publish(i: int) -> None:
        with replicas[i].write(TEAM) as w:
            w.put_roster(1, data, [(key.kid, key.sign_public)], [], 1)

    results = _race(3, publish)
    assert sum(r is None for r in results) == 1
    assert all(isinstance(r, Conflict) for r in results if r is not None)
    assert replicas[0].team_count() == 1
    assert replicas[0].rosters(TEAM, 0) == [data]


def test_keyrings_are_swapped_on_roster_version(replicas: list[PgStorage]) -> None:
    a, b, _ = replicas
    key, roster = _register(a)
    first = build_keyring(ContentKey.generate(), roster, "webapp")
    newer = dataclasses.replace(first, roster_version=2)
    old_blob = KeyringBlob("webapp", first.epoch, first.sign(key), 1)
    new_blob = KeyringBlob("webapp", first.epoch, newer.sign(key), 2)
    generation = a.generation(TEAM)
    with a.write(TEAM) as w:
        w.put_keyring(old_blob, 2)
    with b.write(TEAM) as w:
        w.put_keyring(new_blob, 3)
    with pytest.raises(Conflict) as stale, a.write(TEAM) as w:
        w.put_keyring(old_blob, 4)
    assert stale.value.stale
    assert b.keyrings(TEAM, "webapp") == [new_blob]
    assert a.generation(TEAM) == (generation or 0) + 2  # each keyring write bumps it


# -- the change feed ----------------------------------------------------------------------


def test_the_change_cursor_is_per_team_and_gapless(replicas: list[PgStorage]) -> None:
    a, b, c = replicas
    _register(a, TEAM)
    _register(b, OTHER)
    assert all(
        r is None
        for r in _race(
            9, lambda i: _manifest(replicas[i % 3], 1, b"m", writer=f"{'w' * 24}{i:02d}")
        )
    )
    assert [ch.cursor for ch in c.changes(TEAM, 0)] == list(range(1, 11))  # roster + 9
    assert c.cursor(TEAM) == 10
    assert [ch.cursor for ch in c.changes(OTHER, 0)] == [1]  # no other team's activity


def test_a_change_on_one_replica_wakes_a_reader_on_another(replicas: list[PgStorage]) -> None:
    a, b, _ = replicas

    async def wait_for_push() -> bool:
        feed = b.feed()
        await feed.start()
        try:
            assert isinstance(feed, PgFeed)
            assert await asyncio.to_thread(feed.listening.wait, 10)
            event = feed.event(TEAM)
            await asyncio.to_thread(_register, a)
            return await feed.wait(event, 10)
        finally:
            await feed.close()

    assert asyncio.run(wait_for_push())


# -- shared state -------------------------------------------------------------------------


def test_a_nonce_seen_by_one_replica_is_refused_by_another(replicas: list[PgStorage]) -> None:
    a, b, c = replicas
    kid = "k" * 26
    assert a.remember_nonce(kid, "nonce-1", 601_000, 1_000)
    assert not b.remember_nonce(kid, "nonce-1", 602_000, 2_000)
    assert c.remember_nonce("j" * 26, "nonce-1", 602_000, 2_000)  # another member's nonce
    results = _race(3, lambda i: replicas[i].remember_nonce(kid, "nonce-2", 603_000, 3_000))
    assert sorted(results) == [False, False, True]  # type: ignore[type-var]


def test_nonces_survive_a_restart(pg_dsn: str, s3_url: str) -> None:
    kid = "k" * 26
    first = PgStorage(pg_dsn, S3Blobs(s3_url))
    assert first.remember_nonce(kid, "n", 601_000, 1_000)
    first.close()
    again = PgStorage(pg_dsn, S3Blobs(s3_url))
    try:
        assert not again.remember_nonce(kid, "n", 605_000, 5_000)
        assert again.remember_nonce(kid, "n", 1_300_000, 700_000)  # expired: reusable
    finally:
        again.close()


def test_rate_limit_buckets_are_shared(replicas: list[PgStorage]) -> None:
    spent = _race(3, lambda i: [replicas[i].take_token("m:k", 1.0, 5, 100_000) for _ in range(3)])
    waits = sorted(w for batch in spent for w in batch)  # type: ignore[attr-defined]
    assert waits[:5] == [0.0] * 5
    assert all(w > 0 for w in waits[5:])
    assert len(waits) == 9
    assert replicas[0].take_token("m:k", 1.0, 5, 101_000) == 0.0  # refilled a second later


def test_the_team_write_lock_excludes_other_replicas(replicas: list[PgStorage]) -> None:
    _register(replicas[0])
    inside = peak = 0
    guard = threading.Lock()

    def hold(i: int) -> None:
        nonlocal inside, peak
        with replicas[i].write(TEAM):
            with guard:
                inside += 1
                peak = max(peak, inside)
            time.sleep(0.05)
            with guard:
                inside -= 1

    assert _race(3, hold) == [None] * 3
    assert peak == 1
    with replicas[0].write(TEAM), replicas[1].write(OTHER):  # another team: not blocked
        pass


def test_the_quota_holds_across_replicas(pg_dsn: str, s3_url: str) -> None:
    quota = Quota(team_bytes=10_000, reserve_bytes=0)
    stores = [PgStorage(pg_dsn, S3Blobs(s3_url), quota) for _ in range(3)]
    try:
        _register(stores[0])
        room = 10_000 - stores[0].usage(TEAM)
        size = room // 4 + 1  # three fit, the fourth does not

        def put(i: int) -> bool:
            return stores[i % 3].put_chunk(TEAM, "webapp", WRITER, f"{i:064x}", b"x" * size, 5)

        results = _race(6, put)
        assert sum(r is True for r in results) == 3
        assert all(isinstance(r, QuotaExceeded) for r in results if r is not True)
        assert stores[1].usage(TEAM) <= 10_000
        assert len(list(stores[2].blobs.entries())) == 3  # refused blobs were removed
    finally:
        for store in stores:
            store.close()


def test_join_requests_fill_the_inbox_once_across_replicas(replicas: list[PgStorage]) -> None:
    a, b, _ = replicas
    _register(a)

    def offer(i: int) -> bool:
        admission = replicas[i].offer_request(
            TEAM, f"{'k' * 24}{i:02d}", b"req", "1.2.3.4", 10,
            live_after_ms=0, max_pending=2, max_per_address=5,
        )  # fmt: skip
        return admission.stored

    assert sorted(_race(3, offer)) == [False, True, True]  # type: ignore[type-var]
    kid = b.requests(TEAM)[0].kid
    assert a.remove_request(TEAM, kid)
    assert not b.remove_request(TEAM, kid)


# -- chunks and blobs ---------------------------------------------------------------------


def test_chunks_refresh_and_collect_across_replicas(replicas: list[PgStorage]) -> None:
    a, b, _ = replicas
    _register(a)
    args = (TEAM, "webapp", WRITER)
    assert a.put_chunk(*args, "c1", b"x" * 100, 1_000)
    assert not b.put_chunk(*args, "c1", b"x" * 100, 5_000)  # already there: refreshed
    assert b.chunk(*args, "c1") == b"x" * 100
    assert a.collect(*args, set(), 4_000) == 0  # refreshed at 5000: not older than 4000
    assert a.put_chunk(*args, "c2", b"y" * 50, 1_000)
    assert a.missing_chunks(*args, ["c1", "c2", "c3"]) == ["c3"]
    assert b.collect(*args, {"c1"}, 6_000) == 1
    assert a.chunk(*args, "c2") is None
    assert a.member_usage(TEAM, WRITER) == 100


def test_orphans_are_collected_only_past_the_minimum_age(
    replicas: list[PgStorage], s3_url: str
) -> None:
    a, _, _ = replicas
    _register(a)
    orphan = BlobKey(TEAM, "webapp", WRITER, "0f" * 32)
    a.blobs.put(orphan, b"o")  # a replica died between the blob and its row
    assert a.put_chunk(TEAM, "webapp", WRITER, "0e" * 32, b"n", 1)
    assert a.collect_orphans(600.0) == 0  # young: maybe another replica's put in flight
    assert a.collect_orphans(0.0) == 1
    assert a.blobs.get(orphan) is None
    assert a.chunk(TEAM, "webapp", WRITER, "0e" * 32) == b"n"


# -- errors -------------------------------------------------------------------------------


def test_database_errors_name_no_password(s3_url: str) -> None:
    dsn = f"postgresql://someone:hunter2-secret@127.0.0.1:{free_port()}/hub"
    with pytest.raises(StorageError, match="cannot use the hub database") as failed:
        PgStorage(dsn, S3Blobs(s3_url))
    assert "hunter2" not in str(failed.value)
    assert "someone@127.0.0.1" in str(failed.value)


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        ("postgresql://u:pw@db:5432/hub", "postgresql://u@db:5432/hub"),
        ("postgresql://u@db/hub?password=pw", "postgresql://u@db/hub"),
        ("host=db password=pw", "(the configured database)"),
    ],
)
def test_a_dsn_is_shown_without_its_password(dsn: str, shown: str) -> None:
    assert shown_url(dsn) == shown


def test_the_feed_listener_reconnects_and_wakes_everyone(
    replicas: list[PgStorage], pg_dsn: str
) -> None:
    a, b, _ = replicas

    async def survive_a_lost_connection() -> tuple[bool, bool]:
        feed = b.feed()
        await feed.start()
        try:
            assert isinstance(feed, PgFeed)
            assert await asyncio.to_thread(feed.listening.wait, 10)
            event = feed.event(TEAM)
            with psycopg.connect(pg_dsn, autocommit=True) as conn:  # the database drops it
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE query LIKE 'LISTEN%%' AND pid <> pg_backend_pid()"
                )
            woken_by_reconnect = await feed.wait(event, 15)  # missed changes: wake everyone
            assert await asyncio.to_thread(feed.listening.wait, 10)
            event = feed.event(TEAM)
            await asyncio.to_thread(_register, a)
            return woken_by_reconnect, await feed.wait(event, 10)
        finally:
            await feed.close()

    assert asyncio.run(survive_a_lost_connection()) == (True, True)


def test_idle_rate_limit_buckets_are_purged(replicas: list[PgStorage], pg_dsn: str) -> None:
    a, b, _ = replicas
    for i in range(5):
        a.take_token(f"address:10.0.0.{i}", 1.0, 5, 1_000)
    b.take_token("member:k", 1.0, 5, 1_000 + BUCKET_IDLE_MS + 120_000)  # an hour on
    with psycopg.connect(pg_dsn) as conn:
        keys = [r[0] for r in conn.execute("SELECT key FROM rate_buckets").fetchall()]
    assert keys == ["member:k"]


def test_the_newest_manifest_of_each_private_slot(replicas: list[PgStorage]) -> None:
    from sealmem.hub.slots import chain_slot, slot_prefix

    a, b, _ = replicas
    _register(a)
    member = "m" * 26
    one, two = chain_slot(member, "webapp"), chain_slot(member, "infra")
    for slot, seq in ((one, 1), (one, 2), (two, 1)):
        with a.write(TEAM) as w:
            head = StoredHead(slot, WRITER, seq, f"h{seq}", 0)
            w.put_manifest(head, f"{slot}/{seq}".encode(), [], 3, 10)
    _manifest(a, 1, b"a team manifest")  # not in the private space
    found = b.slot_manifests(TEAM, slot_prefix(member), WRITER)
    assert sorted(found) == sorted([f"{one}/2".encode(), f"{two}/1".encode()])
    assert b.slot_manifests(TEAM, slot_prefix("n" * 26), WRITER) == []
