"""A home with a real store for the viewer: a supersede chain, hostile text, a capture."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from sealmem.client.hosts.capture import ORIGIN
from sealmem.client.paths import local_author, store_path
from sealmem.client.recall.api import MemoryStore

HOSTILE = (
    "<script>alert('x')</script> \u202egnp.exe\u202c \x1b[31mred\x1b[0m "
    "<img src=x onerror=alert(1)>"
)


@dataclass
class Seeded:
    home: Path
    old: str
    new: str
    hostile: str
    captured: str


@pytest.fixture
def seeded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Seeded:
    home = tmp_path / "home"
    monkeypatch.setenv("SEALMEM_HOME", str(home))
    home.mkdir(mode=0o700)
    with MemoryStore.open(store_path(home), author=local_author(home)) as store:
        old = store.remember(
            "Orders live in PostgreSQL 14", kind="decision", project="webapp", keywords=["db"]
        ).memory.id
        new = store.remember(
            "Orders live in PostgreSQL 16 since the upgrade",
            kind="decision",
            project="webapp",
            supersedes=[old],
        ).memory.id
        hostile = store.remember(HOSTILE, kind="warning", project="webapp").memory.id
        captured = store.remember(
            "Run the migrations before the deploy",
            project="webapp",
            private=True,
            origin=ORIGIN,
            source="hook",
        ).memory.id
    return Seeded(home, old, new, hostile, captured)


def refresh_target(html: str) -> str:
    """Where the signed-in page sends the browser (its meta refresh, the same as its link)."""
    import re
    from html import unescape

    found = re.search(r'<meta http-equiv="refresh" content="0;url=([^"]*)">', html)
    link = re.search(r'<a href="([^"]*)">Continue</a>', html)
    assert found, html
    assert link, html
    assert found.group(1) == link.group(1)
    return unescape(found.group(1))
