"""Stale memories reviewed in the viewer, as ``sealmem review`` does: keep, correct and
forget on the review page and under a stale search result, in a real headless Chromium
against ``sealmem ui`` in its own home; each is a CSRF-checked form."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sealmem.client.paths import local_author, store_path
from sealmem.client.recall.api import MemoryStore
from sealmem.client.ui.app import allowed_hosts, create_app
from sealmem.client.ui.guard import Secrets

from .test_browser import CHROMIUM, FLAGS, _need_chromium

pytestmark = pytest.mark.slow

DAY = 86_400_000
OLD = [
    "The billing service listens on port 8080.",
    "Staging deploys need the VPN on.",
    "Invoices are rendered with the Inter font.",
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home whose three memories no one confirmed for 200 days, and one fresh one."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("SEALMEM_HOME", str(home))
    old = time.time_ns() // 1_000_000 - 200 * DAY
    with MemoryStore.open(store_path(home), author=local_author(home), clock=lambda: old) as s:
        for text in OLD:
            s.remember(text, project="webapp")
    with MemoryStore.open(store_path(home), author=local_author(home)) as s:
        s.remember("Orders live in PostgreSQL 16.", project="webapp")
    return home


def _stale(home: Path) -> list[str]:
    with MemoryStore.open(store_path(home), author=local_author(home), readonly=True) as s:
        return sorted(m.content for m, _ in s.stale(all_projects=True))


@pytest.fixture
def viewer(home: Path) -> Iterator[str]:
    env = {**os.environ, "SEALMEM_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sealmem.client.cli", "ui", "--no-open"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+/\?token=\S+)", line)
        assert found, line
        yield found.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def test_keep_correct_and_forget_a_stale_memory_in_a_real_browser(viewer: str, home: Path) -> None:
    _need_chromium()
    from playwright.sync_api import sync_playwright

    base = viewer.split("/?")[0]
    assert _stale(home) == sorted(OLD)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page()
            page.goto(viewer)
            page.wait_for_url(base + "/")
            page.click("nav a[href='/review']")
            page.wait_for_url(base + "/review")
            assert "3 memories no one confirmed in the last 180 days" in page.inner_text("h1")

            item = page.locator("section.stale-item", has_text="port 8080")
            item.locator("form[action='/review/keep'] button").click()
            page.wait_for_url(base + "/review")
            assert "2 memories" in page.inner_text("h1")
            assert "port 8080" not in page.inner_text("main")

            item = page.locator("section.stale-item", has_text="VPN")
            item.locator("details.correct summary").click()
            item.locator("form[action='/correct'] textarea").fill(
                "Staging deploys need no VPN now."
            )
            item.locator("form[action='/correct'] button").click()
            page.wait_for_url(re.compile(r".*/m/.+"))
            assert "no VPN now" in page.inner_text("pre.content")

            page.goto(f"{base}/?q=invoices+font")  # a stale result offers the same forms
            result = page.locator("div.review").first
            page.once("dialog", lambda dialog: dialog.accept())
            result.locator("form[action='/forget'] input[name=reason]").fill("we switched fonts")
            result.locator("form[action='/forget'] button").click()
            page.wait_for_url(re.compile(r".*/m/.+"))
            assert "forgotten" in page.inner_text("h1")

            page.goto(f"{base}/review")
            assert "nothing stale" in page.inner_text("h1")
        finally:
            browser.close()
    assert _stale(home) == []


def test_keep_without_the_csrf_token_is_refused(home: Path) -> None:
    secrets = Secrets()
    client = TestClient(
        create_app(home, secrets, allowed_hosts(8000), project="webapp"),
        base_url="http://127.0.0.1:8000",
        follow_redirects=False,
    )
    assert client.get(f"/?token={secrets.token}").status_code == 200
    page = client.get("/review").text
    ids = re.findall(r'name="id" value="([^"]+)"', page)
    assert len(set(ids)) == 3
    origin = {"origin": "http://127.0.0.1:8000"}
    refused = client.post("/review/keep", data={"id": ids[0]}, headers=origin)
    assert refused.status_code == 403
    wrong = client.post("/review/keep", data={"id": ids[0], "csrf": "x"}, headers=origin)
    assert wrong.status_code == 403
    assert len(_stale(home)) == 3
    kept = client.post("/review/keep", data={"id": ids[0], "csrf": secrets.csrf}, headers=origin)
    assert (kept.status_code, kept.headers["location"]) == (303, "/review")
    assert len(_stale(home)) == 2
