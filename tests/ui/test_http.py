"""The viewer's HTTP surface: sign-in, Host and Origin checks, CSRF, escaping, pages, writes."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from sealmem.client.paths import local_author, store_path
from sealmem.client.recall.api import MemoryStore
from sealmem.client.ui.app import allowed_hosts, create_app
from sealmem.client.ui.guard import CSP, MAX_FORM_BYTES, Secrets, cookie_name

from .conftest import Seeded, refresh_target

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"
ORIGIN = {"origin": BASE}


def _client(seeded: Seeded, secrets: Secrets) -> TestClient:
    app = create_app(seeded.home, secrets, allowed_hosts(PORT))
    return TestClient(app, base_url=BASE, follow_redirects=False)


@pytest.fixture
def secrets() -> Secrets:
    return Secrets()


@pytest.fixture
def client(seeded: Seeded, secrets: Secrets) -> TestClient:
    """Signed in: the token exchanged for the cookie."""
    c = _client(seeded, secrets)
    assert c.get(f"/?token={secrets.token}").status_code == 200
    return c


def _store(seeded: Seeded) -> MemoryStore:
    return MemoryStore.open(store_path(seeded.home), author=local_author(seeded.home))


def test_without_the_token_nothing_is_shown(seeded: Seeded, secrets: Secrets) -> None:
    c = _client(seeded, secrets)
    for path in ("/", f"/m/{seeded.new}", "/timeline", "/team", "/store", "/captured", "/review"):
        res = c.get(path)
        assert res.status_code == 401, path
        assert "Orders" not in res.text
    assert c.get("/?token=wrong").status_code == 401
    c.cookies.set(cookie_name(allowed_hosts(PORT)), secrets.token)
    assert c.get("/").status_code == 401  # the token is no cookie


def test_the_token_becomes_an_httponly_cookie_and_leaves_the_url(
    seeded: Seeded, secrets: Secrets
) -> None:
    c = _client(seeded, secrets)
    res = c.get(f"/timeline?project=webapp&token={secrets.token}")
    assert res.status_code == 200
    assert refresh_target(res.text) == "/timeline?project=webapp"
    cookie = res.headers["set-cookie"]
    assert cookie.startswith(f"{cookie_name(allowed_hosts(PORT))}={secrets.session};")
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert secrets.token not in cookie
    assert c.get("/timeline?project=webapp").status_code == 200


def test_the_token_redirect_never_leaves_the_viewer(seeded: Seeded, secrets: Secrets) -> None:
    """A request line ``GET //evil.example/x?token=...`` must not redirect to ``//evil.example``."""
    import asyncio

    app = create_app(seeded.home, secrets, allowed_hosts(PORT))
    sent: list[dict[str, object]] = []
    scope = {
        "type": "http",
        "method": "GET",
        "path": "//evil.example/x",
        "query_string": f"token={secrets.token}".encode(),
        "headers": [(b"host", f"127.0.0.1:{PORT}".encode())],
    }

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))  # type: ignore[arg-type]
    start, body = sent
    assert start["status"] == 200
    assert refresh_target(body["body"].decode()) == "/evil.example/x"  # type: ignore[attr-defined]


def test_a_foreign_host_is_refused_even_with_the_cookie(client: TestClient) -> None:
    """DNS rebinding: a page on evil.example resolved to 127.0.0.1 sends its own Host."""
    for host in ("evil.example", f"evil.example:{PORT}", "127.0.0.1:1", "localhost"):
        res = client.get("/", headers={"host": host})
        assert res.status_code == 421, host
        assert "Orders" not in res.text
    assert client.get("/", headers={"host": f"localhost:{PORT}"}).status_code == 200


def test_every_response_carries_the_security_headers(client: TestClient, seeded: Seeded) -> None:
    paths = ["/", "/?q=postgres", f"/m/{seeded.new}", "/timeline", "/store", "/nope"]
    responses = [client.get(p) for p in paths]
    responses.append(client.get("/", headers={"host": "evil.example"}))
    responses.append(client.get("/static/app.css"))
    for res in responses:
        assert res.headers["content-security-policy"] == CSP
        assert res.headers["x-content-type-options"] == "nosniff"
        assert res.headers["referrer-policy"] == "same-origin"
        assert res.headers["x-frame-options"] == "DENY"
    assert "'unsafe-inline'" not in CSP
    assert "frame-ancestors 'none'" in CSP


def test_pages_have_no_inline_script_or_style(client: TestClient, seeded: Seeded) -> None:
    for path in ("/", "/?q=postgres", f"/m/{seeded.new}", "/timeline", "/team", "/store"):
        html = client.get(path).text
        assert not re.search(r"<script(?![^>]*\bsrc=)", html), path
        assert "<style" not in html
        assert not re.search(r'\sstyle="', html), path
        assert not re.search(r"\son[a-z]+=", html.replace("onerror=alert(1)&gt;", "")), path


