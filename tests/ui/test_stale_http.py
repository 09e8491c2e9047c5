"""The viewer marks a recalled memory no one confirmed within the review period, and
groups a reworded repeat into one entry (HTTP through the guard, a real store)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sealmem.client.paths import local_author, store_path
from sealmem.client.recall.api import MemoryStore
from sealmem.client.ui.app import allowed_hosts, create_app
from sealmem.client.ui.guard import Secrets

DAY = 86_400_000


def test_search_shows_the_stale_mark_and_one_entry_per_lesson(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("SEALMEM_HOME", str(home))
    now = time.time_ns() // 1_000_000
    old = now - 200 * DAY
    with MemoryStore.open(store_path(home), author=local_author(home), clock=lambda: old) as s:
        s.remember("Orders live in PostgreSQL 14 on the db host", project="webapp")
    with MemoryStore.open(store_path(home), author=local_author(home)) as s:
        s.remember("Redis 7 holds the session cookies; flushing it logs everyone out",
                   project="webapp")  # fmt: skip
        s.remember("Session cookies live in Redis 7, so a flush of Redis logs every user out",
                   project="webapp")  # fmt: skip
    secrets = Secrets()
    client = TestClient(
        create_app(home, secrets, allowed_hosts(8000), project="webapp"),
        base_url="http://127.0.0.1:8000",
        follow_redirects=False,
    )
    assert client.get(f"/?token={secrets.token}").status_code == 200
    stale = client.get("/", params={"q": "orders PostgreSQL"}).text
    assert '<p class="stale">stale: no one confirmed or recalled it' in stale
    fresh = client.get("/", params={"q": "redis session cookies"}).text
    assert 'class="stale"' not in fresh
    assert "1 result for" in fresh
    assert fresh.count('class="duplicates"') == 1
    assert "also written by you:" in fresh


def test_a_stale_near_duplicate_is_marked_in_its_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The group's leader is fresh, its reworded repeat no one confirmed: the repeat
    shown under the leader carries the stale mark, as MCP and ``recall --json`` give it."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("SEALMEM_HOME", str(home))
    old = time.time_ns() // 1_000_000 - 200 * DAY
    with MemoryStore.open(store_path(home), author=local_author(home), clock=lambda: old) as s:
        s.remember("Redis 7 holds the session cookies; flushing it logs everyone out",
                   project="webapp")  # fmt: skip
    with MemoryStore.open(store_path(home), author=local_author(home)) as s:
        s.remember("Session cookies live in Redis 7, so a flush of Redis logs every user out",
                   project="webapp")  # fmt: skip
    secrets = Secrets()
    client = TestClient(
        create_app(home, secrets, allowed_hosts(8000), project="webapp"),
        base_url="http://127.0.0.1:8000",
        follow_redirects=False,
    )
    assert client.get(f"/?token={secrets.token}").status_code == 200
    page = client.get("/", params={"q": "redis session cookies"}).text
    assert "1 result for" in page
    group = page.split('class="duplicates"', 1)[1]
    assert group.count('class="stale"') == 1
    assert page.count('class="stale"') == 1  # the leader is not stale
