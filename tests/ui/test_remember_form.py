"""The viewer's remember form as a new user met it: an empty project filed the memory
under ``default`` (which no team registers, so it never synced), the page said
"visibility team" without a word, and the advice the next sync printed failed without
``--create``; a refused form lost what was typed."""

from __future__ import annotations

import re
import shlex
from html import unescape
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sealmem.client.paths import local_author, store_path
from sealmem.client.recall.api import MemoryStore
from sealmem.client.ui.app import allowed_hosts, create_app
from sealmem.client.ui.guard import Secrets
from sealmem.client.ui.views import DAY, MIN_COLUMNS, WEEK, timeline_columns
from tests.support.cli import per_home

from .conftest import Seeded

BASE = "http://127.0.0.1:8000"
ORIGIN = {"origin": BASE}


def signed_in(home: Path, secrets: Secrets) -> TestClient:
    client = TestClient(
        create_app(home, secrets, allowed_hosts(8000)), base_url=BASE, follow_redirects=False
    )
    assert client.get(f"/?token={secrets.token}").status_code == 200
    return client


def count(home: Path) -> int:
    with MemoryStore.open(store_path(home), author=local_author(home), readonly=True) as store:
        return int(store.stats()["memories"])


@pytest.mark.slow
def test_the_form_files_under_the_current_project_and_says_what_stays_local(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cli = per_home(tmp_path, capsys, monkeypatch)  # run from tmp_path/webapp
    folder = tmp_path / "nas"
    folder.mkdir()
    cli("root", "team", "create", "Acme", "--folder", str(folder), "--name", "root")
    home = tmp_path / "root"
    secrets = Secrets()
    client = signed_in(home, secrets)
    form = re.search(
        r'<form method="post" action="/remember">.*?</form>', client.get("/").text, re.S
    )
    assert form is not None
    assert re.search(r'name="project" required value="webapp"', form.group(0)), form.group(0)

    before = count(home)
    emptied = {"content": "Deploys go out on Tuesdays", "project": "", "csrf": secrets.csrf}
    refused = client.post("/remember", data=emptied, headers=ORIGIN)
    assert refused.status_code == 400
    assert "say which project" in refused.text
    assert ">Deploys go out on Tuesdays</textarea>" in refused.text  # kept, to send again
    assert count(home) == before  # nothing under "default"

    ok = client.post("/remember", data={**emptied, "project": "webapp"}, headers=ORIGIN)
    assert ok.status_code == 303
    assert "stays on this machine" not in client.get(ok.headers["location"]).text

    scratch = {**emptied, "content": "Scratch notes on the cache", "project": "scratch"}
    where = client.post("/remember", data=scratch, headers=ORIGIN).headers["location"]
    page = unescape(client.get(where).text)
    assert "stays on this machine" in page
    assert "project 'scratch' is not registered in the team" in page
    advice = re.search(r"'(sealmem admin grant [^']*)'", page)
    assert advice is not None, page
    cli("root", *shlex.split(advice.group(1))[1:])  # the advice works as printed
    cli("root", "sync")
    assert "stays on this machine" not in client.get(where).text


def test_a_refused_form_keeps_what_was_typed_and_says_how_to_fix_it_here(
    seeded: Seeded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    secrets = Secrets()
    client = signed_in(seeded.home, secrets)
    typed = {
        "content": "Cache keys <b>carry</b> the schema version",
        "kind": "gotcha",
        "project": "webapp",
        "keywords": "cache, schema",
        "importance": "0.8",
        "csrf": secrets.csrf,
    }
    refused = client.post("/remember", data=typed, headers=ORIGIN)
    assert refused.status_code == 400
    html = refused.text
    assert "unknown kind 'gotcha'" in unescape(html)
    assert "Cache keys &lt;b&gt;carry&lt;/b&gt; the schema version</textarea>" in html
    for name, value in (("kind", "gotcha"), ("project", "webapp"), ("keywords", "cache, schema")):
        assert re.search(rf'name="{name}"[^>]* value="{value}"', html), name
    assert 'name="new_kind"' in html  # the viewer's own way to say "a new kind on purpose"
    again = client.post("/remember", data={**typed, "new_kind": "on"}, headers=ORIGIN)
    assert again.status_code == 303
    with MemoryStore.open(store_path(seeded.home), author=local_author(seeded.home)) as store:
        assert store.get(again.headers["location"].removeprefix("/m/")).kind == "gotcha"

    wrong = client.post(
        "/correct",
        data={"id": "ffff", "content": "my careful fix", "csrf": secrets.csrf},
        headers=ORIGIN,
    )
    assert wrong.status_code in (400, 404)
    assert ">my careful fix</textarea>" in wrong.text


def test_no_refusals_is_one_line_not_an_empty_chart(seeded: Seeded) -> None:
    secrets = Secrets()
    html = signed_in(seeded.home, secrets).get("/team").text
    section = html[html.index("<h2>refusals</h2>") :]
    assert "nothing refused" in section
    assert "refusals per day" not in section  # the empty "nothing yet" chart box


def test_the_pages_name_an_icon_the_viewer_serves(seeded: Seeded) -> None:
    client = signed_in(seeded.home, Secrets())
    link = re.search(r'<link rel="icon" href="([^"]+)"', client.get("/").text)
    assert link is not None  # a browser asked /favicon.ico and got a 401 page
    icon = client.get(link.group(1))
    assert icon.status_code == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")


def test_a_week_of_memories_is_charted_among_the_weeks_before(seeded: Seeded) -> None:
    """The seeded memories were all written this week: the chart used to be one bar."""
    html = signed_in(seeded.home, Secrets()).get("/timeline").text
    chart = html[html.index('<svg class="chart"') : html.index("</svg>")]
    weeks = re.findall(r'class="tick">(\d{4}-W\d\d)</text>', chart)
    assert len(weeks) >= MIN_COLUMNS, weeks
    assert weeks == sorted(weeks)
    assert chart.count("<rect") - chart.count('width="10" height="10"') == 1  # one week drawn


def test_chart_columns_run_without_gaps() -> None:
    cols = timeline_columns({"2026-12-30": {"a": 1}, "2027-01-02": {"a": 2}}, DAY, 30)
    assert [label for label, _ in cols][-4:] == [
        "2026-12-30", "2026-12-31", "2027-01-01", "2027-01-02",
    ]  # fmt: skip
    assert len(cols) == MIN_COLUMNS
    weeks = timeline_columns({"2026-W52": {"a": 1}, "2027-W02": {"a": 1}}, WEEK, 26)
    assert [label for label, _ in weeks][-4:] == [
        "2026-W52", "2026-W53", "2027-W01", "2027-W02",
    ]  # 2026 has 53 ISO weeks  # fmt: skip
    assert len(timeline_columns({"2020-01-01": {}, "2026-01-01": {"a": 1}}, DAY, 30)) == 30
