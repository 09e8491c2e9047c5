"""Contract: what replicas share lives in storage: nonces and rate-limit buckets."""

from __future__ import annotations

import time

from sealmem.hub.storage import Storage

from .conftest import Backend
from .world import ALICE, BOB, T0


def test_a_nonce_is_accepted_once_until_it_expires(store: Storage) -> None:
    assert store.remember_nonce(ALICE, "n1", T0 + 1000, T0)
    assert not store.remember_nonce(ALICE, "n1", T0 + 2000, T0 + 10)  # a replay
    assert store.remember_nonce(BOB, "n1", T0 + 1000, T0)  # another key's nonce
    assert store.remember_nonce(ALICE, "n1", T0 + 3000, T0 + 1000)  # expired: a new request


def test_a_request_whose_clock_lags_the_purge_is_still_refused_as_a_replay(
    store: Storage,
) -> None:
    """Replicas and threads read their own clocks: a request at T may arrive after one
    at T + 1 ms crossed the purge mark; a nonce live at T is never purged for it."""
    assert store.remember_nonce(ALICE, "seen", T0 + 70_000, T0)
    assert store.remember_nonce(BOB, "later", T0 + 200_000, T0 + 70_000)  # past the mark
    time.sleep(0.5)  # the SQLite hub purges on a thread of its own
    assert not store.remember_nonce(ALICE, "seen", T0 + 70_000, T0 + 69_999)


def test_nonces_survive_reopening(storage_backend: Backend) -> None:
    store = storage_backend.open()
    assert store.remember_nonce(ALICE, "n1", T0 + 600_000, T0)
    store.close()
    again = storage_backend.open()
    assert not again.remember_nonce(ALICE, "n1", T0 + 600_000, T0 + 5)


def test_expired_nonces_are_forgotten(store: Storage) -> None:
    for i in range(50):
        assert store.remember_nonce(ALICE, f"old{i}", T0 + 10, T0)
    later = T0 + 10 * 60_000
    assert store.remember_nonce(ALICE, "new", later + 10, later)
    for i in range(50):  # gone, so accepted again (and not a replay any more)
        assert store.remember_nonce(ALICE, f"old{i}", later + 10, later)


def test_a_token_bucket_spends_its_burst_then_refills(store: Storage) -> None:
    assert [store.take_token("member:a", 2.0, 3, T0) for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = store.take_token("member:a", 2.0, 3, T0)
    assert 0.0 < wait <= 0.5
    assert store.take_token("member:b", 2.0, 3, T0) == 0.0  # buckets are per key
    assert store.take_token("member:a", 2.0, 3, T0 + 500) == 0.0  # one token back
    assert store.take_token("member:a", 2.0, 3, T0 + 500) > 0.0