def test_writes_need_this_origin_and_the_csrf_token(
    client: TestClient, secrets: Secrets, seeded: Seeded
) -> None:
    form = {"content": "planted by another site", "csrf": secrets.csrf}
    assert client.post("/remember", data=form).status_code == 403  # no Origin
    evil = {"origin": "http://evil.example"}
    assert client.post("/remember", data=form, headers=evil).status_code == 403
    assert client.post("/remember", data={"content": "x"}, headers=ORIGIN).status_code == 403
    wrong = {"content": "x", "csrf": secrets.session}
    assert client.post("/remember", data=wrong, headers=ORIGIN).status_code == 403
    with _store(seeded) as store:
        assert not store.recall("planted", all_projects=True)
    res = client.post("/remember", data=form, headers=ORIGIN)
    assert res.status_code == 303
    with _store(seeded) as store:
        hits = store.recall("planted", all_projects=True)
        assert [h.memory.record.origin for h in hits] == ["ui"]
        assert res.headers["location"] == f"/m/{hits[0].memory.id}"


def test_a_write_without_the_cookie_is_refused(seeded: Seeded, secrets: Secrets) -> None:
    c = _client(seeded, secrets)
    form = {"content": "no session", "csrf": secrets.csrf}
    assert c.post("/remember", data=form, headers=ORIGIN).status_code == 401


def test_an_oversized_form_is_refused(client: TestClient, secrets: Secrets) -> None:
    body = {"content": "x" * (MAX_FORM_BYTES + 10), "csrf": secrets.csrf}
    assert client.post("/remember", data=body, headers=ORIGIN).status_code == 413


def test_hostile_text_is_escaped_and_hidden_characters_shown(
    client: TestClient, seeded: Seeded
) -> None:
    pages = [
        client.get("/").text,
        client.get("/?q=alert").text,
        client.get(f"/m/{seeded.hostile}").text,
        client.get("/timeline").text,
    ]
    for html in pages:
        assert "&lt;script&gt;" in html
        assert "<script>alert" not in html
        assert "<img src=x" not in html
        assert "\u202e" not in html
        assert "\x1b" not in html
        assert "\\u202e" in html
        assert "\\x1b[31m" in html


def test_a_hostile_refusal_detail_is_escaped_on_the_team_page(
    client: TestClient, seeded: Seeded
) -> None:
    from sealmem.client.sync import replica

    with _store(seeded) as store:
        replica.log_refusal(
            store.connection, 1_700_000_000_000, "bad-signature", "<b>m</b>", "<svg onload=x>\u202e"
        )
        store.connection.commit()
    html = client.get("/team").text
    assert "&lt;svg onload=x&gt;\\u202e" in html
    assert "<svg onload" not in html
    assert "&lt;b&gt;m&lt;/b&gt;" in html
    assert "not in a team" in html


def test_search_shows_the_why_and_marks_the_superseded(client: TestClient, seeded: Seeded) -> None:
    html = client.get("/?q=orders+postgresql").text
    assert "why:" in html
    assert "bm25" in html or "text" in html
    assert f'href="/m/{seeded.new}"' in html
    assert "superseded by" in html


def test_the_memory_page_links_both_ways_and_shows_authorship(
    client: TestClient, seeded: Seeded
) -> None:
    new = client.get(f"/m/{seeded.new}").text
    assert f'class="predecessor" href="/m/{seeded.old}"' in new
    assert "Orders live in PostgreSQL 16 since the upgrade" in new
    assert "by you" in new
    old = client.get(f"/m/{seeded.old[-12:]}").text  # a short id works too
    assert f'class="successor" href="/m/{seeded.new}"' in old
    assert "superseded" in old
    assert client.get("/m/ffffffffffff").status_code == 404
    assert client.get("/m/%3Cscript%3E").status_code in (400, 404)


def test_timeline_store_and_captured_pages(client: TestClient, seeded: Seeded) -> None:
    timeline = client.get("/timeline?project=webapp").text
    assert "<svg" in timeline
    assert "memories per week, by writer" in timeline
    assert "Orders live in PostgreSQL 16" in timeline
    store = client.get("/store").text
    assert "doctor" in store
    assert "integrity" in store
    captured = client.get("/captured").text
    assert "Run the migrations before the deploy" in captured


