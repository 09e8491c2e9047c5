"""The viewer in a real headless Chromium (Debian's package), driven by Playwright.

`sealmem ui --no-open` runs as a subprocess in its own home; the browser opens
the printed URL (the token becomes a cookie), loads every page, searches,
follows a supersede link, forgets a memory through the confirm dialog, and
saves a screenshot of each page under the test's temp dir.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Seeded

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _need_chromium() -> None:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(
                "Debian's chromium is missing: .ci/run installs it (apt-get install chromium)"
            )
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")


@pytest.fixture
def viewer(seeded: Seeded) -> Iterator[str]:
    env = {**os.environ, "SEALMEM_HOME": str(seeded.home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sealmem.client.cli", "ui", "--no-open"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+/\?token=\S+)", line)
        assert found, (line, proc.stderr.read() if proc.poll() is not None else "")
        yield found.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def test_every_page_in_a_real_browser(viewer: str, seeded: Seeded, tmp_path: Path) -> None:
    _need_chromium()
    from playwright.sync_api import sync_playwright

    shots = Path(os.environ.get("SEALMEM_UI_SHOTS", tmp_path / "screenshots"))
    shots.mkdir(parents=True, exist_ok=True)
    base = viewer.split("/?")[0]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            blocked: list[str] = []
            page.on("console", lambda m: blocked.append(m.text) if m.type == "error" else None)
            page.goto(viewer)
            page.wait_for_url(base + "/")  # the token left the address bar
            assert "recent memories" in page.content()
            page.screenshot(path=shots / "search.png", full_page=True)

            page.fill("input[name=q]", "orders postgresql")
            page.click("form.search button")
            page.wait_for_url(re.compile(r".*q=orders.*"))
            assert "why:" in page.inner_text("main")
            page.screenshot(path=shots / "results.png", full_page=True)

            page.goto(f"{base}/m/{seeded.old}")
            assert "superseded" in page.inner_text("h1")
            page.click("a.successor")
            page.wait_for_url(f"{base}/m/{seeded.new}")
            assert "PostgreSQL 16" in page.inner_text("pre.content")
            page.screenshot(path=shots / "memory.png", full_page=True)

            page.goto(f"{base}/m/{seeded.hostile}")
            text = page.inner_text("pre.content")
            assert "<script>alert('x')</script>" in text  # shown as text, never run
            assert "\\u202e" in text
            assert not [m for m in blocked if "alert" in m]
            page.once("dialog", lambda dialog: dialog.accept())
            page.fill("form[action='/forget'] input[name=reason]", "planted text")
            page.click("form[action='/forget'] button")
            page.wait_for_load_state()
            assert "forgotten" in page.inner_text("h1")

            for name in ("timeline", "team", "store", "captured"):
                page.goto(f"{base}/{name}")
                assert page.title().startswith(name)
                if name == "timeline":
                    assert page.locator("svg.chart").count() == 1
                page.screenshot(path=shots / f"{name}.png", full_page=True)
        finally:
            browser.close()
    made = sorted(p.name for p in shots.iterdir())
    assert made == sorted(
        [
            "search.png",
            "results.png",
            "memory.png",
            "timeline.png",
            "team.png",
            "store.png",
            "captured.png",
        ]
    )
    assert all((shots / n).stat().st_size > 5000 for n in made)


def test_the_private_file_signs_the_browser_in(seeded: Seeded, tmp_path: Path) -> None:
    """What ``sealmem ui`` hands the browser (a local file: another site) signs it in.

    A 303 from the token would not do: Chromium sends no SameSite=Strict cookie
    along a redirect chain that another site started.
    """
    _need_chromium()
    from playwright.sync_api import sync_playwright

    from sealmem.client.ui.server import opener

    env = {**os.environ, "SEALMEM_HOME": str(seeded.home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sealmem.client.cli", "ui", "--no-open"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        found = re.search(r"(http://127\.0\.0\.1:(\d+)/\?token=\S+)", proc.stdout.readline())
        assert found
        url, port = found.group(1), int(found.group(2))
        door = opener(seeded.home, port, url)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            try:
                page = browser.new_page()
                page.goto(door.as_uri())
                page.wait_for_url(f"http://127.0.0.1:{port}/")
                page.wait_for_selector("h1")
                assert "recent memories" in page.inner_text("h1")
                page.goto(f"http://127.0.0.1:{port}/m/{seeded.new}")
                assert "PostgreSQL 16" in page.inner_text("pre.content")
            finally:
                browser.close()
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_chromium_enforces_the_csp_on_the_pages(viewer: str) -> None:
    """Inline script and style planted in a served page do not run: the CSP holds in Chromium."""
    _need_chromium()
    from playwright.sync_api import Error, sync_playwright

    base = viewer.split("/?")[0]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page()
            violations: list[str] = []
            page.on("console", lambda m: violations.append(m.text))
            page.goto(viewer)
            page.wait_for_url(base + "/")
            with pytest.raises(Error):
                page.add_script_tag(content="window.planted = 1;")
            assert page.evaluate("typeof window.planted") == "undefined"
            page.evaluate(
                "() => { const b = document.createElement('b');"
                " b.setAttribute('onclick', 'window.clicked = 1'); b.id = 'planted';"
                " b.textContent = 'x'; document.body.append(b); }"
            )
            page.click("#planted")
            assert page.evaluate("typeof window.clicked") == "undefined"
            assert any("Content Security Policy" in v for v in violations), violations
        finally:
            browser.close()


def test_a_link_from_another_local_server_is_refused(viewer: str, tmp_path: Path) -> None:
    """Chromium marks a navigation from 127.0.0.1:OTHER as same-site: the cookie rides
    along, and the guard's fetch-metadata check refuses it."""
    _need_chromium()
    import http.server
    import threading
    from functools import partial

    from playwright.sync_api import sync_playwright

    base = viewer.split("/?")[0]
    (tmp_path / "index.html").write_text(f'<a id="go" href="{base}/?q=orders">go</a>')
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            try:
                page = browser.new_page()
                page.goto(viewer)
                page.wait_for_url(base + "/")
                assert "recent memories" in page.inner_text("h1")  # signed in
                page.goto(f"http://127.0.0.1:{other.server_address[1]}/index.html")
                page.click("#go")
                page.wait_for_url(f"{base}/?q=orders")
                text = page.inner_text("body")
                assert "request from another site refused" in text
                assert "Orders" not in text
            finally:
                browser.close()
    finally:
        other.shutdown()
        other.server_close()
