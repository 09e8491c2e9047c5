"""The review page's forms attacked over HTTP through the guard (a real store): a
private memory's correction stays private, a forgotten one is not corrected, ids that
do not exist or are malformed are refused by name, hostile text is escaped."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sealmem.client.paths import local_author, store_path
from sealmem.client.recall.api import MemoryStore
from sealmem.client.ui.app import allowed_hosts, create_app
from sealmem.client.ui.guard import Secrets

from .conftest import HOSTILE

pytestmark = pytest.mark.slow

DAY = 86_400_000
ORIGIN = "http://127.0.0.1:8000"


def _viewer(home: Path) -> tuple[TestClient, Secrets]:
    secrets = Secrets()
    client = TestClient(
        create_app(home, secrets, allowed_hosts(8000), project="webapp"),
        base_url=ORIGIN,
        follow_redirects=False,
    )
    assert client.get(f"/?token={secrets.token}").status_code == 200
    return client, secrets


def _post(client: TestClient, secrets: Secrets, path: str, **form: str) -> int:
    return client.post(
        path, data={"csrf": secrets.csrf, **form}, headers={"origin": ORIGIN}
    ).status_code


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("SEALMEM_HOME", str(home))
    return home


def _old(home: Path, text: str, **kw: object) -> str:
    old = time.time_ns() // 1_000_000 - 200 * DAY
    with MemoryStore.open(store_path(home), author=local_author(home), clock=lambda: old) as s:
        return s.remember(text, project="webapp", **kw).memory.id  # type: ignore[arg-type]


def test_correcting_a_private_memory_keeps_the_correction_private(home: Path) -> None:
    """The correct form under a stale private memory: the correction must not become a
    team memory (it would be pushed to every teammate)."""
    old = _old(home, "The staging root password rotates on Mondays.", private=True)
    client, secrets = _viewer(home)
    assert f'value="{old}"' in client.get("/review").text
    assert _post(client, secrets, "/correct", id=old, content="It rotates on Fridays.") == 303
    with MemoryStore.open(store_path(home), author=local_author(home), readonly=True) as s:
        new = [
            m
            for m in s.recent(limit=10, all_projects=True)
            if m.content == "It rotates on Fridays."
        ]
    assert len(new) == 1
    assert new[0].record.supersedes == (old,) or list(new[0].record.supersedes) == [old]
    assert new[0].record.visibility == "private"


def test_a_forgotten_memory_is_not_corrected(home: Path) -> None:
    """As ``sealmem review correct`` refuses: a correction of a tombstone is refused by
    name and nothing is stored."""
    gone = _old(home, "The cache is flushed nightly.")
    with MemoryStore.open(store_path(home), author=local_author(home)) as s:
        s.forget(gone, reason="wrong")
    client, secrets = _viewer(home)
    answer = client.post(
        "/correct",
        data={"csrf": secrets.csrf, "id": gone, "content": "The cache is flushed hourly."},
        headers={"origin": ORIGIN},
    )
    assert answer.status_code == 400
    assert "forgotten" in answer.text
    with MemoryStore.open(store_path(home), author=local_author(home), readonly=True) as s:
        assert not [m for m in s.recent(limit=10, all_projects=True) if "hourly" in m.content]


@pytest.mark.parametrize(
    ("given", "status"),
    [("0190aaaa-0000-7000-8000-000000000000", 404), ("", 400), ("<b>x</b>", 400)],
)
def test_keep_of_an_unknown_or_malformed_id_is_refused_by_name(
    home: Path, given: str, status: int
) -> None:
    _old(home, "The billing service listens on port 8080.")
    client, secrets = _viewer(home)
    answer = client.post(
        "/review/keep", data={"csrf": secrets.csrf, "id": given}, headers={"origin": ORIGIN}
    )
    assert answer.status_code == status
    assert "Traceback" not in answer.text
    assert "<b>x</b>" not in answer.text
    with MemoryStore.open(store_path(home), author=local_author(home), readonly=True) as s:
        assert s.connection.execute("SELECT COUNT(*) FROM freshness").fetchone()[0] == 0


def test_keep_refuses_get_a_foreign_origin_and_a_wrong_token(home: Path) -> None:
    kept = _old(home, "Staging deploys need the VPN on.")
    client, secrets = _viewer(home)
    assert client.get("/review/keep", params={"id": kept, "csrf": secrets.csrf}).status_code == 405
    foreign = client.post(
        "/review/keep",
        data={"csrf": secrets.csrf, "id": kept},
        headers={"origin": "http://evil.example"},
    )
    assert foreign.status_code == 403
    wrong = client.post(
        "/review/keep", data={"csrf": "x" + secrets.csrf, "id": kept}, headers={"origin": ORIGIN}
    )
    assert wrong.status_code == 403
    assert kept in client.get("/review").text  # still stale: nothing was kept
    assert _post(client, secrets, "/review/keep", id=kept) == 303
    assert kept not in client.get("/review").text


def test_hostile_text_on_the_review_page_is_escaped(home: Path) -> None:
    _old(home, HOSTILE)
    client, _ = _viewer(home)
    page = client.get("/review").text
    assert "<script>alert" not in page
    assert "<img src=x" not in page
    assert "&lt;script&gt;" in page
    assert "\u202e" not in page
    assert "\x1b" not in page
    assert re.search(r"1 memory no one confirmed", page)


def test_the_review_page_shows_the_oldest_up_to_its_limit(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store of years holds thousands of stale memories: the page offers the oldest
    ``REVIEW_LIMIT``, says how many there are, and points to ``sealmem review``."""
    from sealmem.client.ui import views

    monkeypatch.setattr(views, "REVIEW_LIMIT", 3, raising=False)
    old = time.time_ns() // 1_000_000 - 400 * DAY
    for n in range(5):
        at = old + n * DAY
        with MemoryStore.open(
            store_path(home), author=local_author(home), clock=lambda at=at: at
        ) as s:
            s.remember(f"Release {n} was cut from the main branch.", project="webapp")
    client, _ = _viewer(home)
    page = client.get("/review").text
    assert "5 memories no one confirmed" in page
    assert page.count('action="/review/keep"') == 3
    assert "Release 0 was cut" in page
    assert "Release 4 was cut" not in page
    assert "sealmem review" in page


