"""The viewer on a phone-sized screen (390 px, as an iPhone 12-15 is wide): no page
scrolls sideways (the nav, the search form, the fields, tables and long ids used to
overflow)."""

from __future__ import annotations

import pytest

from .conftest import Seeded
from .test_browser import CHROMIUM, FLAGS, _need_chromium, viewer

__all__ = ["viewer"]

pytestmark = pytest.mark.slow

WIDTH = 390


def test_no_page_is_wider_than_a_phone(viewer: str, seeded: Seeded) -> None:
    _need_chromium()
    from playwright.sync_api import sync_playwright

    base = viewer.split("/?")[0]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": 844})
            page.goto(viewer)
            page.wait_for_url(base + "/")
            wide = {}
            for path in ("/", "/?q=orders", f"/m/{seeded.new}", f"/m/{seeded.hostile}",
                         "/timeline", "/team", "/store", "/captured"):  # fmt: skip
                page.goto(base + path)
                width = page.evaluate("document.documentElement.scrollWidth")
                if width > WIDTH:
                    wide[path] = width
            assert not wide, wide
        finally:
            browser.close()
