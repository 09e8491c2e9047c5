"""``sealmem review`` and the stale mark of ``recall``: memories written long ago, then
the CLI on the real clock lists, keeps, corrects and forgets them; nothing goes silently."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from sealmem.client.paths import local_author, store_path
from sealmem.client.recall.api import MemoryStore
from tests.support.cli import Run

DAY = 86_400_000


def _written_long_ago(home: Path, *texts: str, days: int = 200) -> list[str]:
    home.mkdir(mode=0o700, exist_ok=True)
    when = time.time_ns() // 1_000_000 - days * DAY
    with MemoryStore.open(store_path(home), author=local_author(home), clock=lambda: when) as s:
        return [s.remember(text, project="webshop").memory.id for text in texts]


def test_recall_marks_a_stale_memory_and_notes_the_recall(
    home: Path, cli: Callable[..., Run]
) -> None:
    [old] = _written_long_ago(home, "Orders live in PostgreSQL 14 on the db host")
    shown = cli("recall", "orders PostgreSQL")
    assert shown.code == 0, shown
    assert "stale: no one confirmed it within the review period ('sealmem review'" in shown.out
    # the recall confirmed it: the next one has no mark, review lists nothing
    again = cli("recall", "orders PostgreSQL", "--json").json()
    assert [(h["id"], h["stale"]) for h in again["hits"]] == [(old, False)]
    with sqlite3.connect(store_path(home)) as conn:
        assert conn.execute("SELECT id FROM freshness").fetchall() == [(old,)]
    assert "nothing stale" in cli("review").out


def test_review_lists_keeps_corrects_and_forgets(home: Path, cli: Callable[..., Run]) -> None:
    kept, wrong, gone = _written_long_ago(
        home,
        "Deploys run from the release workflow",
        "Logs are kept for 7 days in Loki",
        "The legacy PHP admin runs on the old VM",
    )
    listed = cli("review", "--json").json()
    assert listed["period_days"] == 180
    assert [r["id"] for r in listed["stale"]] == [kept, wrong, gone]
    assert listed["stale"][0]["written_by"] == "you"
    text = cli("review").out
    assert "3 memories no one confirmed in the last 180 days" in text
    assert "sealmem review keep ID" in text

    assert cli("review", "keep", kept[-12:]).code == 0
    corrected = cli("review", "correct", wrong, "Logs are kept for 30 days in Loki", "--json")
    new = corrected.json()["memory"]
    assert new["supersedes"] == [wrong]
    assert new["project"] == "webshop"
    refused = cli("review", "forget", gone)
    assert refused.code == 1
    assert "give --reason" in refused.err
    assert [r["id"] for r in cli("review", "--json").json()["stale"]] == [gone]
    assert cli("review", "forget", gone, "--reason", "the VM is gone").code == 0
    assert cli("review", "--json").json()["stale"] == []
    # nothing was deleted silently: the kept and the corrected memories are all there
    entries = cli("list", "--json", "--forgotten").json()["memories"]
    listed_ids = {m["id"] for e in entries for m in [e, *e.get("duplicates", [])]}
    assert {kept, wrong, gone, new["id"]} <= listed_ids


def test_the_period_is_set_and_refused_by_name(home: Path, cli: Callable[..., Run]) -> None:
    _written_long_ago(home, "Backups are taken every 6 hours", days=40)
    assert cli("review", "--json").json()["stale"] == []
    assert "review period set to 30 days" in cli("review", "period", "30").out
    assert cli("review", "period", "--json").json() == {
        "period_days": 30,
        "days": 30,
        "set_by": "local",
        "team_days": None,
    }
    assert len(cli("review", "--json").json()["stale"]) == 1
    bad = cli("review", "period", "0")
    assert bad.code == 1
    assert "review period 0 is not a number of days from 1 to 3650" in bad.err
    missing = cli("review", "keep", "0123456789ab")
    assert missing.code == 1
    assert "Traceback" not in missing.err


def test_recall_marks_a_stale_near_duplicate_under_its_leader(
    home: Path, cli: Callable[..., Run]
) -> None:
    [old] = _written_long_ago(
        home, "Redis 7 holds the session cookies; flushing it logs everyone out"
    )
    with MemoryStore.open(store_path(home), author=local_author(home)) as s:
        s.remember(
            "Session cookies live in Redis 7, so a flush of Redis logs every user out",
            project="webshop",
        )
    shown = cli("recall", "redis session cookies")
    assert shown.code == 0, shown
    assert f"also written by you (stale): {old[-12:]}" in shown.out
    assert "stale: no one confirmed" not in shown.out  # the leader is fresh