@pytest.mark.slow
def test_forget_importance_correct_through_the_page_forms(
    client: TestClient, secrets: Secrets, seeded: Seeded
) -> None:
    def post(path: str, **form: str) -> str:
        res = client.post(path, data={**form, "csrf": secrets.csrf}, headers=ORIGIN)
        assert res.status_code == 303, res.text
        return res.headers["location"]

    assert post("/importance", id=seeded.new, importance="0.9") == f"/m/{seeded.new}"
    refused = client.post(
        "/importance",
        data={"id": seeded.new, "importance": "7", "csrf": secrets.csrf},
        headers=ORIGIN,
    )
    assert refused.status_code == 400
    assert "importance" in refused.text
    where = post("/correct", id=seeded.new, content="Orders live in PostgreSQL 17")
    assert where != f"/m/{seeded.new}"
    no_reason = client.post(
        "/forget", data={"id": seeded.hostile, "reason": " ", "csrf": secrets.csrf}, headers=ORIGIN
    )
    assert no_reason.status_code == 400
    post("/forget", id=seeded.hostile, reason="planted text")
    with _store(seeded) as store:
        assert store.get(seeded.new).record.importance == 0.9
        newest = store.get(where.removeprefix("/m/"))
        assert newest.record.supersedes == (seeded.new,)
        assert store.get(seeded.hostile).deleted
        assert store.get(seeded.hostile).record.delete_reason == "planted text"


def test_captured_memories_are_accepted_or_discarded(
    client: TestClient, secrets: Secrets, seeded: Seeded
) -> None:
    form = {"id": seeded.new, "csrf": secrets.csrf}
    refused = client.post("/captured/accept", data=form, headers=ORIGIN)
    assert refused.status_code == 400
    assert "not captured by a hook or stored by an agent" in refused.text
    page = client.get("/captured").text
    assert seeded.captured[-12:] in page
    assert '<span class="source">hook-captured</span>' in page  # who wrote it, beside the writer
    assert '<dd class="source">hook</dd>' in client.get(f"/m/{seeded.captured}").text
    assert '<dd class="source">person</dd>' in client.get(f"/m/{seeded.new}").text
    ok = client.post(
        "/captured/accept", data={"id": seeded.captured, "csrf": secrets.csrf}, headers=ORIGIN
    )
    assert ok.status_code == 303
    with _store(seeded) as store:
        assert store.get(seeded.captured).record.visibility == "team"
    assert "nothing waiting" in client.get("/captured").text


@pytest.mark.slow
def test_the_forms_on_the_pages_carry_the_csrf_token(
    client: TestClient, secrets: Secrets, seeded: Seeded
) -> None:
    """What a browser posts is what the page holds: scrape the form, post it back."""
    html = client.get(f"/m/{seeded.new}").text
    forms = re.findall(r'<form method="post" action="([^"]+)"', html)
    assert set(forms) >= {"/importance", "/correct", "/forget"}
    tokens = re.findall(r'name="csrf" value="([^"]*)"', html)
    assert len(tokens) == len(forms)
    assert set(tokens) == {secrets.csrf}
    form = {"csrf": tokens[0], "id": seeded.new, "importance": "0.7"}
    assert client.post("/importance", data=form, headers=ORIGIN).status_code == 303
    for path in ("/", "/captured"):
        page = client.get(path).text
        assert set(re.findall(r'name="csrf" value="([^"]*)"', page)) == {secrets.csrf}, path


def test_a_damaged_store_is_one_sentence_not_a_traceback(
    client: TestClient, seeded: Seeded
) -> None:
    db = store_path(seeded.home)
    for extra in (db.with_name("store.db-wal"), db.with_name("store.db-shm")):
        extra.unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    res = client.get("/")
    assert res.status_code in (400, 503)
    assert "Traceback" not in res.text
    assert "sealmem" in res.text
    assert "refused" in res.text


def test_search_says_nothing_close_and_labels_related(client: TestClient, seeded: Seeded) -> None:
    html = client.get("/?q=kubernetes+ingress").text
    assert "nothing close to “kubernetes ingress”" in html
    with MemoryStore.open(store_path(seeded.home), author=local_author(seeded.home)) as store:
        store.remember("which queue carries the order events?", project="webapp", origin="cli:a")
        store.remember("RabbitMQ with quorum replicas", project="webapp", origin="cli:a")
    html = client.get("/?q=queue+order+events&project=webapp").text
    assert html.count('class="related"') == 1
    assert html.index("which queue carries") < html.index('class="related"')


def test_search_labels_a_related_near_duplicate_and_a_query_of_common_words(
    client: TestClient, seeded: Seeded
) -> None:
    """A near-duplicate under a related leader is labelled related too; a query of
    stop words alone says so rather than that no memory shares a word."""
    html = client.get("/?q=what+is+the").text
    assert "nothing close to “what is the”: it has only common words" in html
    assert "shares a word" not in html
    with MemoryStore.open(store_path(seeded.home), author=local_author(seeded.home)) as store:
        for text in (
            "which queue carries the order events?",
            "RabbitMQ with quorum replicas carries them, three nodes",
            "RabbitMQ with quorum replicas on three nodes",
        ):
            store.remember(text, project="webapp", origin="cli:a")
    html = client.get("/?q=queue+order+events&project=webapp").text
    assert html.count('class="related"') == 2
    duplicates = html[html.index('class="duplicates"') :]
    assert duplicates.index('class="related"') < duplicates.index("on three nodes")
