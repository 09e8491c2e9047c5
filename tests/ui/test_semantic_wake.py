"""A write through the viewer wakes the semantic extra's background pass: the memory
has its vector at once, not at the pass's next idle wake-up (30 s)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sealmem.client.paths import local_author, store_path
from sealmem.client.recall import semantic
from sealmem.client.recall.api import MemoryStore
from sealmem.client.ui.app import allowed_hosts, create_app
from sealmem.client.ui.guard import Secrets

pytestmark = pytest.mark.skipif(
    not semantic.available(), reason="the semantic extra is not installed"
)
BASE = "http://127.0.0.1:8000"


@pytest.fixture
def extra_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The extra on, and an idle wait no test outlives: only a wake makes a pass."""
    monkeypatch.setenv(semantic.ENV, "1")
    monkeypatch.setattr(semantic._Filler, "IDLE_S", 600.0)
    yield
    semantic.stop()


def _vectors(home: Path) -> int:
    with MemoryStore.open(store_path(home), author=local_author(home), readonly=True) as store:
        return int(store.connection.execute("SELECT count(*) FROM embeddings").fetchone()[0])


@pytest.mark.slow
def test_a_memory_written_in_the_viewer_gets_its_vector_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra_on: None
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("SEALMEM_HOME", str(home))
    with MemoryStore.open(store_path(home), author=local_author(home)) as store:
        store.remember("Orders live in PostgreSQL 16", project="webapp")
    secrets = Secrets()
    client = TestClient(
        create_app(home, secrets, allowed_hosts(8000), project="webapp"),
        base_url=BASE,
        follow_redirects=False,
    )
    assert client.get(f"/?token={secrets.token}").status_code == 200
    deadline = time.monotonic() + 60
    while _vectors(home) < 1 and time.monotonic() < deadline:  # the first pass, at start
        time.sleep(0.05)
    assert _vectors(home) == 1
    form = {"content": "Deploys go out on Tuesdays", "project": "webapp", "csrf": secrets.csrf}
    assert client.post("/remember", data=form, headers={"origin": BASE}).status_code == 303
    deadline = time.monotonic() + 30  # far less than the idle wait
    while _vectors(home) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _vectors(home) == 2