def test_forgetting_a_teammates_stale_memory_says_it_is_a_proposal(home: Path) -> None:
    """Bob's memory no one confirmed: its forget button does not say the text is
    erased on the teammates' stores (Bob and the others see a proposal beside his text);
    keeping it is this reader's own mark, which takes it off the page."""
    import os

    from sealmem.protocol.hlc import Hlc
    from sealmem.protocol.record import Record, new_memory_id
    from tests.hosts.test_review_refs import BOB, NOW, _pulled

    mine = _old(home, "The billing service listens on port 8080.")
    theirs = new_memory_id(NOW, os.urandom(10))
    bob = Record(
        theirs, "webapp", "note", "Releases are cut on Tuesdays.", (), 0.5, BOB, BOB,
        NOW, Hlc(NOW, 1), (),
    ).validate()  # fmt: skip
    with MemoryStore.open(store_path(home), author=local_author(home)) as s:
        _pulled(s, bob, BOB, "bob")
    client, secrets = _viewer(home)
    page = client.get("/review").text
    found = re.findall(r'data-confirm="([^"]*)">\s*<input[^>]*>\s*<input[^>]*value="([^"]+)"', page)
    forms = {memory_id: question for question, memory_id in found}
    assert set(forms) == {mine, theirs}
    assert "on your teammates' stores" in forms[mine]
    assert "on your teammates' stores" not in forms[theirs]
    assert "as a proposal" in forms[theirs]
    assert _post(client, secrets, "/review/keep", id=theirs) == 303
    assert theirs not in client.get("/review").text
